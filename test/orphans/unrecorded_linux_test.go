package orphans

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/internal/proc"
	"github.com/mcplife/mcplife/store/sqlite"
)

// The tests of this file kill a host at moments when it has not recorded
// every process its servers run: right after a server connected (before
// the first look at its descendants), right after a config edit added a
// server, and after a server started a daemon between two looks. Every
// process those servers start carries a mark of the test's own in its
// environment (through the server's configured env), so a process that
// survives is found whether or not anything recorded it.

// lingeringWrapper is the args of an "sh" server command that runs the
// rest of its arguments as a child and stays (as npx and uvx do), so the
// recorded server process is the shell, and the real server is a child
// the host has not recorded until its first look. The real server's
// stderr goes to /dev/null: a fixture that lingers after its stdin
// closed says so on stderr, and a write to the killed host's pipe would
// end it (SIGPIPE) instead.
func lingeringWrapper(cmd string, args ...string) []string {
	return append([]string{"-c", `"$@" 2>/dev/null; true`, "sh", cmd}, args...)
}

// runningHost is one mcp-audit run (long-running mode) whose output the
// test reads line by line.
type runningHost struct {
	t      *testing.T
	cmd    *exec.Cmd
	exited chan struct{}
	lines  chan string // stdout lines; closed at EOF

	mu  sync.Mutex
	out strings.Builder
}

// startRunning starts mcp-audit with args (and extra environment
// entries), and returns at once.
func startRunning(t *testing.T, dir string, env []string, args ...string) *runningHost {
	t.Helper()
	h := &runningHost{t: t, exited: make(chan struct{}), lines: make(chan string, 1024)}
	h.cmd = command(t, dir, args...)
	h.cmd.Env = append(h.cmd.Env, env...)
	h.cmd.Stderr = writerFunc(h.record)
	// A pipe of the test's own, not StdoutPipe, which Wait would close
	// under the reader.
	stdout, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	h.cmd.Stdout = w
	err = h.cmd.Start()
	w.Close()
	if err != nil {
		stdout.Close()
		t.Fatal(err)
	}
	go func() {
		defer close(h.lines)
		defer stdout.Close()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.record([]byte(sc.Text() + "\n"))
			select {
			case h.lines <- sc.Text():
			default: // nobody asks for the later lines
			}
		}
	}()
	go func() {
		h.cmd.Wait()
		close(h.exited)
	}()
	t.Cleanup(func() {
		h.cmd.Process.Kill()
		<-h.exited
	})
	return h
}

func (h *runningHost) record(b []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.out.Write(b)
}

func (h *runningHost) output() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.out.String()
}

// session reads the output up to its first line, which names the
// session, and returns the session id.
func (h *runningHost) session() string {
	h.t.Helper()
	for line := range h.lines {
		if id, ok := strings.CutPrefix(line, "session "); ok {
			id, _, _ = strings.Cut(id, " ")
			return id
		}
	}
	h.t.Fatalf("mcp-audit named no session\n%s", h.output())
	return ""
}

// awaitLine reads the output up to a line that starts with prefix.
func (h *runningHost) awaitLine(prefix string) {
	h.t.Helper()
	limit := time.NewTimer(startLimit)
	defer limit.Stop()
	for {
		select {
		case line, ok := <-h.lines:
			if !ok {
				h.t.Fatalf("mcp-audit ended before a line %q\n%s", prefix, h.output())
			}
			if strings.HasPrefix(line, prefix) {
				return
			}
		case <-limit.C:
			h.t.Fatalf("no line %q after %s\n%s", prefix, startLimit, h.output())
		}
	}
}

// kill kills the host with SIGKILL and waits until it has exited.
func (h *runningHost) kill() {
	h.t.Helper()
	h.cmd.Process.Kill()
	select {
	case <-h.exited:
	case <-time.After(exitLimit):
		h.t.Fatalf("mcp-audit still runs %s after SIGKILL", exitLimit)
	}
}

// newMark returns a fresh value for MCPLIFE_TEST_MARK, and kills the
// processes that carry it when the test ends.
func newMark(t *testing.T) string {
	mark := rand.Text()
	t.Cleanup(func() {
		for _, p := range marked(mark) {
			syscall.Kill(p.Pid, syscall.SIGKILL)
		}
	})
	return mark
}

