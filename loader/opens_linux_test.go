package loader

import (
	"encoding/binary"
	"errors"
	"syscall"
	"testing"
)

// watchOpens reports how often path has been opened since the call, by
// any process, through inotify. Opens are queued during the open system
// call itself, so a count taken after a call returns includes every open
// that call made. It returns nil when path is "".
func watchOpens(t *testing.T, path string) func() int {
	t.Helper()
	if path == "" {
		return nil
	}
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if _, err := syscall.InotifyAddWatch(fd, path, syscall.IN_OPEN); err != nil {
		t.Fatalf("inotify watch %s: %v", path, err)
	}
	opens := 0
	return func() int {
		buf := make([]byte, 64*syscall.SizeofInotifyEvent)
		for {
			n, err := syscall.Read(fd, buf)
			if errors.Is(err, syscall.EAGAIN) {
				return opens
			}
			if err != nil {
				t.Fatalf("inotify read: %v", err)
			}
			for off := 0; off+syscall.SizeofInotifyEvent <= n; {
				// struct inotify_event: wd, mask, cookie, len, name[len].
				mask := binary.NativeEndian.Uint32(buf[off+4:])
				nameLen := binary.NativeEndian.Uint32(buf[off+12:])
				if mask&syscall.IN_OPEN != 0 {
					opens++
				}
				off += syscall.SizeofInotifyEvent + int(nameLen)
			}
		}
	}
}
