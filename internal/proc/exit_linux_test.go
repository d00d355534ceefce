package proc

import (
	"os/exec"
	"testing"
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