// marked returns the live processes whose environment holds
// MCPLIFE_TEST_MARK=mark.
func marked(mark string) []events.ProcessRef {
	entries, _ := os.ReadDir("/proc")
	var out []events.ProcessRef
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !proc.Running(pid) {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !slices.Contains(strings.Split(string(env), "\x00"), "MCPLIFE_TEST_MARK="+mark) {
			continue
		}
		if id, ok := proc.IdentityOf(pid); ok {
			out = append(out, events.ProcessRef{Pid: pid, StartTime: id.StartTime})
		}
	}
	return out
}

// awaitNoneMarked waits up to deathLimit for the processes carrying mark
// to be gone, and returns those left.
func awaitNoneMarked(mark string) []events.ProcessRef {
	deadline := time.Now().Add(deathLimit)
	for {
		left := marked(mark)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(pollEvery)
	}
}

// describe names the processes for a failure message: pid and command
// line.
func describe(procs []events.ProcessRef) string {
	var b strings.Builder
	for _, p := range procs {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(p.Pid) + "/cmdline")
		b.WriteString("\n  " + strconv.Itoa(p.Pid) + ": " + strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))))
	}
	return b.String()
}

// onlySession returns the id of the one session the store at path holds.
func onlySession(t *testing.T, path string) string {
	t.Helper()
	db, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ids []string
	for env, err := range db.ReadAll(t.Context(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		if env.Type == events.TypeSessionStarted {
			ids = append(ids, env.Stream)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("the store holds sessions %v, want one", ids)
	}
	return ids[0]
}

// plainConfig writes the config of the next host: one fixture server
// (run --once fails without a server connected).
func plainConfig(t *testing.T, dir string) string {
	t.Helper()
	cmd, args := fixturetest.Command(t, "only=echo")
	return writeJSON(t, filepath.Join(dir, "next.json"), map[string]any{"mcpServers": map[string]any{
		"next": map[string]any{"command": cmd, "args": args},
	}})
}

// reapByNextRun runs mcp-audit run --once on the store with one server,
// as the next host, and checks that it marked session abandoned, that
// nothing carrying mark survived it, and what the abandoned session
// recorded of its processes before its host was killed.
func reapByNextRun(t *testing.T, dir, db, session, mark string) {
	t.Helper()
	if len(marked(mark)) == 0 {
		t.Fatal("nothing of the killed host's servers survived it: nothing left to reap")
	}
	var connected, seen int
	for _, ev := range sessionEvents(t, db, session) {
		switch ev.(type) {
		case *events.ServerConnected:
			connected++
		case *events.ProcessesSeen:
			seen++
		case *events.SessionClosed:
			t.Fatal("a killed host recorded SessionClosed")
		}
	}
	t.Logf("the killed host recorded %d ServerConnected and %d ProcessesSeen; %d processes of its servers survived it:%s", connected, seen, len(marked(mark)), describe(marked(mark)))

	out, err := command(t, dir, "--db", db, "--json", "run", "--once", "--cwd", dir, "--config", plainConfig(t, dir)).CombinedOutput()
	if err != nil {
		t.Fatalf("next run: %v\n%s", err, out)
	}
	if left := awaitNoneMarked(mark); len(left) > 0 {
		t.Errorf("after the next run, %d processes of the killed host's servers survive:%s", len(left), describe(left))
	}
	evs := sessionEvents(t, db, session)
	if !slices.ContainsFunc(evs, func(ev events.Event) bool { _, ok := ev.(*events.SessionAbandoned); return ok }) {
		t.Errorf("the killed host's session was not marked abandoned\n%s", out)
	}
	if r, ok := evs[len(evs)-1].(*events.OrphansReaped); ok {
		t.Logf("OrphansReaped %v", r.Pids)
	}
}

// TestHostKilledRightAfterConnectLeavesNothing: the server runs behind an
// sh wrapper and outlives its stdin; the host is killed as soon as the
// server answered initialize, while its first tools/list is held, so
// before the host looked for the server's descendants. The next host
// still finds and kills the real server (and the child it started): they
// carry the session's id.
func TestHostKilledRightAfterConnectLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "events.db")
	mark := newMark(t)
	listing := fixturetest.NewGate(t)
	fcmd, fargs := fixturetest.Command(t, "only=echo", "linger-on-eof", "spawn-child", listing.Arg("block-list-until"))
	cfg := writeJSON(t, filepath.Join(dir, "servers.json"), map[string]any{"mcpServers": map[string]any{
		"wrapped": map[string]any{"command": "sh", "args": lingeringWrapper(fcmd, fargs...), "env": map[string]string{"MCPLIFE_TEST_MARK": mark}},
	}})
	h := startRunning(t, dir, nil, "--db", db, "run", "--gate", "1m", "--cwd", dir, "--config", cfg)
	if err := listing.WaitReached(t.Context(), 1); err != nil {
		t.Fatalf("the server never got tools/list: %v\n%s", err, h.output())
	}
	h.kill()
	session := onlySession(t, db)
	reapByNextRun(t, dir, db, session, mark)
}

