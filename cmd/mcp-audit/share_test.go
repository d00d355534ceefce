package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/store/sqlite"
)

// shareDeadline bounds every wait of the share tests, so that a
// failure fails the test instead of holding it until the test binary's
// timeout.
const shareDeadline = 2 * time.Minute

// shareCtx is the test's context bounded by shareDeadline.
func shareCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), shareDeadline)
	t.Cleanup(cancel)
	return ctx
}

// killAfter kills cmd when it is still running after shareDeadline (so
// a read of its output ends); the returned function stops the timer.
func killAfter(t *testing.T, cmd *exec.Cmd, what string) (stop func() bool) {
	return time.AfterFunc(shareDeadline, func() {
		t.Errorf("%s: nothing within %v, killing %s", what, shareDeadline, cmd.Path)
		cmd.Process.Kill()
	}).Stop
}

// waitCmd waits for cmd to exit; one that outlasts shareDeadline is
// killed and fails the test.
func waitCmd(t *testing.T, cmd *exec.Cmd, what string) error {
	t.Helper()
	defer killAfter(t, cmd, what+" to exit")()
	return cmd.Wait()
}

// startDaemon starts `mcp-audit daemon` and returns once it listens.
func startDaemon(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	d := mockCommand(t, args...)
	var stderr bytes.Buffer
	d.Stderr = &stderr
	out, err := d.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Process.Kill(); d.Wait() })
	stop := killAfter(t, d, "the daemon's first line")
	line, _ := bufio.NewReader(out).ReadString('\n')
	stop()
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("daemon said %q: %s", line, stderr.String())
	}
	return d, &stderr
}

// sessionEvents returns every session's events in the store at db.
func sessionEvents(t *testing.T, db string) map[string][]events.Event {
	t.Helper()
	st, err := sqlite.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	out := map[string][]events.Event{}
	for env, err := range st.ReadAll(context.Background(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		ev, err := events.Decode(env)
		if err != nil {
			t.Fatal(err)
		}
		out[env.SessionID] = append(out[env.SessionID], ev)
	}
	return out
}

// seqsOf returns the sequences of a session's events of type typ.
func seqsOf(t *testing.T, db, session, typ string) []uint64 {
	t.Helper()
	st, err := sqlite.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var out []uint64
	for env, err := range st.ReadStream(context.Background(), session, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if env.Type == typ {
			out = append(out, env.Seq)
		}
	}
	if len(out) == 0 {
		t.Fatalf("session %s has no %s", session, typ)
	}
	return out
}

func countOf[T events.Event](evs []events.Event) (n int, last T) {
	for _, ev := range evs {
		if x, ok := ev.(T); ok {
			n++
			last = x
		}
	}
	return n, last
}

// TestShareTwoRunsOneServerProcess runs two `run` processes, one with
// --share and one without (a shared host is running, so it shares too),
// whose calls are inside the server at the same time: one server process,
// in the daemon's session, serves both.
func TestShareTwoRunsOneServerProcess(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	db := filepath.Join(t.TempDir(), "e.db")
	cfg := writeConfig(t, map[string][]string{"fx": nil})
	cwd := t.TempDir()
	d, dlog := startDaemon(t, "--db", db, "daemon", "--idle", "1ms")

	g := fixturetest.NewGate(t)
	var runs []*exec.Cmd
	var outs []*bytes.Buffer
	// The second run shares without --share: a shared host is running.
	for _, share := range []string{"--share", "--once"} {
		r := mockCommand(t, "--db", db, "run", share, "--once", "--gate", "1m", "--cwd", cwd, "--config", cfg,
			"--call", "fx/sleep", "--args", `{"gate":"`+g.Path()+`"}`)
		var out bytes.Buffer
		r.Stdout, r.Stderr = &out, &out
		if err := r.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Process.Kill(); r.Wait() })
		runs, outs = append(runs, r), append(outs, &out)
	}
	if err := g.WaitReached(shareCtx(t), 2); err != nil {
		t.Fatalf("both calls in the server: %v\n%s\n%s", err, outs[0], outs[1])
	}
	g.Release()
	for i, r := range runs {
		if err := waitCmd(t, r, "run"); err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, outs[i])
		}
		_, table, _ := strings.Cut(outs[i].String(), "after settling:")
		if !strings.Contains(table, "  shared  ") || strings.Contains(table, "not shared") {
			t.Errorf("run %d: the table does not say fx is shared:\n%s", i, outs[i])
		}
	}
	if err := waitCmd(t, d, "the idle daemon"); err != nil {
		t.Fatalf("daemon: %v\n%s", err, dlog)
	}

	var daemon string
	var hosts []string
	all := sessionEvents(t, db)
	for id, evs := range all {
		if _, st := countOf[*events.SessionStarted](evs); st != nil && st.Options["role"] == "shared host" {
			daemon = id
		} else {
			hosts = append(hosts, id)
		}
	}
	if daemon == "" || len(hosts) != 2 {
		t.Fatalf("sessions: daemon %q, hosts %v", daemon, hosts)
	}
	if n, _ := countOf[*events.ServerConnected](all[daemon]); n != 1 {
		t.Errorf("daemon: %d ServerConnected, want 1 server process", n)
	}
	if n, _ := countOf[*events.HostAttached](all[daemon]); n != 2 {
		t.Errorf("daemon: %d HostAttached, want 2", n)
	}
	for _, h := range hosts {
		_, c := countOf[*events.ServerConnected](all[h])
		if c == nil || c.Transport != events.TransportShared {
			t.Errorf("host %s: ServerConnected %+v, want transport shared", h, c)
		}
	}
	if code, out, errOut := runCmd(t, "--db", db, "verify", "--all"); code != 0 {
		t.Errorf("verify --all: exit %d: %s %s", code, out, errOut)
	}
	// sessions says which sessions shared which server process.
	_, out, _ := runCmd(t, "--db", db, "sessions")
	_, shline, _ := strings.Cut(out, "shared server processes")
	if !strings.Contains(shline, daemon+"  fx-") || !strings.Contains(shline, hosts[0]) || !strings.Contains(shline, hosts[1]) {
		t.Errorf("sessions does not show the sharing:\n%s", out)
	}
	// inspect says which shared server a host's connection used, and
	// which hosts were attached to the shared host at a point.
	_, dc := countOf[*events.ServerConnected](all[daemon])
	for _, h := range hosts {
		at := seqsOf(t, db, h, events.TypeServerConnected)
		_, out, errOut := runCmd(t, "--db", db, "inspect", h, "--seq", strconv.FormatUint(at[0], 10))
		_, hc := countOf[*events.ServerConnected](all[h])
		want := "fx: " + hc.SharedInstance + "  " + daemon + "  pid " + strconv.Itoa(dc.Pid)
		if !strings.Contains(out, want) {
			t.Errorf("inspect %s: want %q:\n%s%s", h, want, out, errOut)
		}
	}
	attached := seqsOf(t, db, daemon, events.TypeHostAttached)
	_, out, _ = runCmd(t, "--db", db, "inspect", daemon, "--seq", strconv.FormatUint(attached[1], 10))
	_, hosted, _ := strings.Cut(out, "hosts attached")
	for _, h := range hosts {
		if !strings.Contains(hosted, dc.Server+": "+h+"  pid ") {
			t.Errorf("inspect of the shared host at its second attach does not show %s:\n%s", h, out)
		}
	}
	detached := seqsOf(t, db, daemon, events.TypeHostDetached)
	if _, out, _ = runCmd(t, "--db", db, "inspect", daemon, "--seq", strconv.FormatUint(detached[len(detached)-1], 10)); strings.Contains(out, "hosts attached") {
		t.Errorf("inspect of the shared host after the last detach shows hosts:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "mcplife", "shared.sock")); !os.IsNotExist(err) {
		t.Errorf("the daemon left its socket: %v", err)
	}
}

