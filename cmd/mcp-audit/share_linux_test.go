package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/internal/shared"
)

// stopDaemon ends the shared host listening on socket, which no test
// started itself (a host did): SIGTERM, then it waits for the process to
// exit.
func stopDaemon(t *testing.T, socket string) {
	t.Helper()
	c, err := shared.Dial(shareCtx(t), socket, shared.Hello{Session: "test", Pid: os.Getpid()})
	if err != nil {
		t.Fatalf("no shared host to stop: %v", err)
	}
	pid := c.Welcome().Pid
	c.Close()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd of the shared host %d: %v", pid, err)
	}
	defer unix.Close(fd)
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, int(shareDeadline/time.Millisecond)); n != 1 || err != nil {
		t.Fatalf("the shared host %d did not exit: %v", pid, err)
	}
}

// TestShareRunsStartOneDaemon starts two `run --share` processes with no
// shared host running: each starts one, the two end with one, and both
// hosts share one server process in it.
func TestShareRunsStartOneDaemon(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	socket := filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "mcplife", shared.SocketName)
	db := filepath.Join(t.TempDir(), "e.db")
	cfg := writeConfig(t, map[string][]string{"fx": nil})
	cwd := t.TempDir()
	g := fixturetest.NewGate(t)
	var runs []*exec.Cmd
	var outs []*bytes.Buffer
	for range 2 {
		r := mockCommand(t, "--db", db, "run", "--share", "--once", "--gate", "1m", "--cwd", cwd, "--config", cfg,
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
	}
	stopDaemon(t, socket)
	all := sessionEvents(t, db)
	var daemons []string
	for id, evs := range all {
		if _, st := countOf[*events.SessionStarted](evs); st != nil && st.Options["role"] == "shared host" {
			daemons = append(daemons, id)
		}
	}
	if len(daemons) != 1 {
		t.Fatalf("%d shared host sessions, want 1", len(daemons))
	}
	if n, _ := countOf[*events.ServerConnected](all[daemons[0]]); n != 1 {
		t.Errorf("%d ServerConnected in the shared host, want 1", n)
	}
	if n, _ := countOf[*events.HostAttached](all[daemons[0]]); n != 2 {
		lg, _ := os.ReadFile(filepath.Join(filepath.Dir(socket), "shared.log"))
		t.Errorf("%d HostAttached, want 2\nrun 0: %s\nrun 1: %s\nshared.log: %s", n, outs[0], outs[1], lg)
	}
}

// TestShareDaemonKilled kills the shared host under a running `run
// --share`: its server dies with it, the host records the drop and
// reconnects through a shared host it starts itself.
func TestShareDaemonKilled(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	socket := filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "mcplife", shared.SocketName)
	db := filepath.Join(t.TempDir(), "e.db")
	cfg := writeConfig(t, map[string][]string{"fx": nil})
	d, _ := startDaemon(t, "--db", db, "daemon")

	r := mockCommand(t, "--db", db, "run", "--share", "--gate", "1m", "--cwd", t.TempDir(), "--config", cfg)
	out, err := r.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	r.Stderr = &stderr
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Process.Kill(); r.Wait() })
	lines := bufio.NewScanner(out)
	// until waits for a line of run's output that ok accepts.
	until := func(what string, ok func(fields []string) bool) {
		t.Helper()
		defer killAfter(t, r, what)()
		for lines.Scan() {
			if ok(strings.Fields(lines.Text())) {
				return
			}
		}
		t.Fatalf("run ended before %s: %v\n%s", what, lines.Err(), stderr.String())
	}
	// The table (fx connected: the gate outlasts its start), then changes.
	until("the table", func(f []string) bool { return len(f) > 1 && f[0] == "watching" })
	d.Process.Signal(syscall.SIGKILL)
	waitCmd(t, d, "the killed daemon")
	until("the drop", func(f []string) bool { return len(f) > 2 && f[1] == "fx" && f[2] != "connected" })
	until("the reconnect", func(f []string) bool { return len(f) > 2 && f[1] == "fx" && f[2] == "connected" })
	r.Process.Signal(syscall.SIGTERM)
	go io.Copy(io.Discard, out)
	if err := waitCmd(t, r, "run"); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	stopDaemon(t, socket)

	all := sessionEvents(t, db)
	var host string
	var daemons []string
	for id, evs := range all {
		_, st := countOf[*events.SessionStarted](evs)
		switch {
		case st == nil:
		case st.Options["role"] == "shared host":
			daemons = append(daemons, id)
		default:
			host = id
		}
	}
	if len(daemons) != 2 || host == "" {
		t.Fatalf("sessions: shared hosts %v, host %q", daemons, host)
	}
	evs := all[host]
	if n, dis := countOf[*events.Disconnected](evs); n < 1 || !firstDisconnected(evs).Reconnecting {
		t.Errorf("host: %d Disconnected (last %+v), want the drop with a reconnect", n, dis)
	}
	var instances []string
	for _, ev := range evs {
		if c, ok := ev.(*events.ServerConnected); ok {
			if c.Transport != events.TransportShared {
				t.Errorf("ServerConnected %+v: want shared", c)
			}
			instances = append(instances, c.SharedInstance)
		}
	}
	if len(instances) != 2 || instances[0] == instances[1] {
		t.Errorf("instances %v: want two, one in each shared host", instances)
	}
	if code, out, errOut := runCmd(t, "--db", db, "verify", "--all"); code != 0 {
		t.Errorf("verify --all: exit %d: %s %s", code, out, errOut)
	}
}

