package manager_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/internal/shared"
	"github.com/mcplife/mcplife/internal/sharedhost"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
	"github.com/mcplife/mcplife/verify"
)

// shareEnv is a shared host on a temporary socket, recording into its own
// session of one journal, and the hosts' managers on the same journal.
type shareEnv struct {
	t      testing.TB
	st     store.Store
	j      *journal.Journal
	socket string
	served chan error
}

// shareDeadline bounds every wait of the share tests, so that a failure
// fails the test instead of holding it until the test binary's timeout.
const shareDeadline = 2 * time.Minute

// shareCtx is the test's context, ending shareDeadline after this call.
func shareCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), shareDeadline)
	t.Cleanup(cancel)
	return ctx
}

// ended waits for the shared host to end and returns what Serve
// returned; a shared host still running after shareDeadline fails the
// test.
func (e *shareEnv) ended() error {
	e.t.Helper()
	select {
	case err := <-e.served:
		return err
	case <-time.After(shareDeadline):
		e.t.Fatal("the shared host did not end")
		return nil
	}
}

func newShareEnv(t testing.TB) *shareEnv {
	t.Helper()
	st := memory.New()
	j, err := journal.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	e := &shareEnv{t: t, st: st, j: j, socket: filepath.Join(t.TempDir(), "run", shared.SocketName), served: make(chan error, 1)}
	return e
}

// serve starts a shared host (another after the first ended), recording
// into the session "shared", or sessions[0]; the returned function ends
// it.
func (e *shareEnv) serve(idle time.Duration, session ...string) context.CancelFunc {
	e.t.Helper()
	return e.serveWith(&sharedhost.Options{Idle: idle}, session...)
}

// serveWith is serve with the shared host's options.
func (e *shareEnv) serveWith(opts *sharedhost.Options, session ...string) context.CancelFunc {
	e.t.Helper()
	l, err := shared.Listen(e.socket)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.t.Cleanup(cancel)
	id := "shared"
	if len(session) > 0 {
		id = session[0]
	}
	go func() { e.served <- sharedhost.Serve(ctx, l, e.j, id, opts) }()
	return cancel
}

func (e *shareEnv) manager(session, cwd string, opts ...func(*manager.Options)) *manager.Manager {
	e.t.Helper()
	o := &manager.Options{
		Cwd: cwd, Gate: time.Minute, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Share: &manager.ShareOptions{Socket: e.socket, NoStart: true},
	}
	for _, f := range opts {
		f(o)
	}
	m, err := manager.New(e.j, session, o)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

// events returns a session's events, decoded, and checks them against
// the ordering rules.
func (e *shareEnv) events(session string) []events.Event {
	e.t.Helper()
	var envs []events.Envelope
	var out []events.Event
	for env, err := range e.st.ReadStream(context.Background(), session, 1) {
		if err != nil {
			e.t.Fatal(err)
		}
		envs = append(envs, env)
		ev, err := events.Decode(env)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, ev)
	}
	if vs := verify.Session(session, envs); len(vs) > 0 {
		e.t.Errorf("session %s breaks the rules: %v", session, vs)
	}
	return out
}

func count[T events.Event](evs []events.Event) (n int, last T) {
	for _, ev := range evs {
		if x, ok := ev.(T); ok {
			n++
			last = x
		}
	}
	return n, last
}