// TestHostKilledRightAfterConnectLeavesNothingOfAServerThatClearedItsEnvironment:
// as TestHostKilledRightAfterConnectLeavesNothing, for a wrapper that
// starts the real server with a cleared environment (env -i), so neither
// it nor its child carries the session's id, and the host recorded
// neither: they were born into the server's group while it connected, so
// the next host kills them with the group.
func TestHostKilledRightAfterConnectLeavesNothingOfAServerThatClearedItsEnvironment(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "events.db")
	mark := newMark(t)
	fcmd, fargs := fixturetest.Command(t, "only=echo", "linger-on-eof", "spawn-child")
	wrapper := append([]string{"-c", `env -i PATH="$PATH" MCPLIFE_TEST_MARK="$MCPLIFE_TEST_MARK" "$@" 2>/dev/null; true`, "sh", fcmd}, fargs...)
	cfg := writeJSON(t, filepath.Join(dir, "servers.json"), map[string]any{"mcpServers": map[string]any{
		"cleared": map[string]any{"command": "sh", "args": wrapper, "env": map[string]string{"MCPLIFE_TEST_MARK": mark}},
	}})
	h := startRunning(t, dir, nil, "--db", db, "run", "--gate", "1m", "--cwd", dir, "--config", cfg)
	session := h.session()
	// The group is known from ServerConnected: the kill comes once it is
	// stored (and, but for a slow machine, before the host's first look
	// at the server's descendants).
	deadline := time.Now().Add(startLimit)
	for !slices.ContainsFunc(sessionEvents(t, db, session), func(ev events.Event) bool { _, ok := ev.(*events.ServerConnected); return ok }) {
		if time.Now().After(deadline) {
			t.Fatalf("no ServerConnected stored after %s\n%s", startLimit, h.output())
		}
		time.Sleep(pollEvery)
	}
	h.kill()
	reapByNextRun(t, dir, db, session, mark)
}

// TestHostKilledRightAfterAReloadAddedAServerLeavesNothing: as
// TestHostKilledRightAfterConnectLeavesNothing, for a server that a
// config edit added while the host ran.
func TestHostKilledRightAfterAReloadAddedAServerLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "events.db")
	mark := newMark(t)
	env := map[string]string{"MCPLIFE_TEST_MARK": mark}
	first, firstArgs := fixturetest.Command(t, "only=echo")
	servers := map[string]any{"first": map[string]any{"command": first, "args": firstArgs, "env": env}}
	cfg := writeJSON(t, filepath.Join(dir, "servers.json"), map[string]any{"mcpServers": servers})
	h := startRunning(t, dir, nil, "--db", db, "run", "--gate", "1m", "--cwd", dir, "--config", cfg)
	session := h.session()
	h.awaitLine("watching for")

	listing := fixturetest.NewGate(t)
	fcmd, fargs := fixturetest.Command(t, "only=echo", "linger-on-eof", "spawn-child", listing.Arg("block-list-until"))
	servers["added"] = map[string]any{"command": "sh", "args": lingeringWrapper(fcmd, fargs...), "env": env}
	writeJSON(t, cfg+".tmp", map[string]any{"mcpServers": servers})
	if err := os.Rename(cfg+".tmp", cfg); err != nil {
		t.Fatal(err)
	}
	if err := listing.WaitReached(t.Context(), 1); err != nil {
		t.Fatalf("the added server never got tools/list: %v\n%s", err, h.output())
	}
	h.kill()
	reapByNextRun(t, dir, db, session, mark)
}

// daemonScript starts, in the background, a sub-shell that waits for a
// line on the FIFO $dir/go and then double-forks a daemon (setsid; the
// sub-shell exits at once) that writes its pid to the FIFO $dir/daemon;
// then it becomes the server.
const daemonScript = `
dir=$1; shift
( read x <"$dir/go"; setsid sh -c 'echo $$ >"$1"; exec sleep 1000' sh "$dir/daemon" & ) &
exec "$@"`