// TestShareRunFallbackTable runs `run --share` where no shared host can
// be reached (the socket's directory is a file): the server runs in run's
// own process, and the table, the JSON and the recording say so rather
// than "shared".
func TestShareRunFallbackTable(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	notDir := filepath.Join(t.TempDir(), "runtime")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", notDir)
	db := filepath.Join(t.TempDir(), "e.db")
	cfg := writeConfig(t, map[string][]string{"fx": {"only=echo"}})
	cwd := t.TempDir()

	code, out, errOut := runCmd(t, "--db", db, "run", "--share", "--once", "--gate", "1m", "--cwd", cwd, "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "not shared") {
		t.Errorf("no log line says why the server is not shared:\n%s", errOut)
	}
	_, table, _ := strings.Cut(out, "after settling:")
	row := ""
	for line := range strings.Lines(table) {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "fx" {
			row = line
		}
	}
	if f := strings.Fields(row); len(f) < 4 || f[1] != "connected" || !strings.Contains(row, "  stdio (not shared)  ") {
		t.Errorf("table row of fx %q, want connected, stdio (not shared):\n%s", row, out)
	}

	code, out, errOut = runCmd(t, "--db", db, "--json", "run", "--share", "--once", "--gate", "1m", "--cwd", cwd, "--config", cfg)
	if code != 0 {
		t.Fatalf("--json: exit %d: %s %s", code, out, errOut)
	}
	var res runJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if len(res.Servers) != 1 || res.Servers[0].Transport != events.TransportStdio || !res.Servers[0].NotShared ||
		res.Servers[0].SharedInstance != "" || res.Servers[0].Pid == 0 {
		t.Errorf("--json servers %+v, want fx on stdio, not shared, with its pid", res.Servers)
	}

	for id, evs := range sessionEvents(t, db) {
		_, cs := countOf[*events.ConnectStarted](evs)
		_, c := countOf[*events.ServerConnected](evs)
		if cs == nil || cs.Transport != events.TransportShared || c == nil || c.Transport != events.TransportStdio || c.SharedInstance != "" {
			t.Errorf("session %s: ConnectStarted %+v, ServerConnected %+v, want shared, then stdio", id, cs, c)
		}
	}
}
