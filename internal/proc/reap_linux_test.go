package proc

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"
)

func init() { helpers["reapself"] = helpReapSelf }

// startSleep starts "sleep 1000" with Start, to be torn down when the
// test ends.
func startSleep(t *testing.T) *Process {
	t.Helper()
	p, err := Start("sleep", []string{"1000"}, os.Environ(), t.TempDir(), &Options{StdinGrace: time.Millisecond, TermGrace: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Terminate() })
	return p
}

// awaitExited waits for p to be reaped, for at most ten seconds.
func awaitExited(t *testing.T, p *Process) {
	t.Helper()
	select {
	case <-p.Exited():
	case <-time.After(10 * time.Second):
		t.Fatalf("process %d still runs 10 s after it was killed", p.Pid())
	}
}

func TestReapKillsTheRecordedProcess(t *testing.T) {
	p := startSleep(t)
	killed, err := Reap([]Identity{p.Identity()})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(killed, []Identity{p.Identity()}) {
		t.Fatalf("killed %v, want %v", killed, p.Identity())
	}
	awaitExited(t, p)
	if st := p.ExitStatus(); st == nil || *st != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit status %v, want %d (SIGKILL)", st, 128+int(syscall.SIGKILL))
	}
}

// TestReapLeavesAReusedPidAlone records a live process with another start
// time, as a process that reused a recorded pid would have, and with an
// unknown one: Reap must send it nothing, which its exit status shows
// when teardown ends it later by SIGTERM.
func TestReapLeavesAReusedPidAlone(t *testing.T) {
	p := startSleep(t)
	reused, unknown := p.Identity(), p.Identity()
	reused.StartTime++
	unknown.StartTime = 0
	killed, err := Reap([]Identity{reused, unknown})
	if err != nil || len(killed) != 0 {
		t.Fatalf("Reap = %v, %v; want nothing killed", killed, err)
	}
	if !alive(p.Identity()) {
		t.Fatalf("process %d is gone after Reap", p.Pid())
	}
	if err := p.Terminate(); err != nil {
		t.Fatal(err)
	}
	if st := p.ExitStatus(); st == nil || *st != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit status %v, want %d (SIGTERM from teardown, not SIGKILL from Reap)", st, 128+int(syscall.SIGTERM))
	}
}

// TestReapKillsTheGroupOfItsLeader records a server's child, the leader
// of its group, and checks that Reap kills the member it never recorded.
func TestReapKillsTheGroupOfItsLeader(t *testing.T) {
	p, err := Start("sh", []string{"-c", "sleep 1000 </dev/null >/dev/null 2>&1 & echo $!; exec sleep 1000"},
		os.Environ(), t.TempDir(), &Options{StdinGrace: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Terminate() })
	member := readPid(t, bufio.NewReader(p.Stdout()))
	killed, err := Reap([]Identity{p.Identity()})
	if err != nil {
		t.Fatal(err)
	}
	if want := sortedIDs(p.Identity(), member); !slices.Equal(killed, want) {
		t.Fatalf("killed %v, want %v", killed, want)
	}
	awaitExited(t, p)
	if !waitExit(t, member, 10*time.Second) {
		t.Fatalf("group member %d survived", member.Pid)
	}
}

// TestReapKillsTheGroupOfALeaderlessMember records one process of a group
// whose leader exited: the group still stands for the same processes, so
// Reap kills the member it never recorded too.
func TestReapKillsTheGroupOfALeaderlessMember(t *testing.T) {
	p, err := Start("sh", []string{"-c", "for i in 1 2; do sleep 1000 </dev/null >/dev/null 2>&1 & echo $!; done"},
		os.Environ(), t.TempDir(), &Options{StdinGrace: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Terminate() })
	out := bufio.NewReader(p.Stdout())
	recorded, other := readPid(t, out), readPid(t, out)
	awaitExited(t, p)
	if recorded.Pgid != p.Pid() || other.Pgid != p.Pid() {
		t.Fatalf("members %v, %v are not in group %d", recorded, other, p.Pid())
	}
	killed, err := Reap([]Identity{recorded})
	if err != nil {
		t.Fatal(err)
	}
	if want := sortedIDs(recorded, other); !slices.Equal(killed, want) {
		t.Fatalf("killed %v, want %v", killed, want)
	}
	for _, id := range killed {
		if !waitExit(t, id, 10*time.Second) {
			t.Fatalf("group member %d survived", id.Pid)
		}
	}
}

// TestReapSparesAGroupLedByAnother records a process that runs in a group
// whose leader runs and was not recorded: only the recorded process is
// killed.
func TestReapSparesAGroupLedByAnother(t *testing.T) {
	p, err := Start("sh", []string{"-c", "sleep 1000 </dev/null >/dev/null 2>&1 & echo $!; exec sleep 1000"},
		os.Environ(), t.TempDir(), &Options{StdinGrace: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Terminate() })
	member := readPid(t, bufio.NewReader(p.Stdout()))
	killed, err := Reap([]Identity{member})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(killed, []Identity{member}) {
		t.Fatalf("killed %v, want only %v", killed, member)
	}
	if !waitExit(t, member, 10*time.Second) {
		t.Fatalf("recorded process %d survived", member.Pid)
	}
	if !alive(p.Identity()) {
		t.Fatalf("group leader %d was killed", p.Pid())
	}
}

// helpReapSelf asks Reap to kill this process, its group and impossible
// pids, and reports that it survived.
func helpReapSelf() error {
	self, ok := IdentityOf(os.Getpid())
	if !ok {
		return fmt.Errorf("no identity of this process")
	}
	killed, err := Reap([]Identity{self, {Pid: -1, Pgid: -1, StartTime: 1}, {Pid: 0, Pgid: 1, StartTime: 1}})
	if err != nil || len(killed) != 0 {
		return fmt.Errorf("Reap = %v, %v; want nothing killed", killed, err)
	}
	fmt.Println("ok")
	return nil
}

// TestReapSparesItself runs helpReapSelf in a process of its own, which a
// failure kills.
func TestReapSparesItself(t *testing.T) {
	helper, _, out := startHelper(t, "reapself")
	line, _ := out.ReadString('\n')
	if err := helper.Wait(); err != nil || line != "ok\n" {
		t.Fatalf("helper: %v: %q", err, line)
	}
}

// sortedIDs returns ids by ascending pid.
func sortedIDs(ids ...Identity) []Identity {
	slices.SortFunc(ids, func(a, b Identity) int { return a.Pid - b.Pid })
	return ids
}