// TestDaemonStartedAfterTheLastLookIsReaped: a server that daemonises
// after the host recorded its processes, between two health checks: the
// host is killed before it looked again, and the next host kills the
// daemon, which carries the session's id.
func TestDaemonStartedAfterTheLastLookIsReaped(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "events.db")
	mark := newMark(t)
	for _, f := range []string{"go", "daemon"} {
		if err := syscall.Mkfifo(filepath.Join(dir, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fcmd, fargs := fixturetest.Command(t, "only=echo")
	cfg := writeJSON(t, filepath.Join(dir, "servers.json"), map[string]any{"mcpServers": map[string]any{
		"daemonising": map[string]any{"command": "sh", "args": append([]string{"-c", daemonScript, "sh", dir, fcmd}, fargs...), "env": map[string]string{"MCPLIFE_TEST_MARK": mark}},
	}})
	h := startRunning(t, dir, nil, "--db", db, "run", "--gate", "1m", "--cwd", dir, "--config", cfg)
	session := h.session()
	h.awaitLine("watching for")
	// The host's first look recorded the waiting sub-shell.
	deadline := time.Now().Add(startLimit)
	for !slices.ContainsFunc(sessionEvents(t, db, session), func(ev events.Event) bool { _, ok := ev.(*events.ProcessesSeen); return ok }) {
		if time.Now().After(deadline) {
			t.Fatalf("no ProcessesSeen after %s\n%s", startLimit, h.output())
		}
		time.Sleep(pollEvery)
	}

	// Start the daemon and wait until it runs.
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "daemon"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("daemon pid %q: %v", b, err)
	}
	daemon, ok := proc.IdentityOf(pid)
	if !ok {
		t.Fatalf("the daemon %d is gone", pid)
	}
	for _, ev := range sessionEvents(t, db, session) {
		if seen, ok := ev.(*events.ProcessesSeen); ok && slices.Contains(seen.Pids, events.ProcessRef{Pid: daemon.Pid, StartTime: daemon.StartTime}) {
			t.Logf("the host recorded the daemon before it was killed: %+v", seen)
		}
	}
	h.kill()
	reapByNextRun(t, dir, db, session, mark)
	if alive(events.ProcessRef{Pid: daemon.Pid, StartTime: daemon.StartTime}) {
		t.Errorf("the daemon %d survived the next run", daemon.Pid)
	}
}

// TestAnotherPidNamespaceLeavesALiveSessionAlone: a host started in a PID
// namespace of its own (as in another container of the machine, with the
// same host name and user) on the same store does not take the running
// session of a host outside it for abandoned, whose pid it cannot look
// up, whether the host ids are the default or set alike by MCPLIFE_HOST.
func TestAnotherPidNamespaceLeavesALiveSessionAlone(t *testing.T) {
	if out, err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "true").CombinedOutput(); err != nil {
		t.Skipf("unshare --pid --fork --mount-proc is not permitted here: %v: %s", err, out)
	}
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"default host id", nil},
		{"same MCPLIFE_HOST", []string{"MCPLIFE_HOST=h-same"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "events.db")
			mark := newMark(t)
			fcmd, fargs := fixturetest.Command(t, "only=echo", "spawn-child")
			cfg := writeJSON(t, filepath.Join(dir, "servers.json"), map[string]any{"mcpServers": map[string]any{
				"srv": map[string]any{"command": fcmd, "args": fargs, "env": map[string]string{"MCPLIFE_TEST_MARK": mark}},
			}})
			b := startRunning(t, dir, tc.env, "--db", db, "run", "--gate", "1m", "--cwd", dir, "--config", cfg)
			session := b.session()
			b.awaitLine("watching for")
			before := marked(mark)

			a := command(t, dir, "--db", db, "--json", "run", "--once", "--cwd", dir, "--config", plainConfig(t, dir))
			a.Args = append([]string{"unshare", "--pid", "--fork", "--mount-proc"}, a.Args...)
			a.Path, _ = exec.LookPath("unshare")
			a.Env = append(a.Env, tc.env...)
			out, err := a.CombinedOutput()
			if err != nil {
				t.Fatalf("mcp-audit in a PID namespace of its own: %v\n%s", err, out)
			}
			var got struct{ Session string }
			if err := json.Unmarshal(out, &got); err != nil || got.Session == "" {
				t.Fatalf("its output %q: %v", out, err)
			}

			for _, ev := range sessionEvents(t, db, session) {
				switch ev.(type) {
				case *events.SessionAbandoned, *events.OrphansReaped:
					t.Errorf("the running session was taken for abandoned: %T %+v\n%s", ev, ev, out)
				}
			}
			select {
			case <-b.exited:
				t.Fatalf("the running host ended\n%s", b.output())
			default:
			}
			if left := marked(mark); len(left) != len(before) {
				t.Errorf("the running session's processes were %v, are %v", before, left)
			}
		})
	}
}