func filter[T events.Event](evs []events.Event) []T {
	var out []T
	for _, ev := range evs {
		if x, ok := ev.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

// pidOf calls the fixture's pid tool through m.
func pidOf(t testing.TB, m *manager.Manager) int {
	t.Helper()
	tool, ok := m.Tool("mcp_fx_pid")
	if !ok {
		t.Fatalf("no tool mcp_fx_pid in %v", m.Tools())
	}
	res, err := tool.Call(shareCtx(t), nil)
	if err != nil || res.Err != nil || res.Result.IsError {
		t.Fatalf("pid: %v %v %s", err, res.Err, res.Text())
	}
	var info struct {
		Pid int `json:"pid"`
	}
	b, _ := json.Marshal(res.Result.StructuredContent)
	if err := json.Unmarshal(b, &info); err != nil || info.Pid == 0 {
		t.Fatalf("pid result %s: %v", b, err)
	}
	return info.Pid
}

// TestShareTwoHostsOneProcess attaches two hosts to one shared host, under
// each protocol era between host and relay.
func TestShareTwoHostsOneProcess(t *testing.T) {
	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(v, func(t *testing.T) { testShareTwoHosts(t, v) })
	}
}

func testShareTwoHosts(t *testing.T, protocol string) {
	e := newShareEnv(t)
	e.serve(time.Millisecond)
	cmd, args := fixturetest.Command(t)
	cfg := events.ServerConfig{Name: "fx", Command: cmd, Args: args, Env: map[string]string{"FX_TOKEN": "s3cret-value"}}
	cwd := t.TempDir()
	pv := func(o *manager.Options) { o.ProtocolVersion = protocol }
	m1, m2 := e.manager("host1", cwd, pv), e.manager("host2", cwd, pv)
	for _, m := range []*manager.Manager{m1, m2} {
		res, err := m.ConnectServers(shareCtx(t), []events.ServerConfig{cfg}, nil)
		if err != nil || len(res.Errors) > 0 {
			t.Fatalf("connect: %v %v", err, res.Errors)
		}
		if _, ok := m.Tool("mcp_fx_echo"); !ok {
			t.Fatalf("%s: no echo tool", m.Session())
		}
	}
	if p1, p2 := pidOf(t, m1), pidOf(t, m2); p1 != p2 || p1 == os.Getpid() {
		t.Fatalf("pids %d and %d: want one server process, not this one (%d)", p1, p2, os.Getpid())
	}
	for _, m := range []*manager.Manager{m1, m2} {
		tool, _ := m.Tool("mcp_fx_echo")
		res, err := tool.Call(shareCtx(t), map[string]any{"text": "hi " + m.Session()})
		if err != nil || res.Err != nil || res.Text() != "hi "+m.Session() {
			t.Fatalf("echo: %v %v %q", err, res.Err, res.Text())
		}
	}
	// A list change of the shared server reaches every host: one host
	// adds a tool, the other sees it.
	updates, err := m2.Watch(shareCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	change, _ := m1.Tool("mcp_fx_change_tools")
	if res, err := change.Call(shareCtx(t), map[string]any{"add": "extra", "remove": "fail"}); err != nil || res.Err != nil {
		t.Fatalf("change_tools: %v %v", err, res.Err)
	}
	seen := shareCtx(t)
	for {
		_, added := m2.Tool("mcp_fx_extra")
		_, kept := m2.Tool("mcp_fx_fail")
		if added && !kept {
			break
		}
		select {
		case <-updates:
		case <-seen.Done():
			t.Fatalf("host2 never saw the change: %v", m2.Tools())
		}
	}
	m1.Close(shareCtx(t))
	m2.Close(shareCtx(t))
	select {
	case err := <-e.served:
		if err != nil {
			t.Fatalf("shared host: %v", err)
		}
	case <-time.After(shareDeadline):
		t.Fatal("the shared host did not end after its last host and server")
	}

	sh := e.events("shared")
	n, sc := count[*events.ServerConnected](sh)
	if n != 1 {
		t.Fatalf("shared host: %d ServerConnected, want one server process", n)
	}
	if n, _ := count[*events.HostAttached](sh); n != 2 {
		t.Errorf("shared host: %d HostAttached, want 2", n)
	}
	for _, d := range filter[*events.HostDetached](sh) {
		if d.Reason != events.DetachRequested {
			t.Errorf("HostDetached %+v: want detached, the hosts closed their connections", d)
		}
	}
	if n, _ := count[*events.HostDetached](sh); n != 2 {
		t.Errorf("shared host: %d HostDetached, want 2", n)
	}
	// Hosts that speak the shared host's version to the server have
	// their calls spliced onto its connection, which records none of
	// them; the others' go through its manager.
	want := 5
	if sc.ProtocolVersion == protocol {
		want = 0
	}
	if n, _ := count[*events.ToolCallFinished](sh); n != want {
		t.Errorf("shared host (speaking %s to the server): %d calls recorded, want %d", sc.ProtocolVersion, n, want)
	}
	if n, d := count[*events.Disconnected](sh); n != 1 || d.Reason != events.ReasonIdle {
		t.Errorf("shared host: %d Disconnected (%+v), want the idle stop", n, d)
	}
	var instance string
	for _, s := range []string{"host1", "host2"} {
		evs := e.events(s)
		_, st := count[*events.ConnectStarted](evs)
		_, c := count[*events.ServerConnected](evs)
		if st == nil || c == nil || st.Transport != events.TransportShared || c.Transport != events.TransportShared || c.SharedInstance == "" || c.Pid != 0 {
			t.Fatalf("%s: ConnectStarted %+v, ServerConnected %+v: want transport shared with an instance and no pid", s, st, c)
		}
		if instance != "" && c.SharedInstance != instance {
			t.Errorf("instances %s and %s: want one", instance, c.SharedInstance)
		}
		instance = c.SharedInstance
		if n, want := len(filter[*events.ToolCallFinished](evs)), map[string]int{"host1": 3, "host2": 2}[s]; n != want {
			t.Errorf("%s: %d calls recorded, want %d", s, n, want)
		}
	}
	for _, env := range allEnvelopes(t, e.st) {
		if b, _ := json.Marshal(env); strings.Contains(string(b), "s3cret-value") {
			t.Errorf("a resolved value reached the store: %s", b)
		}
	}
}

func allEnvelopes(t *testing.T, st store.Store) []events.Envelope {
	var out []events.Envelope
	for env, err := range st.ReadAll(context.Background(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, env)
	}
	return out
}

// waitFor waits until ok holds, re-checking at each update of m.
func waitFor(t *testing.T, m *manager.Manager, what string, ok func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(shareCtx(t))
	defer cancel()
	updates, err := m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for !ok() {
		select {
		case <-updates:
		case <-ctx.Done():
			t.Fatalf("%s: never", what)
		}
	}
}

// TestShareSharedHostGoneReconnects ends the shared host under a host: the
// host records the drop, and its reconnect attaches to the next shared
// host, where a new server process serves it.
func TestShareSharedHostGoneReconnects(t *testing.T) {
	e := newShareEnv(t)
	stop := e.serve(time.Hour, "shared1")
	cmd, args := fixturetest.Command(t)
	cfg := events.ServerConfig{Name: "fx", Command: cmd, Args: args}
	m := e.manager("host", t.TempDir(), func(o *manager.Options) {
		o.Reconnect = manager.ReconnectPolicy{Initial: time.Hour, Max: time.Hour} // until ReconnectNow
	})
	if res, err := m.ConnectServers(shareCtx(t), []events.ServerConfig{cfg}, nil); err != nil || len(res.Errors) > 0 {
		t.Fatalf("connect: %v %v", err, res.Errors)
	}
	first := pidOf(t, m)
	stop()
	if err := e.ended(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, m, "the drop recorded", func() bool {
		n, _ := count[*events.ReconnectScheduled](e.events("host"))
		return n == 1
	})
	e.serve(time.Hour, "shared2")
	if err := m.ReconnectNow("fx"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, m, "the reconnect through the new shared host", func() bool {
		n, _ := count[*events.ToolsListed](e.events("host"))
		return n == 2
	})
	if second := pidOf(t, m); second == first {
		t.Errorf("pid %d after the shared host ended: want a new server process", second)
	}
	evs := e.events("host")
	if n, d := count[*events.Disconnected](evs); n != 1 || !d.Reconnecting {
		t.Errorf("host: %d Disconnected (%+v), want the drop", n, d)
	}
	cs := filter[*events.ServerConnected](evs)
	if len(cs) != 2 || cs[1].Transport != events.TransportShared || cs[0].SharedInstance == cs[1].SharedInstance {
		t.Errorf("host: ServerConnected %+v: want two shared instances", cs)
	}
	if n, _ := count[*events.ServerConnected](e.events("shared2")); n != 1 {
		t.Errorf("the new shared host: %d ServerConnected, want 1", n)
	}
}

// TestShareHostGoneReleases ends a host's control stream without a
// detach: the shared host releases its instance, stops it after the idle
// period and ends.
func TestShareHostGoneReleases(t *testing.T) {
	e := newShareEnv(t)
	e.serve(time.Millisecond)
	cmd, args := fixturetest.Command(t)
	c, err := shared.Dial(shareCtx(t), e.socket, shared.Hello{Session: "gone", Pid: 4242})
	if err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	att, err := c.Attach(shareCtx(t), shared.Attach{Name: "fx", Config: events.ServerConfig{Command: cmd, Args: args}, Command: cmd, Args: args, Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if att.Instance == "" || att.Endpoint != shared.Endpoint(att.Instance) {
		t.Fatalf("attached %+v", att)
	}
	c.Close()
	if err := e.ended(); err != nil {
		t.Fatal(err)
	}
	sh := e.events("shared")
	if n, d := count[*events.HostDetached](sh); n != 1 || d.Reason != events.DetachHostGone || d.Pid != 4242 || d.Session != "gone" {
		t.Errorf("HostDetached %d %+v: want the host gone", n, d)
	}
	if n, d := count[*events.Disconnected](sh); n != 1 || d.Reason != events.ReasonIdle {
		t.Errorf("%d Disconnected (%+v): want the idle stop", n, d)
	}
	if n, c := count[*events.SessionClosed](sh); n != 1 || c.Reason != "idle" {
		t.Errorf("SessionClosed %d %+v, want idle", n, c)
	}
}

// BenchmarkShareCall compares one echo call on a stdio server of the
// manager's own with one through a shared host.
func BenchmarkShareCall(b *testing.B) {
	for _, mode := range []string{"direct", "shared"} {
		b.Run(mode, func(b *testing.B) {
			e := newShareEnv(b)
			opts := func(o *manager.Options) {}
			if mode == "shared" {
				e.serve(time.Hour)
			} else {
				opts = func(o *manager.Options) { o.Share = nil }
			}
			cmd, args := fixturetest.Command(b)
			m := e.manager("host", b.TempDir(), opts)
			if res, err := m.ConnectServers(b.Context(), []events.ServerConfig{{Name: "fx", Command: cmd, Args: args}}, nil); err != nil || len(res.Errors) > 0 {
				b.Fatalf("connect: %v %v", err, res.Errors)
			}
			tool, ok := m.Tool("mcp_fx_echo")
			if !ok {
				b.Fatal("no echo")
			}
			in := map[string]any{"text": "hi"}
			var took []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if res, err := tool.Call(b.Context(), in); err != nil || res.Err != nil {
					b.Fatal(err, res.Err)
				}
				took = append(took, time.Since(t0))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkShareAttach measures a host's connect (attach, initialize,
// tools/list) to a server that another host keeps running in the shared
// host, until the host has its tools.
func BenchmarkShareAttach(b *testing.B) {
	e := newShareEnv(b)
	e.serve(time.Hour)
	cmd, args := fixturetest.Command(b)
	cfg := []events.ServerConfig{{Name: "fx", Command: cmd, Args: args}}
	cwd := b.TempDir()
	keeper := e.manager("keeper", cwd)
	if res, err := keeper.ConnectServers(b.Context(), cfg, nil); err != nil || len(res.Errors) > 0 {
		b.Fatalf("connect: %v %v", err, res.Errors)
	}
	n := 0
	for b.Loop() {
		n++
		m := e.manager("host"+strconv.Itoa(n), cwd)
		res, err := m.ConnectServers(b.Context(), cfg, nil)
		if err != nil || len(res.Errors) > 0 || len(res.Tools) == 0 {
			b.Fatalf("connect: %v %v", err, res.Errors)
		}
		b.StopTimer()
		m.Close(b.Context())
		b.StartTimer()
	}
}

// TestShareHostGoneCancelsCalls ends a host's control stream while its
// call is inside the server: the shared host cancels the call.
func TestShareHostGoneCancelsCalls(t *testing.T) {
	e := newShareEnv(t)
	e.serve(time.Hour)
	cmd, args := fixturetest.Command(t)
	c, err := shared.Dial(shareCtx(t), e.socket, shared.Hello{Session: "gone", Pid: 4242})
	if err != nil {
		t.Fatal(err)
	}
	att, err := c.Attach(shareCtx(t), shared.Attach{Name: "fx", Config: events.ServerConfig{Command: cmd, Args: args}, Command: cmd, Args: args, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(shareCtx(t), c.Transport(att), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	hold, cancelled := fixturetest.NewGate(t), fixturetest.NewGate(t)
	go cs.CallTool(shareCtx(t), &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"gate": hold.Path(), "on_cancel": cancelled.Path()}})
	if err := hold.WaitReached(shareCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := cancelled.WaitReached(shareCtx(t), 1); err != nil {
		t.Fatalf("the call was not cancelled: %v", err)
	}
}

// TestShareResourcesAndPrompts reads a resource, a templated one and a
// prompt of a shared server through the relay.
func TestShareResourcesAndPrompts(t *testing.T) {
	e := newShareEnv(t)
	e.serve(time.Hour)
	cmd, args := fixturetest.Command(t, "resources=2", "resource-templates", "prompts=1")
	m := e.manager("host", t.TempDir())
	if res, err := m.ConnectServers(shareCtx(t), []events.ServerConfig{{Name: "fx", Command: cmd, Args: args}}, nil); err != nil || len(res.Errors) > 0 {
		t.Fatalf("connect: %v %v", err, res.Errors)
	}
	waitFor(t, m, "the resources and prompts listed", func() bool {
		st, _ := m.View().Server("fx")
		return len(st.Resources) == 2 && len(st.Templates) == 1 && len(st.Prompts) == 1
	})
	st, _ := m.View().Server("fx")
	res, err := m.ReadResource(shareCtx(t), "fx", st.Resources[0].URI)
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != fixture.ResourceText(st.Resources[0].URI, 1) {
		t.Errorf("read %s: %v %+v", st.Resources[0].URI, err, res)
	}
	uri := strings.Replace(st.Templates[0].URITemplate, "{id}", "abc", 1)
	if res, err := m.ReadResource(shareCtx(t), "fx", uri); err != nil || len(res.Contents) != 1 || res.Contents[0].Text != fixture.ResourceText(uri, 1) {
		t.Errorf("read %s through its template: %v %+v", uri, err, res)
	}
	p, err := m.GetPrompt(shareCtx(t), "fx", st.Prompts[0].Name, map[string]string{"topic": "moon"})
	if err != nil || len(p.Messages) != 1 {
		t.Errorf("prompt: %v %+v", err, p)
	}
}

// TestShareElicitationGoesToTheCaller has a shared server ask for input
// inside a call: the host whose call it is answers (or, not answering
// elicitation, has it declined).
func TestShareElicitationGoesToTheCaller(t *testing.T) {
	e := newShareEnv(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "go on?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean","default":true}}}`)})
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action}}}, nil
	})
	e.serveWith(&sharedhost.Options{Idle: time.Hour, Manager: &manager.Options{
		Dial: func(ctx context.Context, cfg events.ServerConfig) (mcp.Transport, error) {
			ct, st := mcp.NewInMemoryTransports()
			if _, err := srv.Connect(ctx, st, nil); err != nil {
				return nil, err
			}
			return ct, nil
		},
	}})
	cfg := []events.ServerConfig{{Name: "asker", Command: "in-memory"}}
	cwd := t.TempDir()
	answers := e.manager("answers", cwd, func(o *manager.Options) { o.Elicit = manager.AcceptElicitationDefaults })
	silent := e.manager("silent", cwd)
	for _, m := range []*manager.Manager{answers, silent} {
		if res, err := m.ConnectServers(shareCtx(t), cfg, nil); err != nil || len(res.Errors) > 0 {
			t.Fatalf("connect: %v %v", err, res.Errors)
		}
	}
	for m, want := range map[*manager.Manager]string{answers: "accept", silent: "decline"} {
		tool, ok := m.Tool("mcp_asker_ask")
		if !ok {
			t.Fatalf("%s: no ask tool", m.Session())
		}
		res, err := tool.Call(shareCtx(t), nil)
		if err != nil || res.Err != nil || res.Text() != want {
			t.Errorf("%s: ask: %v %v %q, want %q", m.Session(), err, res.Err, res.Text(), want)
		}
	}
	answers.Close(shareCtx(t)) // stores the events recorded without waiting
	if n, _ := count[*events.ElicitationAnswered](e.events("answers")); n != 1 {
		t.Errorf("the answering host recorded %d ElicitationAnswered, want 1", n)
	}
}

// TestShareWithoutSharedHostRunsHere asks for sharing where no shared host
// runs and none can be started: the server runs in this process, recorded
// with transport stdio, and the log says why.
func TestShareWithoutSharedHostRunsHere(t *testing.T) {
	for name, share := range map[string]*manager.ShareOptions{
		"no start":       {NoStart: true},
		"missing binary": {Start: []string{filepath.Join(t.TempDir(), "no-such-mcp-audit"), "daemon"}},
	} {
		t.Run(name, func(t *testing.T) {
			e := newShareEnv(t)
			share.Socket = e.socket
			var log strings.Builder
			var mu sync.Mutex
			m := e.manager("host", t.TempDir(), func(o *manager.Options) {
				o.Share = share
				o.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &log}, nil))
			})
			cmd, args := fixturetest.Command(t)
			if res, err := m.ConnectServers(shareCtx(t), []events.ServerConfig{{Name: "fx", Command: cmd, Args: args}}, nil); err != nil || len(res.Errors) > 0 {
				t.Fatalf("connect: %v %v", err, res.Errors)
			}
			if pid := pidOf(t, m); pid == 0 {
				t.Fatal("no server")
			}
			_, c := count[*events.ServerConnected](e.events("host"))
			if c == nil || c.Transport != events.TransportStdio || c.SharedInstance != "" || c.Pid == 0 {
				t.Errorf("ServerConnected %+v: want the server run here (stdio, a pid)", c)
			}
			mu.Lock()
			defer mu.Unlock()
			if !strings.Contains(log.String(), "not shared") {
				t.Errorf("no log line says why: %s", log.String())
			}
		})
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestShareStreamAndHTTP attaches twice, once on the instance's stream
// and once on its streamable-HTTP endpoint: both call the server, and
// closing either records a detach; a stream is not opened once the
// host's control stream ended, and the shared host refuses one of a host
// it does not know.
func TestShareStreamAndHTTP(t *testing.T) {
	e := newShareEnv(t)
	e.serve(time.Hour)
	cmd, args := fixturetest.Command(t)
	c, err := shared.Dial(t.Context(), e.socket, shared.Hello{Session: "two", Pid: 4343})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a := shared.Attach{Name: "fx", Config: events.ServerConfig{Command: cmd, Args: args}, Command: cmd, Args: args, Cwd: t.TempDir()}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	for _, tr := range []func(shared.Attached) mcp.Transport{c.Transport, c.HTTPTransport} {
		att, err := c.Attach(t.Context(), a)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := client.Connect(t.Context(), tr(att), nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
		if err := cs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
	// A stream of a host the shared host does not know.
	stranger, err := shared.Dial(t.Context(), e.socket, shared.Hello{Session: "stranger", Pid: 4444})
	if err != nil {
		t.Fatal(err)
	}
	att, err := stranger.Attach(t.Context(), a)
	if err != nil {
		t.Fatal(err)
	}
	stranger.Close()
	if _, err := client.Connect(t.Context(), stranger.Transport(att), nil); err == nil {
		t.Error("a stream after the control stream's end connected")
	}
	conn, err := net.Dial("unix", e.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req, _ := http.NewRequest(http.MethodPost, "http://mcplife-shared"+shared.Stream(att.Instance), nil)
	req.Header.Set(shared.HostHeader, "h-unknown")
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", shared.StreamProtocol)
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a stream of an unknown host: %s, want 404", resp.Status)
	}
	c.Close()
	var detached []string
	for _, d := range filter[*events.HostDetached](e.events("shared")) {
		if d.Session == "two" {
			detached = append(detached, d.Reason)
		}
	}
	if want := []string{events.DetachRequested, events.DetachRequested}; !slices.Equal(detached, want) {
		t.Errorf("HostDetached of the host: %v, want %v", detached, want)
	}
}

// TestShareAttachAnswersFirstRequests: a host at 2026-07-28 takes the
// shared server's server/discover and first tools/list from the attach
// answer: neither goes over its stream (its transcript has neither),
// and it has the server's tools and calls them as ever.
func TestShareAttachAnswersFirstRequests(t *testing.T) {
	e := newShareEnv(t)
	e.serve(time.Hour)
	cmd, args := fixturetest.Command(t)
	cfg := events.ServerConfig{Name: "fx", Command: cmd, Args: args}
	m := e.manager("host", t.TempDir(), func(o *manager.Options) {
		o.ProtocolVersion = shared.AnswersProtocol
		o.Transcript = true
	})
	res, err := m.ConnectServers(shareCtx(t), []events.ServerConfig{cfg}, nil)
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("connect: %v %v", err, res.Errors)
	}
	if _, ok := m.Tool("mcp_fx_change_tools"); !ok || len(m.Tools()) != len(fixture.BuiltinTools) {
		t.Fatalf("tools %v, want the fixture's %d", m.Tools(), len(fixture.BuiltinTools))
	}
	tool, _ := m.Tool("mcp_fx_echo")
	if r, err := tool.Call(shareCtx(t), map[string]any{"text": "hi"}); err != nil || r.Err != nil || r.Text() != "hi" {
		t.Fatalf("echo: %v %v %q", err, r.Err, r.Text())
	}
	m.Close(shareCtx(t))
	lines, err := e.st.(store.TranscriptStore).ReadTranscript(shareCtx(t), "host")
	if err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, l := range lines {
		if l.Direction != store.TranscriptOut {
			continue
		}
		var msg struct {
			Method string `json:"method"`
		}
		json.Unmarshal([]byte(l.Message), &msg)
		sent = append(sent, msg.Method)
	}
	if !slices.Contains(sent, "tools/call") {
		t.Fatalf("the transcript has no call: %v", sent)
	}
	for _, method := range []string{"server/discover", "tools/list"} {
		if slices.Contains(sent, method) {
			t.Errorf("%s went over the stream: %v", method, sent)
		}
	}
	listed := filter[*events.ToolsListed](e.events("host"))
	if len(listed) != 1 || listed[0].Cause != events.CauseInitial || listed[0].Count != len(fixture.BuiltinTools) {
		t.Errorf("ToolsListed %+v, want one initial list of the fixture's tools", listed)
	}
}

// TestShareAttachAnswersFollowChanges: the tools change after an attach
// answered and before its stream opened; the stream is told when its
// listen is acknowledged, and a list over it has the change.
func TestShareAttachAnswersFollowChanges(t *testing.T) {
	e := newShareEnv(t)
	e.serve(time.Hour)
	cmd, args := fixturetest.Command(t)
	a := shared.Attach{Name: "fx", Config: events.ServerConfig{Name: "fx", Command: cmd, Args: args}, Command: cmd, Args: args, Cwd: t.TempDir()}
	// connect attaches a host and opens its stream at the answers'
	// version; its list changes are signalled on the returned channel.
	connect := func(c *shared.Client, att shared.Attached) (*mcp.ClientSession, <-chan struct{}) {
		t.Helper()
		changed := make(chan struct{}, 1)
		client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				select {
				case changed <- struct{}{}:
				default:
				}
			},
		})
		tr := c.Transport(att)
		client.AddSendingMiddleware(shared.Answering(tr))
		cs, err := client.Connect(shareCtx(t), tr, &mcp.ClientSessionOptions{ProtocolVersion: shared.AnswersProtocol})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs, changed
	}
	dial := func(session string) *shared.Client {
		t.Helper()
		c, err := shared.Dial(shareCtx(t), e.socket, shared.Hello{Session: session, Pid: 4545})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	hasLater := func(tools []*mcp.Tool) bool {
		return slices.ContainsFunc(tools, func(t *mcp.Tool) bool { return t.Name == "later" })
	}
	c1, c2 := dial("one"), dial("two")
	att1, err := c1.Attach(shareCtx(t), a)
	if err != nil {
		t.Fatal(err)
	}
	cs1, changed1 := connect(c1, att1)
	att2, err := c2.Attach(shareCtx(t), a)
	if err != nil {
		t.Fatal(err)
	}
	if att2.Instance != att1.Instance || att2.Answers == nil {
		t.Fatalf("second attach: instance %s (want %s), answers %v", att2.Instance, att1.Instance, att2.Answers != nil)
	}
	// The first host adds a tool; once it is told, the relay has it.
	if res, err := cs1.CallTool(shareCtx(t), &mcp.CallToolParams{Name: "change_tools", Arguments: map[string]any{"add": "later"}}); err != nil || res.IsError {
		t.Fatalf("change_tools: %v %+v", err, res)
	}
	waited := shareCtx(t)
	select {
	case <-changed1:
	case <-waited.Done():
		t.Fatal("the first stream was never told of the change")
	}
	tr2 := c2.Transport(att2)
	if first, ok := shared.FirstTools(tr2, shared.AnswersProtocol); !ok || hasLater(first.Tools) {
		t.Fatalf("the second attach answer's tools (%v): want them without the later tool", ok)
	}
	cs2, changed2 := connect(c2, att2)
	select {
	case <-changed2:
	case <-waited.Done():
		t.Fatal("the second stream was never told that the tools changed since its attach answer")
	}
	list, err := cs2.ListTools(shareCtx(t), &mcp.ListToolsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if !hasLater(list.Tools) {
		t.Errorf("the list over the second stream has no later tool")
	}
}

// countingListener counts the connections it accepted.
type countingListener struct {
	net.Listener
	mu sync.Mutex
	n  int
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.n++
		l.mu.Unlock()
	}
	return c, err
}

func (l *countingListener) accepted() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// TestShareAttachOpensTheStream: a host attaching servers opens one
// connection for its control stream and one per server, whose attach and
// stream share it; the servers work over it, and the host's close of
// each detaches it on request.
func TestShareAttachOpensTheStream(t *testing.T) {
	e := newShareEnv(t)
	l, err := shared.Listen(e.socket)
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: l}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { e.served <- sharedhost.Serve(ctx, cl, e.j, "shared", &sharedhost.Options{Idle: time.Hour}) }()
	cmd, args := fixturetest.Command(t)
	var cfgs []events.ServerConfig
	for i := range 3 {
		cfgs = append(cfgs, events.ServerConfig{Name: "fx" + strconv.Itoa(i), Command: cmd, Args: args})
	}
	m := e.manager("host", t.TempDir())
	res, err := m.ConnectServers(shareCtx(t), cfgs, nil)
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("connect: %v %v", err, res.Errors)
	}
	for _, cfg := range cfgs {
		tool, ok := m.Tool("mcp_" + cfg.Name + "_echo")
		if !ok {
			t.Fatalf("no echo of %s in %v", cfg.Name, m.Tools())
		}
		if r, err := tool.Call(shareCtx(t), map[string]any{"text": cfg.Name}); err != nil || r.Err != nil || r.Text() != cfg.Name {
			t.Fatalf("echo of %s: %v %v %q", cfg.Name, err, r.Err, r.Text())
		}
	}
	if got, want := cl.accepted(), 1+len(cfgs); got != want {
		t.Errorf("the shared host accepted %d connections, want %d (the control stream and one per server)", got, want)
	}
	if err := m.DisconnectAll(shareCtx(t)); err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, d := range filter[*events.HostDetached](e.events("shared")) {
		reasons = append(reasons, d.Reason)
	}
	if want := []string{events.DetachRequested, events.DetachRequested, events.DetachRequested}; !slices.Equal(reasons, want) {
		t.Errorf("HostDetached reasons %v, want %v", reasons, want)
	}
}
