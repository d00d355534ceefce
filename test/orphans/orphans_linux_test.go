package orphans

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/internal/proc"
	"github.com/mcplife/mcplife/store/sqlite"
)

// mcpAudit is the mcp-audit binary TestMain builds.
var mcpAudit string

func TestMain(m *testing.M) {
	fixture.RunIfChild()
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "orphans-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	mcpAudit = filepath.Join(dir, "mcp-audit")
	if out, err := exec.Command("go", "build", "-o", mcpAudit, "github.com/mcplife/mcplife/cmd/mcp-audit").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build mcp-audit: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// Limits of the waits. None is a pause: each ends as soon as what it
// waits for happened.
const (
	startLimit = time.Minute      // mcp-audit up with its servers connected and recorded
	exitLimit  = 30 * time.Second // a signalled mcp-audit has exited
	deathLimit = 10 * time.Second // a killed process is gone
	pollEvery  = 10 * time.Millisecond
)

// escapeScript starts two processes that leave the server's process
// group before the server starts (each writes its pid to a FIFO the
// script reads, so both run when the server answers initialize): one by
// setsid with a cleared environment, which stays the server's child, and
// a daemon that double-forks, which mcp-audit adopts as a subreaper. Then
// it becomes the server.
const escapeScript = `
dir=$1; shift
mkfifo "$dir/a" "$dir/b"
setsid env -i sh -c 'echo $$ >"$1"; exec sleep 1000' sh "$dir/a" &
(setsid sh -c 'echo $$ >"$1"; exec sleep 1000' sh "$dir/b" &)
read a <"$dir/a"
read b <"$dir/b"
echo "$a $b" >"$dir/escapees"
exec "$@"`

// host is one mcp-audit run (long-running mode) on two fixture servers:
// "grouped" starts a sleep in its process group; "escaping" does too, and
// starts two processes outside it (escapeScript).
type host struct {
	t   *testing.T
	dir string
	db  string
	cmd *exec.Cmd
	// session is the run's session id, from its first output line.
	session string
	// servers are the servers' processes, as ServerConnected recorded
	// them; started are the processes the servers started, as they ran;
	// recorded are the servers and the processes ProcessesSeen names.
	servers, started, recorded []events.ProcessRef
	stdout                     *os.File
	exited                     chan struct{}

	mu  sync.Mutex
	out strings.Builder // stdout after the startup lines, and stderr
}

// startHost starts mcp-audit run and returns once both servers are
// connected and their processes, and the processes those started, are
// recorded in the store: what a host killed from then on leaves behind
// is what the next host can find.
func startHost(t *testing.T) *host {
	t.Helper()
	h := &host{t: t, dir: t.TempDir(), exited: make(chan struct{})}
	h.db = filepath.Join(h.dir, "events.db")
	cmd, args := fixturetest.Command(t, "only=echo", "spawn-child="+filepath.Join(h.dir, "grouped.child"))
	ecmd, eargs := fixturetest.Command(t, "only=echo", "spawn-child="+filepath.Join(h.dir, "escaping.child"))
	cfg := writeJSON(t, filepath.Join(h.dir, "servers.json"), map[string]any{"mcpServers": map[string]any{
		"grouped":  map[string]any{"command": cmd, "args": args},
		"escaping": map[string]any{"command": "sh", "args": append([]string{"-c", escapeScript, "sh", h.dir, ecmd}, eargs...)},
	}})

	h.cmd = command(t, h.dir, "--db", h.db, "run", "--gate", "1m", "--cwd", h.dir, "--config", cfg)
	// A pipe of the test's own, not StdoutPipe: its reader can be closed
	// while mcp-audit runs, and reads on to the end otherwise.
	stdout, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	h.stdout = stdout
	h.cmd.Stdout = w
	h.cmd.Stderr = writerFunc(h.record)
	err = h.cmd.Start()
	w.Close()
	if err != nil {
		stdout.Close()
		t.Fatal(err)
	}
	go func() {
		h.cmd.Wait()
		close(h.exited)
	}()
	t.Cleanup(func() {
		h.cmd.Process.Kill()
		<-h.exited
		for _, p := range h.all() {
			if alive(p) {
				syscall.Kill(p.Pid, syscall.SIGKILL)
			}
		}
	})

	// The first lines: the session, the gate's outcomes, the table, and
	// the line that says it now runs until signalled.
	lines := bufio.NewScanner(stdout)
	startup := time.AfterFunc(startLimit, func() { h.cmd.Process.Kill() })
	var head []string
	for lines.Scan() {
		line := lines.Text()
		head = append(head, line)
		if id, ok := strings.CutPrefix(line, "session "); ok && h.session == "" {
			h.session, _, _ = strings.Cut(id, " ")
		}
		if strings.HasPrefix(line, "watching for changes") {
			break
		}
	}
	startup.Stop()
	if h.session == "" || !slices.ContainsFunc(head, func(l string) bool {
		return strings.Contains(l, "escaping=ready") && strings.Contains(l, "grouped=ready")
	}) {
		t.Fatalf("mcp-audit run did not start both servers:\n%s\n%s", strings.Join(head, "\n"), h.output())
	}
	go func() {
		for lines.Scan() {
			h.record([]byte(lines.Text() + "\n"))
		}
		stdout.Close()
	}()

	for _, f := range []string{"grouped.child", "escaping.child", "escapees"} {
		for _, pid := range readPids(t, filepath.Join(h.dir, f)) {
			id, ok := proc.IdentityOf(pid)
			if !ok {
				t.Fatalf("process %d (from %s) is gone before the host ends", pid, f)
			}
			h.started = append(h.started, events.ProcessRef{Pid: pid, StartTime: id.StartTime})
		}
	}
	h.awaitRecorded()
	return h
}

// awaitRecorded waits until the store holds the ServerConnected and the
// first ProcessesSeen of both servers (the manager records them without
// waiting for the disk, ProcessesSeen after a scan of /proc that waits
// half a second to batch connects), and takes h.servers and h.recorded
// from them: what a host killed from then on leaves behind is what the
// next host can find.
func (h *host) awaitRecorded() {
	h.t.Helper()
	deadline := time.Now().Add(startLimit)
	for {
		var servers, seen []events.ProcessRef
		seenBy := map[string]bool{}
		for _, ev := range h.events() {
			switch e := ev.(type) {
			case *events.ServerConnected:
				servers = append(servers, events.ProcessRef{Pid: e.Pid, StartTime: e.StartTime})
			case *events.ProcessesSeen:
				seen = append(seen, e.Pids...)
				seenBy[e.Server] = true
			}
		}
		if len(servers) == 2 && len(seenBy) == 2 {
			h.servers = servers
			h.recorded = append(servers, seen...)
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("not recorded after %s: servers %v, processes seen of %v (want both)\n%s", startLimit, servers, seenBy, h.output())
		}
		time.Sleep(pollEvery)
	}
}

// events returns the events of the host's session in the store.
func (h *host) events() []events.Event {
	h.t.Helper()
	return sessionEvents(h.t, h.db, h.session)
}

func sessionEvents(t *testing.T, path, session string) []events.Event {
	t.Helper()
	db, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []events.Event
	for env, err := range db.ReadStream(context.Background(), session, 1) {
		if err != nil {
			t.Fatal(err)
		}
		ev, err := events.Decode(env)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// signal sends sig to mcp-audit and waits until it has exited.
func (h *host) signal(sig syscall.Signal) {
	h.t.Helper()
	if err := h.cmd.Process.Signal(sig); err != nil {
		h.t.Fatal(err)
	}
	select {
	case <-h.exited:
	case <-time.After(exitLimit):
		h.t.Fatalf("mcp-audit still runs %s after %v\n%s", exitLimit, sig, h.output())
	}
}

// all returns every process the host's servers ran: the servers and what
// they started.
func (h *host) all() []events.ProcessRef { return append(slices.Clone(h.servers), h.started...) }

func (h *host) record(b []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.out.Write(b)
}

func (h *host) output() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.out.String()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// alive reports whether p still runs as the process recorded: the same
// pid with the same start time, not exited (a zombie has).
func alive(p events.ProcessRef) bool {
	id, ok := proc.IdentityOf(p.Pid)
	return ok && id.StartTime == p.StartTime && proc.Running(p.Pid)
}

// survivors returns those of procs that are alive.
func survivors(procs []events.ProcessRef) []events.ProcessRef {
	return slices.DeleteFunc(slices.Clone(procs), func(p events.ProcessRef) bool { return !alive(p) })
}

// awaitGone waits up to limit for every process of procs to be gone, and
// returns those that are still alive then.
func awaitGone(procs []events.ProcessRef, limit time.Duration) []events.ProcessRef {
	deadline := time.Now().Add(limit)
	for {
		left := survivors(procs)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(pollEvery)
	}
}

// TestTeardownLeavesNothing: a host that ends by SIGINT (Ctrl-C),
// SIGTERM or SIGHUP, or by SIGINT after the reader of its stdout went
// away, tears every server down and records SessionClosed: no process
// the servers ran survives it, those outside their process groups
// included.
func TestTeardownLeavesNothing(t *testing.T) {
	for _, way := range []struct {
		name        string
		sig         syscall.Signal
		closeStdout bool
	}{
		{"SIGINT", syscall.SIGINT, false},
		{"SIGTERM", syscall.SIGTERM, false},
		{"SIGHUP", syscall.SIGHUP, false},
		{"SIGINT with stdout closed", syscall.SIGINT, true},
	} {
		t.Run(way.name, func(t *testing.T) {
			t.Parallel()
			h := startHost(t)
			if way.closeStdout {
				h.stdout.Close()
			}
			h.signal(way.sig)
			left := awaitGone(h.all(), deathLimit)
			t.Logf("host ended by %s: %d of %d processes survived (%d servers, %d they started)", way.name, len(left), len(h.all()), len(h.servers), len(h.started))
			if code := h.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("exit status %d (%v), want 0\n%s", code, h.cmd.ProcessState, h.output())
			}
			if len(left) > 0 {
				t.Errorf("survivors: %v", left)
			}
			evs := h.events()
			if _, ok := evs[len(evs)-1].(*events.SessionClosed); !ok {
				t.Errorf("the session ends with %T, not SessionClosed\n%s", evs[len(evs)-1], h.output())
			}
		})
	}
}

// TestKilledHostIsReapedByTheNext: a host killed with SIGKILL takes its
// servers with it at once (the parent-death signal); what they started
// survives until the next mcp-audit run on the same store, which marks
// the session abandoned and kills every recorded process that survived,
// recording them. ProcessesSeen records the descendants by their parent
// links and by the instance marker, so the daemon that double-forked is
// among them too: nothing may survive.
func TestKilledHostIsReapedByTheNext(t *testing.T) {
	h := startHost(t)
	h.signal(syscall.SIGKILL)

	if left := awaitGone(h.servers, deathLimit); len(left) > 0 {
		t.Errorf("servers still run %s after their host was killed: %v", deathLimit, left)
	}
	orphans := survivors(h.all())
	t.Logf("host ended by SIGKILL: %d of %d processes survived it (%d servers, %d they started; %d of them recorded)",
		len(orphans), len(h.all()), len(h.servers), len(h.started), len(h.recorded)-len(h.servers))
	if len(orphans) == 0 {
		t.Fatal("nothing survived the killed host: nothing left for the next host to reap")
	}
	evs := h.events()
	if slices.ContainsFunc(evs, func(ev events.Event) bool { _, ok := ev.(*events.SessionClosed); return ok }) {
		t.Fatal("a killed host recorded SessionClosed")
	}

	// The next host: one run --once on the same store.
	ncmd, nargs := fixturetest.Command(t, "only=echo")
	cfg := writeJSON(t, filepath.Join(h.dir, "next.json"), map[string]any{"mcpServers": map[string]any{
		"next": map[string]any{"command": ncmd, "args": nargs},
	}})
	next := command(t, h.dir, "--db", h.db, "--json", "run", "--once", "--cwd", h.dir, "--config", cfg)
	out, err := next.Output()
	if err != nil {
		t.Fatalf("next run: %v\n%s", err, out)
	}
	var got struct{ Session string }
	if err := json.Unmarshal(out, &got); err != nil || got.Session == "" {
		t.Fatalf("next run's output %q: %v", out, err)
	}

	awaitGone(h.recorded, deathLimit)
	left := survivors(h.all())
	unrecorded := slices.DeleteFunc(slices.Clone(left), func(p events.ProcessRef) bool { return slices.Contains(h.recorded, p) })
	t.Logf("after the next run on the store: %d of %d processes survived (%d of them never recorded)", len(left), len(h.all()), len(unrecorded))
	if len(left) > 0 {
		t.Errorf("processes survived the next run: %v (never recorded: %v)", left, unrecorded)
	}
	evs = h.events()
	if len(evs) < 2 {
		t.Fatalf("the abandoned session holds %d events", len(evs))
	}
	abandoned, ok1 := evs[len(evs)-2].(*events.SessionAbandoned)
	reaped, ok2 := evs[len(evs)-1].(*events.OrphansReaped)
	if !ok1 || !ok2 {
		t.Fatalf("the abandoned session ends with %T, %T; want SessionAbandoned, OrphansReaped", evs[len(evs)-2], evs[len(evs)-1])
	}
	if *abandoned != (events.SessionAbandoned{Session: h.session, DetectedBy: got.Session}) {
		t.Errorf("SessionAbandoned = %+v, want session %s detected by %s", abandoned, h.session, got.Session)
	}
	if reaped.Session != h.session {
		t.Errorf("OrphansReaped names session %s, want %s", reaped.Session, h.session)
	}
	for _, p := range orphans {
		if slices.Contains(h.recorded, p) && !slices.Contains(reaped.Pids, p) {
			t.Errorf("recorded orphan %v is not in OrphansReaped %v", p, reaped.Pids)
		}
	}
	// The next host's own session is not taken for abandoned.
	if evs := sessionEvents(t, h.db, got.Session); slices.ContainsFunc(evs, func(ev events.Event) bool { _, ok := ev.(*events.SessionAbandoned); return ok }) {
		t.Error("the next host's session was marked abandoned")
	}
	if out, err := command(t, h.dir, "--db", h.db, "verify", h.session).CombinedOutput(); err != nil {
		t.Errorf("verify of the abandoned session: %v\n%s", err, out)
	}
}

// command returns an mcp-audit command with a home of its own under dir,
// so that discovery reads no config of the user running the tests.
func command(t *testing.T, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(t.Context(), mcpAudit, args...)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains([]string{"HOME", "XDG_CONFIG_HOME", "CODEX_HOME", "APPDATA", "MCP_AUDIT_DB"}, name)
	})
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(env, "HOME="+home, "NO_COLOR=1")
	return cmd
}

func writeJSON(t *testing.T, path string, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// readPids reads the pids, separated by white space, of a file a fixture
// or escapeScript wrote before its server started.
func readPids(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for f := range strings.FieldsSeq(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %q: %v", path, b, err)
		}
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		t.Fatalf("%s holds no pid", path)
	}
	return pids
}
