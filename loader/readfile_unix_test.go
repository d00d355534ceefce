//go:build unix

package loader

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// mkfifo makes a named pipe at path. A reader that opens it blocking
// waits for a writer forever; the cleanup opens the writing end once, so
// such a reader is released when the test ends (after it has failed).
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			f.Close()
		} else if !errors.Is(err, syscall.ENXIO) { // ENXIO: no reader waits
			t.Logf("release %s: %v", path, err)
		}
	})
}

func symlink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// Named pipes and devices are refused, whether named directly or through a
// symlink, and never block discovery. /dev/zero would never end and
// /dev/null reads as an empty file: both are refused for what they are.
func TestRefusesPipesAndDevices(t *testing.T) {
	for _, dev := range []string{"/dev/zero", "/dev/null"} {
		if fi, err := os.Stat(dev); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
			t.Skipf("%s is not a character device here", dev)
		}
	}
	testRefusedFiles(t, []refusedFile{
		{
			name: "fifo",
			make: func(t *testing.T, path string) string { mkfifo(t, path); return path },
			why:  "not a regular file (named pipe)",
		},
		{
			name: "symlink-to-fifo",
			make: func(t *testing.T, path string) string {
				fifo := filepath.Join(t.TempDir(), "stdin-like")
				mkfifo(t, fifo)
				symlink(t, fifo, path)
				return fifo
			},
			why: "not a regular file (named pipe)",
		},
		{
			name: "symlink-to-dev-zero",
			make: func(t *testing.T, path string) string { symlink(t, "/dev/zero", path); return "" },
			why:  "not a regular file (character device)",
		},
		{
			name: "symlink-to-dev-null",
			make: func(t *testing.T, path string) string { symlink(t, "/dev/null", path); return "" },
			why:  "not a regular file (character device)",
		},
	})
}

// An extra config named on the command line gets the same checks.
func TestExtraConfigMustBeRegular(t *testing.T) {
	w := newWorld(t)
	fifo := filepath.Join(t.TempDir(), "servers.json")
	mkfifo(t, fifo)
	d := w.loadWithin(func(o *Options) { o.ExtraConfigs = []string{fifo} })
	want := []FileError{{fifo, fifo + ": not a regular file (named pipe)"}}
	if len(d.Errors) != 1 || d.Errors[0] != want[0] {
		t.Errorf("errors = %+v, want %+v", d.Errors, want)
	}
}
