package proc

import (
	"os"
	"syscall"
	"unsafe"
)

// sysPidfdOpen is pidfd_open(2), the same number on every architecture.
const sysPidfdOpen = 434

// awaitExit waits until the child pid has exited (without reaping it),
// parked in the network poller on a pidfd, so no thread is blocked. It
// returns at once when the kernel lacks pidfd support (before 5.10); the
// caller's wait then blocks as usual.
func awaitExit(pid int) {
	f, err := openPidfd(pid)
	if err != nil {
		return
	}
	defer f.Close()
	awaitPidfd(f)
}

// openPidfd returns a pidfd of pid, in the network poller. It holds pid:
// as long as it is open the pid is not reused.
func openPidfd(pid int) (*os.File, error) {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), uintptr(syscall.O_NONBLOCK), 0)
	if errno != 0 {
		return nil, os.NewSyscallError("pidfd_open", errno)
	}
	return os.NewFile(fd, "pidfd"), nil
}

// awaitPidfd waits until the process of the pidfd f has exited (it may
// stay a zombie), or until the read deadline of f passes, which it
// returns as an error.
func awaitPidfd(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	// A pidfd becomes readable when its process exits. The readiness is
	// looked at on every call, since the poller forgets a readiness it
	// reported before the wait began.
	return rc.Read(pidfdExited)
}

// pidfdExited reports whether the process of the pidfd fd has exited,
// without blocking; also when the kernel cannot tell, so that no caller
// waits forever.
func pidfdExited(fd uintptr) bool {
	pfd := struct {
		fd      int32
		events  int16
		revents int16
	}{fd: int32(fd), events: 0x1} // POLLIN
	var zero syscall.Timespec
	for {
		n, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
		switch errno {
		case 0:
			return n > 0
		case syscall.EINTR:
			continue
		default:
			return true
		}
	}
}
