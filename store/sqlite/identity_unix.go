//go:build unix

package sqlite

import (
	"fmt"
	"os"
	"syscall"
)

// fileKey returns what tells the file at path from a copy of it: its
// device and inode ("" when they cannot be read).
func fileKey(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d:%d", uint64(st.Dev), uint64(st.Ino))
}
