package proc

import (
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"
	"time"
)

func init() { helpers["pdeathsig"] = helpStartAndHang }

// helpStartAndHang starts a child with Start, writes its pid and waits
// for stdin to close, which it never sees when it is killed first.
func helpStartAndHang() error {
	p, err := Start("sleep", []string{"1000"}, os.Environ(), os.TempDir(), nil)
	if err != nil {
		return err
	}
	fmt.Println(p.Pid())
	io.Copy(io.Discard, os.Stdin)
	return p.Terminate()
}

// TestChildDiesWithTheHost kills a process that started a child with
// Start by SIGKILL, which leaves it no teardown, and checks that the
// child dies with it.
func TestChildDiesWithTheHost(t *testing.T) {
	host, _, out := startHelper(t, "pdeathsig")
	child := readPid(t, out)
	if !alive(child) {
		t.Fatalf("child %d is not running while its host runs", child.Pid)
	}
	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	host.Wait()
	if !waitExit(t, child, 10*time.Second) {
		t.Fatalf("child %d still runs 10 s after its host was killed", child.Pid)
	}
}

// TestStartSetsTheParentDeathSignal checks the attributes Start gives the
// child: its own process group, and SIGKILL when the host dies.
func TestStartSetsTheParentDeathSignal(t *testing.T) {
	p, err := Start("sleep", []string{"1000"}, os.Environ(), t.TempDir(), &Options{StdinGrace: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Terminate()
	attr := p.cmd.SysProcAttr
	if attr == nil || !attr.Setpgid || attr.Pdeathsig != syscall.SIGKILL {
		t.Fatalf("SysProcAttr %+v, want Setpgid and Pdeathsig SIGKILL", attr)
	}
}
