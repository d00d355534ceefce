//go:build unix

package loader

import (
	"os"
	"syscall"
)

// openConfigFile opens path for reading without blocking: O_NONBLOCK makes
// opening a named pipe return at once instead of waiting for a writer, and
// O_NOCTTY keeps a terminal from becoming the controlling one. The caller
// reads only after its Stat shows a regular file, where O_NONBLOCK changes
// nothing.
func openConfigFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
}
