package proc

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// TestAwaitExitWaitsForTheExit checks that awaitExit returns only once the
// child has exited, leaving it to be reaped.
func TestAwaitExitWaitsForTheExit(t *testing.T) {
	cmd := exec.Command("cat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		awaitExit(cmd.Process.Pid)
		close(done)
	}()
	stdin.Close()
	<-done
	if _, state, ok := procGroup(cmd.Process.Pid); !ok || state != 'Z' {
		t.Errorf("after awaitExit the child is in state %q, want an unreaped zombie", state)
	}
	cmd.Wait()
}

// TestAwaitExitOfAnExitedChild checks that awaitExit returns for a child
// that exited before the wait began.
func TestAwaitExitOfAnExitedChild(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	// waitid(P_PID, pid, WEXITED|WNOWAIT): wait for the exit, leaving
	// the zombie to be reaped.
	var info [128]byte
	if _, _, errno := syscall.Syscall6(syscall.SYS_WAITID, 1, uintptr(cmd.Process.Pid), uintptr(unsafe.Pointer(&info)), syscall.WEXITED|0x01000000, 0, 0); errno != 0 {
		t.Fatal(errno)
	}
	done := make(chan struct{})
	go func() {
		awaitExit(cmd.Process.Pid)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("awaitExit did not return for an exited child in 10 s")
	}
}