func firstDisconnected(evs []events.Event) *events.Disconnected {
	for _, ev := range evs {
		if d, ok := ev.(*events.Disconnected); ok {
			return d
		}
	}
	return &events.Disconnected{}
}

// TestShareProxy drives two `mcp-audit proxy` processes with the go-sdk's
// client: both list the server's own tools and call the one server
// process that the shared host runs for them.
func TestShareProxy(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	socket := filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "mcplife", shared.SocketName)
	db := filepath.Join(t.TempDir(), "e.db")
	cfg := writeConfig(t, map[string][]string{"fx": {"name=fixture-x", "resources=1"}})
	cwd := t.TempDir()
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	var pids []float64
	var sessions []*mcp.ClientSession
	for range 2 {
		p := mockCommand(t, "--db", db, "proxy", "fx", "--config", cfg, "--cwd", cwd)
		var stderr bytes.Buffer
		p.Stderr = &stderr
		cs, err := client.Connect(shareCtx(t), &mcp.CommandTransport{Command: p}, nil)
		if err != nil {
			t.Fatalf("proxy: %v\n%s", err, stderr.String())
		}
		t.Cleanup(func() { cs.Close() })
		sessions = append(sessions, cs)
		if got := cs.InitializeResult().ServerInfo.Name; got != "fixture-x" {
			t.Errorf("server name %q through the proxy, want the server's own", got)
		}
		if res := cs.InitializeResult().Capabilities.Resources; res == nil || !res.Subscribe {
			t.Errorf("resources %+v through the proxy: want subscriptions, which the server offers", res)
		}
		tools, err := cs.ListTools(shareCtx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(tools.Tools) == 0 || tools.Tools[0].Name != "add" {
			t.Errorf("tools through the proxy: %v", tools.Tools)
		}
		res, err := cs.CallTool(shareCtx(t), &mcp.CallToolParams{Name: "pid"})
		if err != nil || res.IsError {
			t.Fatalf("pid: %v %v", err, res)
		}
		pids = append(pids, res.StructuredContent.(map[string]any)["pid"].(float64))
	}
	// The TypeScript SDK's client through a third proxy.
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed: %v", err)
	}
	exe, _ := os.Executable()
	ts := exec.CommandContext(shareCtx(t), node, filepath.Join("testdata", "proxyclient.mjs"), exe, "--db", db, "proxy", "fx", "--config", cfg, "--cwd", cwd)
	ts.Env = append(os.Environ(), asAuditEnv+"=1")
	var tsErr bytes.Buffer
	ts.Stderr = &tsErr
	out, err := ts.Output()
	if err != nil {
		t.Fatalf("TypeScript client: %v\n%s", err, tsErr.String())
	}
	var v struct {
		ServerInfo   struct{ Name string }
		Capabilities struct {
			Tools struct{ ListChanged bool }
		}
		Tools []string
		Echo  struct{ StructuredContent struct{ Text string } }
		Pid   struct{ StructuredContent struct{ Pid float64 } }
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("TypeScript client output: %v\n%s", err, out)
	}
	if v.ServerInfo.Name != "fixture-x" || !v.Capabilities.Tools.ListChanged || !slices.Contains(v.Tools, "echo") || v.Echo.StructuredContent.Text != "from ts" {
		t.Errorf("TypeScript client saw %s", out)
	}
	pids = append(pids, v.Pid.StructuredContent.Pid)
	if pids[0] != pids[1] || pids[1] != pids[2] {
		t.Errorf("pids %v: want one server process", pids)
	}
	for _, cs := range sessions {
		cs.Close() // the proxy exits
	}
	stopDaemon(t, socket)
}
