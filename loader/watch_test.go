package loader

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The watcher tests synchronise on the Changes channel only. A test that
// something is not reported makes a real change after it and checks that
// the first change delivered names only that one.

// forEachWatcherBackend runs fn once for each way a Watcher notices
// changes: the system's notifications (where fsnotify has them) and
// polling. The returned options log into a buffer that must stay empty:
// a warning would mean the notify run fell back to polling.
func forEachWatcherBackend(t *testing.T, fn func(t *testing.T, opts WatcherOptions)) {
	t.Run("notify", func(t *testing.T) {
		switch runtime.GOOS {
		case "linux", "darwin", "windows", "freebsd", "openbsd", "netbsd", "dragonfly", "solaris", "illumos":
		default:
			t.Skip("no file notifications on this system: the watcher polls")
		}
		fn(t, WatcherOptions{Debounce: 50 * time.Millisecond})
	})
	t.Run("poll", func(t *testing.T) {
		fn(t, WatcherOptions{Debounce: 50 * time.Millisecond, Poll: true, PollInterval: 5 * time.Millisecond})
	})
}

// watchTest is a running Watcher and the test that waits on it.
type watchTest struct {
	t *testing.T
	w *Watcher
}

// startWatcher starts a watcher on paths, closed when the test ends; it
// fails the test if the watcher logged anything.
func startWatcher(t *testing.T, paths []string, opts WatcherOptions) *watchTest {
	t.Helper()
	var mu sync.Mutex
	var logs bytes.Buffer
	opts.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	w, err := NewWatcher(paths, &opts)
	if err != nil {
		t.Fatalf("NewWatcher: %v", err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if logs.Len() > 0 {
			t.Errorf("watcher logged:\n%s", logs.String())
		}
	})
	return &watchTest{t: t, w: w}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// expect waits for the next change and checks that it names exactly
// paths.
func (wt *watchTest) expect(paths ...string) {
	wt.t.Helper()
	select {
	case got, ok := <-wt.w.Changes():
		if !ok {
			wt.t.Fatalf("Changes closed, want %q", paths)
		}
		slices.Sort(paths)
		if diff := cmp.Diff(paths, got); diff != "" {
			wt.t.Fatalf("change mismatch (-want +got):\n%s", diff)
		}
	case <-time.After(10 * time.Second):
		wt.t.Fatalf("no change within 10s, want %q", paths)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdirAll(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestWatcherEditInPlace(t *testing.T) {
	forEachWatcherBackend(t, func(t *testing.T, opts WatcherOptions) {
		dir := t.TempDir()
		a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
		writeFile(t, a, `{}`)
		wt := startWatcher(t, []string{a, b}, opts)

		writeFile(t, a, `{"mcpServers": {}}`) // truncate and write
		wt.expect(a)

		f, err := os.OpenFile(a, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("\n"); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		wt.expect(a)
	})
}

func TestWatcherAtomicRenameOver(t *testing.T) {
	forEachWatcherBackend(t, func(t *testing.T, opts WatcherOptions) {
		dir := t.TempDir()
		a := filepath.Join(dir, "a.json")
		writeFile(t, a, `{}`)
		wt := startWatcher(t, []string{a}, opts)

		// Write a temporary file and rename it over (VS Code, most tools).
		tmp := filepath.Join(dir, ".a.json.tmp123")
		writeFile(t, tmp, `{"mcpServers": {"x": {"command": "x"}}}`)
		if err := os.Rename(tmp, a); err != nil {
			t.Fatal(err)
		}
		wt.expect(a)

		// Move the old file aside, write a new one, delete the backup
		// (vim's backupcopy=no).
		backup := a + "~"
		if err := os.Rename(a, backup); err != nil {
			t.Fatal(err)
		}
		writeFile(t, a, `{"mcpServers": {"y": {"command": "y"}}}`)
		if err := os.Remove(backup); err != nil {
			t.Fatal(err)
		}
		wt.expect(a)
	})
}

func TestWatcherCreate(t *testing.T) {
	forEachWatcherBackend(t, func(t *testing.T, opts WatcherOptions) {
		dir := t.TempDir()
		a := filepath.Join(dir, "a.json")
		wt := startWatcher(t, []string{a}, opts)
		writeFile(t, a, `{}`)
		wt.expect(a)
	})
}

// A path whose directories do not exist yet is seen once they and the
// file are created, and edits after that too (its own directory is
// watched then).
func TestWatcherCreateInMissingDirectory(t *testing.T) {
	forEachWatcherBackend(t, func(t *testing.T, opts WatcherOptions) {
		root := t.TempDir()
		a := filepath.Join(root, "home", ".config", "mcplife", "mcp.json")
		wt := startWatcher(t, []string{a}, opts)

		mkdirAll(t, filepath.Dir(a))
		writeFile(t, a, `{}`)
		wt.expect(a)

		writeFile(t, a, `{"mcpServers": {}}`)
		wt.expect(a)
	})
}

func TestWatcherDelete(t *testing.T) {
	forEachWatcherBackend(t, func(t *testing.T, opts WatcherOptions) {
		dir := t.TempDir()
		a := filepath.Join(dir, "a.json")
		writeFile(t, a, `{}`)
		wt := startWatcher(t, []string{a}, opts)
		if err := os.Remove(a); err != nil {
			t.Fatal(err)
		}
		wt.expect(a)
	})
}

// Deleting a watched file's directory is a change; so is creating the
// file again in a new directory of the same name.
func TestWatcherDirectoryRemovedAndRecreated(t *testing.T) {
	forEachWatcherBackend(t, func(t *testing.T, opts WatcherOptions) {
		root := t.TempDir()
		dir := filepath.Join(root, ".cursor")
		a := filepath.Join(dir, "mcp.json")
		mkdirAll(t, dir)
		writeFile(t, a, `{}`)
		wt := startWatcher(t, []string{a}, opts)

		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		wt.expect(a)

		mkdirAll(t, dir)
		writeFile(t, a, `{"mcpServers": {}}`)
		wt.expect(a)

		writeFile(t, a, `{}`)
		wt.expect(a)
	})
}

// A burst of writes, renames and mode changes is one change: the next
// change delivered is a later one. (The debounce is longer than the
// default here so that a loaded test machine that pauses the writer
// mid-burst does not split it.)
func TestWatcherBurstIsOneChange(t *testing.T) {
	forEachWatcherBackend(t, func(t *testing.T, opts WatcherOptions) {
		opts.Debounce = 3 * DefaultDebounce
		dir := t.TempDir()
		a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
		writeFile(t, a, `{}`)
		wt := startWatcher(t, []string{a, b}, opts)

		for i := range 20 {
			writeFile(t, a, strings.Repeat(" ", i)+`{}`)
		}
		tmp := a + ".tmp"
		writeFile(t, tmp, `{"mcpServers": {}}`)
		if err := os.Rename(tmp, a); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(a, 0o600); err != nil {
			t.Fatal(err)
		}
		wt.expect(a)

		writeFile(t, b, `{}`)
		wt.expect(b)
	})
}

func TestWatcherIgnoresUnrelatedFiles(t *testing.T) {
	forEachWatcherBackend(t, func(t *testing.T, opts WatcherOptions) {
		root := t.TempDir()
		a := filepath.Join(root, "a.json")
		// Awaited through root: its directory does not exist yet.
		deep := filepath.Join(root, "missing", "b.json")
		// The barrier, in a directory of its own.
		barrier := filepath.Join(t.TempDir(), "c.json")
		writeFile(t, a, `{}`)
		wt := startWatcher(t, []string{a, deep, barrier}, opts)

		writeFile(t, filepath.Join(root, "other.json"), `{}`)
		writeFile(t, filepath.Join(root, "a.json.bak"), `{}`)
		writeFile(t, filepath.Join(root, "b.json"), `{}`) // b.json, but not in missing/
		mkdirAll(t, filepath.Join(root, "missing-not"))
		writeFile(t, filepath.Join(root, "missing-not", "b.json"), `{}`)
		if err := os.Remove(filepath.Join(root, "other.json")); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(root, "a.json.bak"), 0o600); err != nil {
			t.Fatal(err)
		}

		writeFile(t, barrier, `{}`)
		wt.expect(barrier)
		writeFile(t, a, `{"mcpServers": {}}`) // still watched
		wt.expect(a)
	})
}

// A watched path that is a symbolic link (a config kept in a dotfiles
// repository) reports edits of the file it points to, under its own name.
func TestWatcherFollowsSymlink(t *testing.T) {
	forEachWatcherBackend(t, func(t *testing.T, opts WatcherOptions) {
		root := t.TempDir()
		real := filepath.Join(root, "dotfiles", "claude.json")
		link := filepath.Join(root, "home", ".claude.json")
		mkdirAll(t, filepath.Dir(real))
		mkdirAll(t, filepath.Dir(link))
		writeFile(t, real, `{}`)
		if err := os.Symlink(real, link); err != nil {
			t.Skipf("symlink: %v", err)
		}
		wt := startWatcher(t, []string{link}, opts)

		writeFile(t, real, `{"mcpServers": {}}`)
		wt.expect(link)
	})
}

func TestWatcherCloseEndsChanges(t *testing.T) {
	forEachWatcherBackend(t, func(t *testing.T, opts WatcherOptions) {
		dir := t.TempDir()
		a := filepath.Join(dir, "a.json")
		w, err := NewWatcher([]string{a}, &opts)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, a, `{}`) // possibly pending when Close is called

		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i := range errs {
			wg.Go(func() { errs[i] = w.Close() })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Errorf("Close: %v", err)
			}
		}
		if err := w.Close(); err != nil {
			t.Errorf("Close again: %v", err)
		}
		timeout := time.After(10 * time.Second)
		for {
			select {
			case _, ok := <-w.Changes():
				if !ok {
					return
				}
			case <-timeout:
				t.Fatal("Changes not closed 10s after Close")
			}
		}
	})
}

func TestNewWatcherOptions(t *testing.T) {
	if _, err := NewWatcher([]string{"a.json", ""}, nil); err == nil || !strings.Contains(err.Error(), "empty path") {
		t.Errorf("empty path: err = %v", err)
	}
	if _, err := NewWatcher(nil, &WatcherOptions{Debounce: -1, PollInterval: -1}); err == nil ||
		!strings.Contains(err.Error(), "Debounce") || !strings.Contains(err.Error(), "PollInterval") {
		t.Errorf("negative durations: err = %v", err)
	}
	w, err := NewWatcher(nil, nil)
	if err != nil {
		t.Fatalf("no paths: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, ok := <-w.Changes(); ok {
		t.Error("Changes delivered a change for no paths")
	}
}

// A relative path is watched as the absolute path it names, and reported
// so.
func TestWatcherRelativePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	wt := startWatcher(t, []string{"mcp.json"}, WatcherOptions{Debounce: 10 * time.Millisecond, Poll: true, PollInterval: 5 * time.Millisecond})
	writeFile(t, "mcp.json", `{}`)
	abs, err := filepath.Abs("mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	wt.expect(abs)
}
