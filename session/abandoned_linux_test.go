package session_test

import (
	"bufio"
	"context"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/proc"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/session"
	"github.com/mcplife/mcplife/store"
)

// sleeper is a process of the test's own that a recorded session can
// name: a "sleep 1000" in a process group of its own.
type sleeper struct {
	id     proc.Identity
	exited chan struct{}
}

func startSleeper(t *testing.T) *sleeper {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	id, ok := proc.IdentityOf(cmd.Process.Pid)
	if !ok || id.StartTime == 0 {
		t.Fatalf("no identity for process %d", cmd.Process.Pid)
	}
	s := &sleeper{id: id, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-s.exited
	})
	return s
}

func (s *sleeper) ref() events.ProcessRef {
	return events.ProcessRef{Pid: s.id.Pid, StartTime: s.id.StartTime}
}

// exitedWithin reports whether the process exited within limit.
func (s *sleeper) exitedWithin(limit time.Duration) bool {
	select {
	case <-s.exited:
		return true
	case <-time.After(limit):
		return false
	}
}

// running reports whether the process still runs (it has not been waited
// for, so a killed one may show as a zombie for a moment: ask after
// exitedWithin).
func (s *sleeper) running() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// selfRef is this process as a session's host.
func selfRef(t *testing.T) events.ProcessRef {
	t.Helper()
	id, ok := proc.IdentityOf(os.Getpid())
	if !ok || id.StartTime == 0 {
		t.Skip("no start time for this process")
	}
	return events.ProcessRef{Pid: id.Pid, StartTime: id.StartTime}
}

// deadHost names a host that is gone: this process's pid with another
// start time, as a pid reused after the host was killed looks.
func deadHost(t *testing.T) *events.ProcessRef {
	h := selfRef(t)
	h.StartTime++
	return &h
}

func record(t *testing.T, j *journal.Journal, sessionID string, evs ...events.Event) {
	t.Helper()
	if _, err := j.Append(context.Background(), sessionID, evs...); err != nil {
		t.Fatal(err)
	}
}

// streamTypes returns the event types of a session's stream and its
// decoded events.
func streamEvents(t *testing.T, st store.Store, sessionID string) (types []string, evs []events.Event) {
	t.Helper()
	for env, err := range st.ReadStream(context.Background(), sessionID, 1) {
		if err != nil {
			t.Fatal(err)
		}
		ev, err := events.Decode(env)
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, env.Type)
		evs = append(evs, ev)
	}
	return types, evs
}

