package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

func init() { helpers["subreaper"] = helpSubreaper }

// isSubreaper reports whether this process is a child subreaper.
func isSubreaper() (bool, error) {
	var v int32
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetChildSubreaper, uintptr(unsafe.Pointer(&v)), 0); errno != 0 {
		return false, errno
	}
	return v != 0, nil
}

// orphan starts script with Start, reads the pid it writes, waits for the
// script to exit, and returns the identity of the process it left behind,
// which a subreaper has adopted by then.
func orphan(script string) (Identity, error) {
	p, err := Start("sh", []string{"-c", script}, os.Environ(), os.TempDir(), &Options{StdinGrace: time.Millisecond})
	if err != nil {
		return Identity{}, err
	}
	line, err := bufio.NewReader(p.Stdout()).ReadString('\n')
	if err != nil {
		return Identity{}, fmt.Errorf("read pid: %w", err)
	}
	// Not torn down: teardown would kill the orphan in the script's
	// group. The script has exited; its pipes go with this process.
	<-p.Exited()
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return Identity{}, err
	}
	id, ok := IdentityOf(pid)
	if !ok {
		return Identity{}, fmt.Errorf("orphan %d is gone", pid)
	}
	return id, nil
}

// killAndWait kills id and waits until it is a zombie.
func killAndWait(id Identity) error {
	if err := syscall.Kill(id.Pid, syscall.SIGKILL); err != nil {
		return err
	}
	return exitedWithin(id, 10*time.Second)
}

// helpSubreaper becomes a subreaper and checks that ReapAdopted waits for
// the orphans it adopts and for no child that os/exec waits for.
func helpSubreaper() error {
	if err := BecomeSubreaper(); err != nil {
		return err
	}
	if ok, err := isSubreaper(); err != nil || !ok {
		return fmt.Errorf("not a subreaper after BecomeSubreaper (%v)", err)
	}
	self := os.Getpid()

	// Children of os/exec elsewhere: one in this process's group, one
	// leading its own, both exited and not yet waited for.
	var others []*exec.Cmd
	for _, leader := range []bool{false, true} {
		c := exec.Command("sleep", "1000")
		if leader {
			c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // as KillGroupOnCancel does
		}
		if err := c.Start(); err != nil {
			return err
		}
		others = append(others, c)
		if err := killAndWait(Identity{Pid: c.Process.Pid, StartTime: processStart(c.Process.Pid)}); err != nil {
			return fmt.Errorf("os/exec child: %w", err)
		}
	}

	// Orphans: one left in the server's group, one in a session of its own.
	var orphans []Identity
	for _, script := range []string{
		"sleep 1000 </dev/null >/dev/null 2>&1 & echo $!",
		"setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $!",
	} {
		o, err := orphan(script)
		if err != nil {
			return err
		}
		if st, _ := readProcStat(o.Pid); st.ppid != self {
			return fmt.Errorf("orphan %d of %q has parent %d, want this process %d", o.Pid, script, st.ppid, self)
		}
		if err := killAndWait(o); err != nil {
			return fmt.Errorf("orphan: %w", err)
		}
		orphans = append(orphans, o)
	}

	reaped := ReapAdopted()
	want := []int{orphans[0].Pid, orphans[1].Pid}
	slices.Sort(want)
	if !slices.Equal(reaped, want) {
		return fmt.Errorf("ReapAdopted reaped %v, want the orphans %v", reaped, want)
	}
	for _, o := range orphans {
		if _, ok := readProcStat(o.Pid); ok {
			return fmt.Errorf("orphan %d is still in /proc after ReapAdopted", o.Pid)
		}
	}
	for _, c := range others {
		err := c.Wait()
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return fmt.Errorf("os/exec child %d: Wait returned %v, want its exit status", c.Process.Pid, err)
		}
		if ws := exit.Sys().(syscall.WaitStatus); ws.Signal() != syscall.SIGKILL {
			return fmt.Errorf("os/exec child %d: status %v, want killed", c.Process.Pid, ws)
		}
	}

	// On SIGCHLD.
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan []int, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ReapAdoptedOnSIGCHLD(ctx, func(pids []int) { got <- pids })
	}()
	defer func() {
		cancel()
		<-done
	}()
	o, err := orphan("sleep 1000 </dev/null >/dev/null 2>&1 & echo $!")
	if err != nil {
		return err
	}
	syscall.Kill(o.Pid, syscall.SIGKILL)
	select {
	case pids := <-got:
		if !slices.Equal(pids, []int{o.Pid}) {
			return fmt.Errorf("ReapAdoptedOnSIGCHLD reaped %v, want [%d]", pids, o.Pid)
		}
	case <-time.After(10 * time.Second):
		return fmt.Errorf("ReapAdoptedOnSIGCHLD did not reap orphan %d in 10 s", o.Pid)
	}
	fmt.Println("ok")
	return nil
}

// processStart returns the start time of pid, or 0.
func processStart(pid int) uint64 {
	st, _ := readProcStat(pid)
	return st.start
}

// TestSubreaperReapsAdoptedOrphansOnly runs helpSubreaper in a process of
// its own, since a subreaper stays one.
func TestSubreaperReapsAdoptedOrphansOnly(t *testing.T) {
	helper, _, out := startHelper(t, "subreaper")
	line, _ := out.ReadString('\n')
	if err := helper.Wait(); err != nil || strings.TrimSpace(line) != "ok" {
		t.Fatalf("helper: %v: %s", err, line)
	}
}
