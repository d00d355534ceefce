//go:build unix

package shared

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// Listen listens on the socket path for a shared host: its directory
// 0700, the socket 0600. Under an exclusive lock on shared.lock beside
// it, it checks the socket: a live shared host there ends Listen with
// [ErrRunning]; a socket that refuses connections (its shared host died)
// is removed and replaced. So of two shared hosts started at once one
// listens and the other finds it running.
func Listen(path string) (net.Listener, error) {
	if _, err := peerCheckSupported(); err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if err := prepareDir(dir); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "shared.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("shared: lock: %w", err)
	}
	defer lock.Close() // releases the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("shared: lock: %w", err)
	}
	if alive(path) {
		return nil, ErrRunning
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("shared: remove stale socket: %w", err)
	}
	// The directory is 0700, so the socket is never reachable by
	// another user before its mode is set.
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("shared: listen: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("shared: socket mode: %w", err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(true)
	return &peerListener{Listener: l, uid: os.Getuid()}, nil
}

// ownerOf returns the uid that owns a file.
func ownerOf(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
