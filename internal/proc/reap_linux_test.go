package proc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
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
	killed, err := Reap([]Identity{p.Identity()}, nil)
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
	killed, err := Reap([]Identity{reused, unknown}, nil)
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
	killed, err := Reap([]Identity{p.Identity()}, nil)
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
	killed, err := Reap([]Identity{recorded}, nil)
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
	killed, err := Reap([]Identity{member}, nil)
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
	killed, err := Reap([]Identity{self, {Pid: -1, Pgid: -1, StartTime: 1}, {Pid: 0, Pgid: 1, StartTime: 1}}, nil)
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

func init() { helpers["reapancestor"] = helpReapAncestor }

// startForSession starts script under sh with Start, for session, to be
// torn down when the test ends.
func startForSession(t *testing.T, session, script string) *Process {
	t.Helper()
	p, err := Start("sh", []string{"-c", script}, os.Environ(), t.TempDir(), &Options{StdinGrace: time.Millisecond, Session: session})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Terminate() })
	return p
}

// Scripts' processes print their pid once they run the shell that stays:
// a process in the middle of exec(2) shows no environment for a moment.
// Each keeps a sleep as its child (": " keeps the shell from becoming it).
const (
	// stay is a shell that prints its pid and stays.
	stay = `sh -c 'echo $$; sleep 1000; :'`
	// stayCleared is stay with an empty environment.
	stayCleared = `env -i ` + stay
)

func TestStartPutsTheSessionInTheEnvironment(t *testing.T) {
	p := startForSession(t, "s-1", `echo "$`+SessionEnv+`"`)
	if line, err := bufio.NewReader(p.Stdout()).ReadString('\n'); line != "s-1\n" {
		t.Fatalf("%s is %q (%v), want s-1", SessionEnv, line, err)
	}
	if _, err := Start("true", nil, os.Environ(), t.TempDir(), &Options{Session: "s\x00"}); err == nil || !strings.Contains(err.Error(), "NUL") {
		t.Fatalf("Start with a session id holding NUL: %v, want an error naming the NUL byte", err)
	}
}

// TestReapKillsWhatCarriesTheSession records nothing: the processes
// started for the session, one of them a daemon outside the child's
// group (setsid), are killed by the session's id in their environment,
// with their groups; a process of another session is left alone.
func TestReapKillsWhatCarriesTheSession(t *testing.T) {
	p := startForSession(t, "s-1", `setsid `+stay+` & wait`)
	daemon := readPid(t, bufio.NewReader(p.Stdout()))
	if daemon.Pgid == p.Pid() {
		t.Fatalf("the daemon %d is in the child's group", daemon.Pid)
	}
	other := startForSession(t, "s-2", "sleep 1000")

	killed, err := Reap(nil, &ReapOptions{Session: "s-1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []Identity{p.Identity(), daemon} {
		if !slices.Contains(killed, want) {
			t.Errorf("killed %v, lacks %v", killed, want)
		}
	}
	if slices.ContainsFunc(killed, func(id Identity) bool { return id.Pgid == other.Pid() }) {
		t.Errorf("killed %v, a process of session s-2 (group %d) among them", killed, other.Pid())
	}
	awaitExited(t, p)
	if !waitExit(t, daemon, 10*time.Second) {
		t.Errorf("the daemon %d survived", daemon.Pid)
	}
	if !alive(other.Identity()) {
		t.Errorf("the process of session s-2 (%d) was killed", other.Pid())
	}
}

// TestReapKillsARecordedGroupWhoseLeaderIsGone records only the child,
// the leader of its group, which exited; of the members left in its
// group, never recorded, one carries the session's id and one cleared its
// environment. The group is still the one the first is in, so Reap kills
// it whole.
func TestReapKillsARecordedGroupWhoseLeaderIsGone(t *testing.T) {
	p := startForSession(t, "s-1", stay+` & `+stayCleared+` &`)
	out := bufio.NewReader(p.Stdout())
	first, second := readPid(t, out), readPid(t, out)
	awaitExited(t, p)
	for _, m := range []Identity{first, second} {
		if m.Pgid != p.Pid() {
			t.Fatalf("member %v is not in group %d", m, p.Pid())
		}
	}

	killed, err := Reap([]Identity{p.Identity()}, &ReapOptions{Session: "s-1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []Identity{first, second} {
		if !slices.Contains(killed, want) {
			t.Errorf("killed %v, lacks member %v", killed, want)
		}
		if !waitExit(t, want, 10*time.Second) {
			t.Errorf("member %d survived", want.Pid)
		}
	}
}

// TestReapSparesALeaderlessGroupWithoutTheSession: a recorded group whose
// leader is gone, none of whose members is the session's (neither
// recorded nor carrying its id), may be another group under a reused id
// by now: Reap leaves it alone.
func TestReapSparesALeaderlessGroupWithoutTheSession(t *testing.T) {
	p := startForSession(t, "s-1", stay+` & `+stayCleared+` &`)
	out := bufio.NewReader(p.Stdout())
	first, second := readPid(t, out), readPid(t, out)
	awaitExited(t, p)

	killed, err := Reap([]Identity{p.Identity()}, &ReapOptions{Session: "s-2"})
	if err != nil || len(killed) != 0 {
		t.Fatalf("Reap = %v, %v; want nothing killed", killed, err)
	}
	for _, m := range []Identity{first, second} {
		if !alive(m) {
			t.Errorf("member %d was killed", m.Pid)
		}
	}
}

// helpReapAncestor starts itself again carrying a session's id, and
// that process starts itself once more, in a group of its own, to reap
// that session: the process it descends from, which carries the id too,
// must survive, and so must the reaper itself.
func helpReapAncestor() error {
	const session, roleEnv = "s-ancestor", "MCPLIFE_PROC_TEST_ROLE"
	again := func(role string, extra ...string) error {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), append(extra, helperEnv+"=reapancestor", roleEnv+"="+role)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		return cmd.Run()
	}
	switch os.Getenv(roleEnv) {
	case "":
		if err := again("ancestor", SessionEnv+"="+session); err != nil {
			return fmt.Errorf("ancestor: %w", err)
		}
		fmt.Println("ok")
	case "ancestor":
		if err := again("reaper"); err != nil {
			return fmt.Errorf("reaper: %w", err)
		}
	case "reaper":
		killed, err := Reap(nil, &ReapOptions{Session: session})
		if err != nil || len(killed) != 0 {
			return fmt.Errorf("Reap = %v, %v; want nothing killed", killed, err)
		}
	}
	return nil
}

// TestReapSparesItsAncestors runs helpReapAncestor: a host started from a
// process of an abandoned session keeps the processes it descends from.
func TestReapSparesItsAncestors(t *testing.T) {
	helper, _, out := startHelper(t, "reapancestor")
	line, _ := out.ReadString('\n')
	if err := helper.Wait(); err != nil || line != "ok\n" {
		t.Fatalf("helper: %v: %q", err, line)
	}
}
