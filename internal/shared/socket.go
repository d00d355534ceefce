package shared

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/mcplife/mcplife/internal/paths"
)

// SocketName is the socket's file name in its directory.
const SocketName = "shared.sock"

// ErrRunning is returned by [Listen] when a live shared host already
// listens on the socket.
var ErrRunning = errors.New("shared host already running")

// ErrUnsupported is returned where the peer of a socket cannot be
// identified: sharing is off there.
var ErrUnsupported = errors.New("shared servers are not supported on this platform: the peer of a local socket cannot be identified")

// DefaultSocket returns where the user's shared host listens:
// $XDG_RUNTIME_DIR/mcplife/shared.sock when XDG_RUNTIME_DIR is an absolute
// path, else run/shared.sock in the state directory.
func DefaultSocket() (string, error) {
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		return filepath.Join(x, "mcplife", SocketName), nil
	}
	dir, err := paths.StateDir()
	if err != nil {
		return "", fmt.Errorf("shared: no socket directory: %w", err)
	}
	return filepath.Join(dir, "run", SocketName), nil
}

// prepareDir creates the socket's directory 0700, or checks an existing
// one: it must be a directory of this user that no one else can enter.
func prepareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("shared: socket directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("shared: socket directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("shared: socket directory %s is not a directory", dir)
	}
	if uid, ok := ownerOf(fi); ok && uid != os.Getuid() {
		return fmt.Errorf("shared: socket directory %s belongs to uid %d, not to this user", dir, uid)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("shared: socket directory: %w", err)
		}
	}
	return nil
}

// alive reports whether something accepts connections on the socket path.
func alive(path string) bool {
	c, err := net.Dial("unix", path)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Alive reports whether a shared host listens on the socket path.
func Alive(path string) bool { return alive(path) }
