//go:build unix

package proc

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTerminateKillsTheGroup starts a shell that leaves a background
// child behind and checks that teardown leaves no live member of the
// group.
func TestTerminateKillsTheGroup(t *testing.T) {
	p, err := Start("sh", []string{"-c", "sleep 1000 >/dev/null 2>&1 & echo $!; echo started >&2; cat >/dev/null; sleep 1000"},
		os.Environ(), t.TempDir(), &Options{StdinGrace: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(p.Stdout()).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Terminate(); err != nil {
		t.Fatalf("terminate: %v", err)
	}
	if groupAlive(p.Pid()) {
		t.Fatalf("process group %d still has live members", p.Pid())
	}
	if Running(child) {
		t.Fatalf("background child %d survived", child)
	}
	if st := p.ExitStatus(); st == nil {
		t.Fatal("no exit status after terminate")
	} else if *st != 128+int(syscall.SIGTERM) {
		t.Errorf("exit status %d, want %d (SIGTERM)", *st, 128+int(syscall.SIGTERM))
	}
	if got := p.StderrTail(); got != "started" {
		t.Fatalf("stderr %q", got)
	}
	select {
	case <-p.Exited():
	default:
		t.Fatal("Exited not closed after Terminate")
	}
}