// TestReapAbandonedKillsOnlyWhatTheDeadHostLeft: a session whose host is
// gone and that never closed is marked abandoned, and the processes it
// recorded that still run as the same processes are killed: a server and
// a descendant it was seen to start. A pid recorded with another start
// time (now held by another process), a server whose teardown was
// recorded, and the sessions that are closed, have a live host, no host
// at all, or were recorded by another host of a fleet are left alone.
func TestReapAbandonedKillsOnlyWhatTheDeadHostLeft(t *testing.T) {
	j, st := newJournal(t)
	ctx := t.Context()
	server, child, reused, tornDown := startSleeper(t), startSleeper(t), startSleeper(t), startSleeper(t)
	bystander := startSleeper(t)

	record(t, j, "old",
		&events.SessionStarted{Cwd: "/w", Host: deadHost(t)},
		&events.ServerConnected{Server: "a", Pid: server.id.Pid, Pgid: server.id.Pgid, StartTime: server.id.StartTime},
		&events.ProcessesSeen{Server: "a", Pids: []events.ProcessRef{child.ref()}},
		// The pid of reused, recorded with another start time: it stands
		// for a process that is gone, whose pid reused now holds.
		&events.ServerConnected{Server: "b", Pid: reused.id.Pid, Pgid: reused.id.Pgid, StartTime: reused.id.StartTime + 1},
		&events.ServerConnected{Server: "c", Pid: tornDown.id.Pid, Pgid: tornDown.id.Pgid, StartTime: tornDown.id.StartTime},
		&events.Disconnected{Server: "c", Reason: events.ReasonRequested},
	)
	bystanderConnected := &events.ServerConnected{Server: "a", Pid: bystander.id.Pid, Pgid: bystander.id.Pgid, StartTime: bystander.id.StartTime}
	record(t, j, "closed", &events.SessionStarted{Host: deadHost(t)}, bystanderConnected, &events.SessionClosed{Reason: "closed"})
	live := selfRef(t)
	record(t, j, "live", &events.SessionStarted{Host: &live}, bystanderConnected)
	record(t, j, "older-version", &events.SessionStarted{}, bystanderConnected)
	// A host of a fleet sharing the store: its pid is a process there.
	elsewhere, err := journal.New(st, &journal.Options{Host: "h-elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	defer elsewhere.Close()
	record(t, elsewhere, "other-host", &events.SessionStarted{Host: deadHost(t)}, bystanderConnected)

	found, err := session.ReapAbandoned(ctx, j, "new")
	if err != nil {
		t.Fatal(err)
	}
	want := []events.ProcessRef{server.ref(), child.ref()}
	slices.SortFunc(want, func(a, b events.ProcessRef) int { return a.Pid - b.Pid })
	if len(found) != 1 || found[0].Session != "old" || found[0].Host != *deadHost(t) || !slices.Equal(found[0].Reaped, want) {
		t.Fatalf("found %+v, want session old reaping %v", found, want)
	}
	for name, p := range map[string]*sleeper{"server": server, "descendant": child} {
		if !p.exitedWithin(10 * time.Second) {
			t.Errorf("the %s of the abandoned session (pid %d) still runs", name, p.id.Pid)
		}
	}
	for name, p := range map[string]*sleeper{"process holding a reused pid": reused, "torn-down server": tornDown, "server of the other sessions": bystander} {
		if !p.running() {
			t.Errorf("the %s (pid %d) was killed", name, p.id.Pid)
		}
	}

	types, evs := streamEvents(t, st, "old")
	if n := len(types); n < 2 || types[n-2] != events.TypeSessionAbandoned || types[n-1] != events.TypeOrphansReaped {
		t.Fatalf("old's stream ends %v, want SessionAbandoned, OrphansReaped", types)
	}
	if a := evs[len(evs)-2].(*events.SessionAbandoned); *a != (events.SessionAbandoned{Session: "old", DetectedBy: "new"}) {
		t.Errorf("SessionAbandoned = %+v", a)
	}
	if r := evs[len(evs)-1].(*events.OrphansReaped); r.Session != "old" || !slices.Equal(r.Pids, want) {
		t.Errorf("OrphansReaped = %+v, want pids %v", r, want)
	}
	for _, s := range []string{"closed", "live", "older-version", "other-host"} {
		if types, _ := streamEvents(t, st, s); slices.Contains(types, events.TypeSessionAbandoned) {
			t.Errorf("session %s was marked abandoned: %v", s, types)
		}
	}

	// Marked once: a second look finds nothing.
	if again, err := session.ReapAbandoned(ctx, j, "newer"); err != nil || len(again) != 0 {
		t.Errorf("second look: %+v, %v", again, err)
	}
}

// TestReapAbandonedMarksOnceUnderConcurrentLooks: of several looks at
// once (as several hosts starting together make), one marks the session
// and records its orphans.
func TestReapAbandonedMarksOnceUnderConcurrentLooks(t *testing.T) {
	j, st := newJournal(t)
	server := startSleeper(t)
	record(t, j, "old",
		&events.SessionStarted{Host: deadHost(t)},
		&events.ServerConnected{Server: "a", Pid: server.id.Pid, Pgid: server.id.Pgid, StartTime: server.id.StartTime},
	)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var marked int
	for i := range 4 {
		wg.Go(func() {
			found, err := session.ReapAbandoned(t.Context(), j, "new-"+string(rune('a'+i)))
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			marked += len(found)
			mu.Unlock()
		})
	}
	wg.Wait()
	types, _ := streamEvents(t, st, "old")
	abandoned := 0
	for _, typ := range types {
		if typ == events.TypeSessionAbandoned {
			abandoned++
		}
	}
	if marked != 1 || abandoned != 1 {
		t.Errorf("marked by %d looks, %d SessionAbandoned: %v", marked, abandoned, types)
	}
	if !server.exitedWithin(10 * time.Second) {
		t.Error("the abandoned session's server still runs")
	}
}

// TestStartRecordsItsHostAndReapsAbandonedSessions: Start records this
// process as the session's host, and marks a session a killed host left
// open, naming itself as the detector.
func TestStartRecordsItsHostAndReapsAbandonedSessions(t *testing.T) {
	j, st := newJournal(t)
	server := startSleeper(t)
	record(t, j, "old",
		&events.SessionStarted{Host: deadHost(t)},
		&events.ServerConnected{Server: "a", Pid: server.id.Pid, Pgid: server.id.Pgid, StartTime: server.id.StartTime},
	)
	s, err := session.Start(t.Context(), j, &session.Options{Servers: []events.ServerConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	_, evs := streamEvents(t, st, s.ID())
	started, ok := evs[0].(*events.SessionStarted)
	if !ok || started.Host == nil || *started.Host != selfRef(t) {
		t.Errorf("first event %#v, want SessionStarted with host %+v", evs[0], selfRef(t))
	}
	_, old := streamEvents(t, st, "old")
	if a, ok := old[len(old)-2].(*events.SessionAbandoned); !ok || a.DetectedBy != s.ID() {
		t.Errorf("old session's events: %#v, want SessionAbandoned detected by %s", old, s.ID())
	}
	if !server.exitedWithin(10 * time.Second) {
		t.Error("the abandoned session's server still runs")
	}
}

// startTagged runs script under sh in a process group of its own,
// carrying session's id in its environment as the processes a session
// starts do (MCPLIFE_SESSION, the documented name), and returns its
// identity and the identities of the n processes it started, by the
// name each prints with its pid once it runs the shell that stays (a
// process in the middle of exec(2) shows no environment for a moment).
// The processes are killed when the test ends.
func startTagged(t *testing.T, session, script string, n int) (sh proc.Identity, started map[string]proc.Identity, exited chan struct{}) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "MCPLIFE_SESSION="+session)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	sh, ok := proc.IdentityOf(cmd.Process.Pid)
	if !ok || sh.StartTime == 0 {
		t.Fatalf("no identity for process %d", cmd.Process.Pid)
	}
	exited = make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	out := bufio.NewReader(r)
	started = map[string]proc.Identity{}
	for range n {
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("read a pid: %v (read %q)", err, line)
		}
		name, p, _ := strings.Cut(strings.TrimSpace(line), " ")
		pid, err := strconv.Atoi(p)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		id, ok := proc.IdentityOf(pid)
		if !ok {
			t.Fatalf("process %d is gone", pid)
		}
		started[name] = id
	}
	t.Cleanup(func() {
		for _, id := range append(slices.Collect(maps.Values(started)), sh) {
			if now, ok := proc.IdentityOf(id.Pid); ok && now.StartTime == id.StartTime {
				syscall.Kill(id.Pid, syscall.SIGKILL)
			}
		}
		<-exited
	})
	return sh, started, exited
}

// goneWithin reports whether the process id stands for is gone (or a
// zombie) within limit. It is not a child of the test, so it is looked
// at until then.
func goneWithin(id proc.Identity, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for {
		now, ok := proc.IdentityOf(id.Pid)
		if !ok || now.StartTime != id.StartTime || !proc.Running(id.Pid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stays returns a shell that prints name and its pid and stays, with a
// sleep as its child (": " keeps the shell from becoming it).
func stays(name string) string { return `sh -c 'echo ` + name + ` $$; sleep 1000; :'` }

// TestReapAbandonedKillsWhatCarriesItsID: the host recorded only its
// server, a shell that has exited since, and nothing of what it started
// before the host was killed: a process left in the server's group, one
// there that cleared its environment, and a daemon outside the group.
// The first and the daemon carry the session's id, so they are killed,
// and the group with them, whose leader is gone. A process carrying
// another session's id is left alone.
func TestReapAbandonedKillsWhatCarriesItsID(t *testing.T) {
	j, st := newJournal(t)
	server, started, exited := startTagged(t, "old", stays("group")+` & env -i `+stays("cleared")+` & setsid `+stays("daemon")+` &`, 3)
	<-exited
	inGroup, cleared, daemon := started["group"], started["cleared"], started["daemon"]
	if inGroup.Pgid != server.Pid || cleared.Pgid != server.Pid || daemon.Pgid == server.Pid {
		t.Fatalf("groups: %v, %v in %d, %v outside it", inGroup, cleared, server.Pid, daemon)
	}
	_, others, _ := startTagged(t, "other", stays("other"), 1)
	record(t, j, "old",
		&events.SessionStarted{Cwd: "/w", Host: deadHost(t)},
		&events.ServerConnected{Server: "a", Pid: server.Pid, Pgid: server.Pgid, StartTime: server.StartTime},
	)

	found, err := session.ReapAbandoned(t.Context(), j, "new")
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Session != "old" {
		t.Fatalf("found %+v, want session old", found)
	}
	for name, p := range map[string]proc.Identity{"process in the group": inGroup, "process that cleared its environment": cleared, "daemon": daemon} {
		ref := events.ProcessRef{Pid: p.Pid, StartTime: p.StartTime}
		if !slices.Contains(found[0].Reaped, ref) {
			t.Errorf("reaped %v, lacks the %s %v", found[0].Reaped, name, ref)
		}
		if !goneWithin(p, 10*time.Second) {
			t.Errorf("the %s (pid %d) still runs", name, p.Pid)
		}
	}
	if goneWithin(others["other"], 0) {
		t.Errorf("the process of another session (pid %d) was killed", others["other"].Pid)
	}
	_, evs := streamEvents(t, st, "old")
	if r, ok := evs[len(evs)-1].(*events.OrphansReaped); !ok || !slices.Equal(r.Pids, found[0].Reaped) {
		t.Errorf("old's stream ends with %#v, want OrphansReaped %v", evs[len(evs)-1], found[0].Reaped)
	}
}

// TestReapAbandonedSkipsAnotherPidNamespace: a session whose host ran in
// another PID namespace (another container, under the same host id) is
// not taken for abandoned, and nothing of it is killed: its host's pid
// cannot be looked up here. The same session recorded in this namespace
// is.
func TestReapAbandonedSkipsAnotherPidNamespace(t *testing.T) {
	ns := events.PidNamespace()
	if ns == 0 {
		t.Skip("the PID namespace of this process is unknown")
	}
	j, st := newJournal(t)
	elsewhere, here := startSleeper(t), startSleeper(t)
	connected := func(s *sleeper) *events.ServerConnected {
		return &events.ServerConnected{Server: "a", Pid: s.id.Pid, Pgid: s.id.Pgid, StartTime: s.id.StartTime}
	}
	record(t, j, "elsewhere", &events.SessionStarted{Host: deadHost(t), PidNamespace: ns + 1}, connected(elsewhere))
	record(t, j, "here", &events.SessionStarted{Host: deadHost(t), PidNamespace: ns}, connected(here))

	found, err := session.ReapAbandoned(t.Context(), j, "new")
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Session != "here" {
		t.Fatalf("found %+v, want only session here", found)
	}
	if !here.exitedWithin(10 * time.Second) {
		t.Error("the server of the session of this namespace still runs")
	}
	if !elsewhere.running() {
		t.Error("the server of the session of another namespace was killed")
	}
	if types, _ := streamEvents(t, st, "elsewhere"); slices.Contains(types, events.TypeSessionAbandoned) {
		t.Errorf("the session of another namespace was marked abandoned: %v", types)
	}
}

// TestStartRecordsItsPidNamespace: SessionStarted names the host's PID
// namespace beside its pid.
func TestStartRecordsItsPidNamespace(t *testing.T) {
	j, st := newJournal(t)
	s, err := session.Start(t.Context(), j, &session.Options{Servers: []events.ServerConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	_, evs := streamEvents(t, st, s.ID())
	if started, ok := evs[0].(*events.SessionStarted); !ok || started.PidNamespace != events.PidNamespace() || started.PidNamespace == 0 {
		t.Errorf("first event %#v, want SessionStarted with PID namespace %d", evs[0], events.PidNamespace())
	}
}

// TestReapAbandonedKillsWhatWasBornIntoTheServersGroup: the host recorded
// only its server, a shell that has exited since, and what it left in
// its group cleared its environment, so nothing there is recorded or
// carries the session's id: it started between the server's start and
// its connect, so it was born into the recorded group, and it is killed
// with it. The same group recorded as connected long before that process
// started is left alone: its id might name another group by then.
func TestReapAbandonedKillsWhatWasBornIntoTheServersGroup(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before uint64 // ticks the recorded start is moved back
		killed bool
	}{
		{"born during the connect", 0, true},
		{"born long after the connect", 100 * 3600, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, st := newJournal(t)
			begin := time.Now()
			server, started, exited := startTagged(t, "old", `env -i `+stays("cleared")+` &`, 1)
			connected := time.Since(begin)
			<-exited
			cleared := started["cleared"]
			if cleared.Pgid != server.Pid {
				t.Fatalf("%v is not in the group %d", cleared, server.Pid)
			}
			record(t, j, "old",
				&events.SessionStarted{Cwd: "/w", Host: deadHost(t)},
				&events.ServerConnected{Server: "a", Pid: server.Pid, Pgid: server.Pgid, StartTime: server.StartTime - min(tc.before, server.StartTime-1), Duration: connected},
			)

			found, err := session.ReapAbandoned(t.Context(), j, "new")
			if err != nil {
				t.Fatal(err)
			}
			if len(found) != 1 || found[0].Session != "old" {
				t.Fatalf("found %+v, want session old", found)
			}
			ref := events.ProcessRef{Pid: cleared.Pid, StartTime: cleared.StartTime}
			if got := slices.Contains(found[0].Reaped, ref); got != tc.killed {
				t.Errorf("reaped %v: contains %v = %v, want %v", found[0].Reaped, ref, got, tc.killed)
			}
			if tc.killed && !goneWithin(cleared, 10*time.Second) {
				t.Errorf("the process that cleared its environment (pid %d) still runs", cleared.Pid)
			}
			if !tc.killed && goneWithin(cleared, 0) {
				t.Errorf("the process born after the span (pid %d) was killed", cleared.Pid)
			}
			_, evs := streamEvents(t, st, "old")
			if _, ok := evs[len(evs)-1].(*events.OrphansReaped); !ok {
				t.Errorf("old's stream ends with %#v, want OrphansReaped", evs[len(evs)-1])
			}
		})
	}
}

// TestStartKeepAbandonedLeavesThemAlone: with KeepAbandoned, Start records
// its host as ever but neither marks an abandoned session nor kills the
// process it left running.
func TestStartKeepAbandonedLeavesThemAlone(t *testing.T) {
	j, st := newJournal(t)
	server := startSleeper(t)
	record(t, j, "old",
		&events.SessionStarted{Host: deadHost(t)},
		&events.ServerConnected{Server: "a", Pid: server.id.Pid, Pgid: server.id.Pgid, StartTime: server.id.StartTime},
	)
	s, err := session.Start(t.Context(), j, &session.Options{Servers: []events.ServerConfig{}, KeepAbandoned: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	_, evs := streamEvents(t, st, s.ID())
	if started, ok := evs[0].(*events.SessionStarted); !ok || started.Host == nil {
		t.Errorf("first event %#v, want SessionStarted with a host", evs[0])
	}
	if types, _ := streamEvents(t, st, "old"); !slices.Equal(types, []string{events.TypeSessionStarted, events.TypeServerConnected}) {
		t.Errorf("old session's events %v, want them unchanged", types)
	}
	// Start reaps before it returns, so nothing is pending: the process
	// runs now or it never will be killed by this session.
	if !server.running() {
		t.Error("the abandoned session's server was killed")
	}
	// The same store without the option reaps it, so the fixture was a
	// reapable one.
	s2, err := session.Start(t.Context(), j, &session.Options{Servers: []events.ServerConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close(context.Background())
	if !server.exitedWithin(10 * time.Second) {
		t.Error("the abandoned session's server still runs after a Start without KeepAbandoned")
	}
}
