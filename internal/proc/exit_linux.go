package proc

import (
	"os"
	"syscall"
)

// sysPidfdOpen is pidfd_open(2), the same number on every architecture.
const sysPidfdOpen = 434

// awaitExit waits until the child pid has exited (without reaping it),
// parked in the network poller on a pidfd, so no thread is blocked. It
// returns at once when the kernel lacks pidfd support (before 5.10); the
// caller's wait then blocks as usual.
func awaitExit(pid int) {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), uintptr(syscall.O_NONBLOCK), 0)
	if errno != 0 {
		return
	}
	f := os.NewFile(fd, "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	// A pidfd becomes readable when the process exits. The first call
	// asks the poller to wait; the second reports the exit.
	waited := false
	rc.Read(func(uintptr) bool {
		done := waited
		waited = true
		return done
	})
}
