//go:build unix

package journal

import (
	"errors"
	"os"
	"syscall"
)

// canLock: spool files are locked (flock), so a journal tells the files
// of live journals from those a journal that ended left behind.
const canLock = true

// lockFile takes an exclusive lock on f, held until f is closed or the
// process ends; false means another open file holds it.
func lockFile(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}
