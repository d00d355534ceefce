package proc

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"unsafe"
)

// prctl(2) options, the same on every architecture.
const (
	prSetChildSubreaper = 36
	prGetChildSubreaper = 37 // read by the tests
)

// pPIDFD is the idtype of waitid(2) that names a process by a pidfd.
const pPIDFD = 3

// BecomeSubreaper makes this process the child subreaper of its
// descendants: a descendant whose parent exits is reparented to this
// process instead of to init, so a daemonising double fork cannot take
// it out of this process's tree, and [Descendants] of this process still
// lists it. Those orphans, once they exit, are this process's zombies to
// wait for: run [ReapAdoptedOnSIGCHLD], or call [ReapAdopted] from time
// to time.
//
// It returns the prctl error. Elsewhere than on Linux it does nothing
// and returns an error wrapping [errors.ErrUnsupported].
func BecomeSubreaper() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return fmt.Errorf("prctl PR_SET_CHILD_SUBREAPER: %w", errno)
	}
	return nil
}

// ReapAdopted waits for the exited children of this process that it
// adopted as a child subreaper ([BecomeSubreaper]), so that they do not
// stay zombies, and returns their pids in ascending order. It reads /proc
// once and never waits for an unnamed child (no wait for "any child"),
// so the exit status of a child someone else waits for is not taken:
//
//   - children that [Start] launched are left to their [Process];
//   - children that os/exec started elsewhere in this process are told
//     apart by their process group: they run in this process's own group,
//     or lead a group of their own in this process's session (as
//     [KillGroupOnCancel] makes them), and are left alone. An adopted
//     orphan is in a group led by another process (a server's), or in
//     another session (it called setsid).
//
// So an orphan that made itself a group leader in this session by
// setpgid, as job-control shells do with their jobs, is not waited for,
// and a command started elsewhere with Setsid would be: do not start
// such commands in a subreaper. Elsewhere than on Linux it does nothing.
// It is safe to call concurrently; [Start] waits while it looks.
func ReapAdopted() []int {
	startMu.Lock()
	defer startMu.Unlock()
	self := os.Getpid()
	own, ok := readProcStat(self)
	if !ok {
		return nil
	}
	var reaped []int
	eachProc(func(pid int, st procStat, _ os.DirEntry) {
		if st.ppid != self || st.state != 'Z' || isLaunched(pid) {
			return
		}
		if st.sid == own.sid && (st.pgid == own.pgid || st.pgid == pid) {
			return // started by os/exec elsewhere in this process
		}
		if waitZombie(pid, st.start) {
			reaped = append(reaped, pid)
		}
	})
	sort.Ints(reaped)
	return reaped
}

// waitZombie waits for the exited child pid that started at start,
// without blocking. Where the kernel has pidfds it holds one while it
// checks the start time, so that a reused pid cannot be waited for.
func waitZombie(pid int, start uint64) bool {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno == syscall.ENOSYS {
		if st, ok := readProcStat(pid); !ok || st.start != start || st.state != 'Z' {
			return false
		}
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		return err == nil && got == pid
	}
	if errno != 0 {
		return false
	}
	defer syscall.Close(int(fd))
	if st, ok := readProcStat(pid); !ok || st.start != start || st.state != 'Z' {
		return false
	}
	var info [128]byte // siginfo_t
	_, _, errno = syscall.Syscall6(syscall.SYS_WAITID, pPIDFD, fd, uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOHANG, 0, 0)
	return errno == 0
}

// ReapAdoptedOnSIGCHLD calls [ReapAdopted] now and whenever a child of
// this process exits, until ctx is done, and passes what each call
// reaped, if anything, to reaped (which may be nil). It blocks; its
// caller owns the goroutine that runs it. Elsewhere than on Linux it
// only waits for ctx.
func ReapAdoptedOnSIGCHLD(ctx context.Context, reaped func(pids []int)) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGCHLD)
	defer signal.Stop(ch)
	for {
		if pids := ReapAdopted(); len(pids) > 0 && reaped != nil {
			reaped(pids)
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}
