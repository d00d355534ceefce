package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/store/memory"
	"github.com/mcplife/mcplife/verify"
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

// TestShareDaemonKilledCallsGoOn kills the shared host while calls of a
// host are inside its servers: the host records the drop and reconnects
// through a shared host it starts itself; the read-only call cut off is
// made once more there, the call that is not read-only fails (it must
// not run twice), and a call made after the kill waits for the reconnect.
func TestShareDaemonKilledCallsGoOn(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	socket := filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "mcplife", shared.SocketName)
	db := filepath.Join(t.TempDir(), "e.db")
	d, _ := startDaemon(t, "--db", db, "daemon")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(asAuditEnv, "1") // the shared host the manager starts is this binary as mcp-audit

	st := memory.New()
	j, err := journal.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	m, err := manager.New(j, "host", &manager.Options{
		Cwd: t.TempDir(), Gate: time.Minute,
		Share: &manager.ShareOptions{Socket: socket, Start: []string{exe, "--db", db, "daemon"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	ro, ror := fixturetest.Command(t, "read-only=sleep")
	rw, rwr := fixturetest.Command(t)
	cfgs := []events.ServerConfig{{Name: "ro", Command: ro, Args: ror}, {Name: "rw", Command: rw, Args: rwr}}
	if res, err := m.ConnectServers(shareCtx(t), cfgs, nil); err != nil || len(res.Errors) > 0 || len(res.Connected) != 2 {
		t.Fatalf("connect: %v %+v", err, res)
	}
	type out struct {
		res *manager.CallResult
		err error
	}
	call := func(name string, args map[string]any) <-chan out {
		tool, ok := m.Tool(name)
		if !ok {
			t.Fatalf("no tool %s in %v", name, m.Tools())
		}
		ch := make(chan out, 1)
		go func() {
			r, err := tool.Call(shareCtx(t), args)
			ch <- out{r, err}
		}()
		return ch
	}
	roGate, rwGate := fixturetest.NewGate(t), fixturetest.NewGate(t)
	cutRO := call("mcp_ro_sleep", map[string]any{"gate": roGate.Path()})
	cutRW := call("mcp_rw_sleep", map[string]any{"gate": rwGate.Path()})
	// Both calls are inside their servers, in the shared host.
	if err := roGate.WaitReached(shareCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	if err := rwGate.WaitReached(shareCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	first := d.Process.Pid
	d.Process.Signal(syscall.SIGKILL)
	waitCmd(t, d, "the killed daemon")
	after := call("mcp_ro_echo", map[string]any{"text": "after the kill"})

	if o := <-cutRW; o.err != nil || !errors.Is(o.res.Err, manager.ErrDisconnected) {
		t.Errorf("the cut-off call that is not read-only: %v %+v, want it failed as disconnected", o.err, o.res)
	}
	if o := <-after; o.err != nil || o.res.Err != nil || o.res.Text() != "after the kill" {
		t.Errorf("the call made after the kill: %v %+v", o.err, o.res)
	}
	// The read-only call is made again, in the new shared host's server.
	if err := roGate.WaitReached(shareCtx(t), 2); err != nil {
		t.Fatalf("the read-only call was not made again: %v", err)
	}
	roGate.Release()
	if o := <-cutRO; o.err != nil || o.res.Err != nil || o.res.Text() != "released" {
		t.Errorf("the cut-off read-only call: %v %+v", o.err, o.res)
	}
	// Both servers are back, through the new shared host.
	updates, err := m.Watch(shareCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for m.Status("ro") != projector.StatusConnected || m.Status("rw") != projector.StatusConnected {
		select {
		case <-updates:
		case <-shareCtx(t).Done():
			t.Fatalf("not reconnected: ro %s, rw %s", m.Status("ro"), m.Status("rw"))
		}
	}
	m.Close(shareCtx(t))
	c, err := shared.Dial(shareCtx(t), socket, shared.Hello{Session: "test", Pid: os.Getpid()})
	if err != nil {
		t.Fatalf("no new shared host: %v", err)
	}
	if pid := c.Welcome().Pid; pid == first {
		t.Errorf("the shared host %d after the kill: want a new one", pid)
	}
	c.Close()
	stopDaemon(t, socket)

	var envs []events.Envelope
	for env, err := range st.ReadStream(context.Background(), "host", 1) {
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, env)
	}
	if vs := verify.Session("host", envs); len(vs) > 0 {
		t.Errorf("the host's session breaks the rules: %v", vs)
	}
	if t.Failed() {
		for _, env := range envs {
			ev, _ := events.Decode(env)
			t.Logf("%s %s", env.Type, events.Describe(ev))
		}
	}
	finished := map[string][]*events.ToolCallFinished{}
	var connected []*events.ServerConnected
	for _, env := range envs {
		ev, err := events.Decode(env)
		if err != nil {
			t.Fatal(err)
		}
		switch x := ev.(type) {
		case *events.ToolCallFinished:
			finished[x.Server+"/"+x.Tool] = append(finished[x.Server+"/"+x.Tool], x)
		case *events.ServerConnected:
			connected = append(connected, x)
		}
	}
	if f := finished["ro/sleep"]; len(f) != 1 || !f[0].Retried || f[0].IsError {
		t.Errorf("ro/sleep finished %+v: want once, retried", f)
	}
	if f := finished["rw/sleep"]; len(f) != 1 || f[0].Retried || !f[0].IsError {
		t.Errorf("rw/sleep finished %+v: want once, failed, not retried", f)
	}
	if n := rwGate.Reached(); n != 1 {
		t.Errorf("the call that is not read-only reached a server %d times, want once", n)
	}
	if n := len(connected); n != 4 {
		t.Errorf("%d ServerConnected, want each server twice", n)
	}
	for _, c := range connected {
		if c.Transport != events.TransportShared {
			t.Errorf("ServerConnected %+v: want shared", c)
		}
	}
}

// TestShareHostKilledRecordedGone kills a `run --share` whose call is
// inside the shared server: the shared host cancels the call and records
// the host as gone (its control stream decides, whichever of the host's
// connections it sees ending first), once.
func TestShareHostKilledRecordedGone(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	socket := filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "mcplife", shared.SocketName)
	db := filepath.Join(t.TempDir(), "e.db")
	cfg := writeConfig(t, map[string][]string{"fx": nil})
	d, _ := startDaemon(t, "--db", db, "daemon")
	hold, cancelled := fixturetest.NewGate(t), fixturetest.NewGate(t)
	r := mockCommand(t, "--db", db, "run", "--share", "--once", "--gate", "1m", "--cwd", t.TempDir(), "--config", cfg,
		"--call", "fx/sleep", "--args", `{"gate":"`+hold.Path()+`","on_cancel":"`+cancelled.Path()+`"}`)
	var out bytes.Buffer
	r.Stdout, r.Stderr = &out, &out
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Process.Kill(); r.Wait() })
	if err := hold.WaitReached(shareCtx(t), 1); err != nil {
		t.Fatalf("the call in the server: %v\n%s", err, out.String())
	}
	r.Process.Signal(syscall.SIGKILL)
	waitCmd(t, r, "the killed run")
	if err := cancelled.WaitReached(shareCtx(t), 1); err != nil {
		t.Fatalf("the call of the killed host was not cancelled: %v", err)
	}
	stopDaemon(t, socket)
	if err := waitCmd(t, d, "the daemon"); err != nil {
		t.Logf("daemon: %v", err)
	}
	all := sessionEvents(t, db)
	var detached []*events.HostDetached
	for _, evs := range all {
		if _, st := countOf[*events.SessionStarted](evs); st == nil || st.Options["role"] != "shared host" {
			continue
		}
		for _, ev := range evs {
			if x, ok := ev.(*events.HostDetached); ok && x.Pid == r.Process.Pid {
				detached = append(detached, x)
			}
		}
	}
	if len(detached) != 1 || detached[0].Reason != events.DetachHostGone {
		t.Errorf("HostDetached of the killed host %+v: want one, host gone", detached)
	}
}
