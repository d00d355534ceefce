package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager/internal/transport"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/store/memory"
	"github.com/mcplife/mcplife/verify"
)

// dropServers serves in-memory go-sdk servers whose connections a test can
// drop, whose dials it can make fail, and whose pings it can hold.
type dropServers struct {
	mu       sync.Mutex
	sessions map[string]*mcp.ServerSession
	refuse   map[string]bool
	deaf     map[string]bool // pings are never answered
	// deadPeer: the next tools/call of the server finds its peer gone, as
	// when the process at the other end was killed just before: writing
	// the request fails, and the connection ends.
	deadPeer map[string]bool
	hold     chan struct{} // closed to let the tool "hold" return
}

func newDropServers() *dropServers {
	return &dropServers{sessions: map[string]*mcp.ServerSession{}, refuse: map[string]bool{}, deaf: map[string]bool{}, deadPeer: map[string]bool{}, hold: make(chan struct{})}
}

func (ds *dropServers) dial(name string, _ events.ServerConfig, _ transport.Resolved, _ string) (mcp.Transport, error) {
	ds.mu.Lock()
	refuse := ds.refuse[name]
	ds.mu.Unlock()
	if refuse {
		return nil, errors.New("connection refused")
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	hold := func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-ds.hold:
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "held"}}}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	srv.AddTool(&mcp.Tool{Name: "hold", InputSchema: map[string]any{"type": "object"}}, hold)
	srv.AddTool(&mcp.Tool{Name: "look", InputSchema: map[string]any{"type": "object"}, Annotations: readOnly}, hold)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ds.mu.Lock()
			deaf := ds.deaf[name]
			ds.mu.Unlock()
			if method == "ping" && deaf {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return next(ctx, method, req)
		}
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		return nil, err
	}
	ds.mu.Lock()
	ds.sessions[name] = ss
	ds.mu.Unlock()
	return deadPeerTransport{ct, ds, name}, nil
}

// deadPeerTransport is a client transport of dropServers whose tools/call
// writes fail while the server is marked deadPeer.
type deadPeerTransport struct {
	mcp.Transport
	ds   *dropServers
	name string
}

func (t deadPeerTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return deadPeerConn{c, t.ds, t.name}, nil
}

type deadPeerConn struct {
	mcp.Connection
	ds   *dropServers
	name string
}

func (c deadPeerConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" {
		c.ds.mu.Lock()
		dead := c.ds.deadPeer[c.name]
		c.ds.deadPeer[c.name] = false
		c.ds.mu.Unlock()
		if dead {
			c.ds.drop(c.name)
			return &net.OpError{Op: "write", Net: "unix", Err: syscall.EPIPE}
		}
	}
	return c.Connection.Write(ctx, msg)
}

// drop closes the server side of name's connection.
func (ds *dropServers) drop(name string) {
	ds.mu.Lock()
	ss := ds.sessions[name]
	ds.mu.Unlock()
	ss.Close()
}

func (ds *dropServers) set(m map[string]bool, name string, v bool) {
	ds.mu.Lock()
	m[name] = v
	ds.mu.Unlock()
}

// reconnectEnv is a manager on a fake clock with dropServers.
type reconnectEnv struct {
	t  *testing.T
	j  *journal.Journal
	m  *Manager
	ds *dropServers
}

func newReconnectEnv(t *testing.T, opts Options) *reconnectEnv {
	t.Helper()
	j := memJournal(t, memory.New())
	opts.Cwd = t.TempDir()
	opts.Reconnect.NoJitter = true
	m, err := New(j, "s", &opts)
	if err != nil {
		t.Fatal(err)
	}
	ds := newDropServers()
	m.dial = ds.dial
	return &reconnectEnv{t: t, j: j, m: m, ds: ds}
}

// close closes the manager and the journal and checks the session's
// history against verify's rules.
func (e *reconnectEnv) close() {
	e.t.Helper()
	ctx := context.Background()
	if err := e.m.Close(ctx); err != nil {
		e.t.Error(err)
	}
	for _, v := range verify.Session("s", e.envelopes()) {
		e.t.Errorf("invariant: %s", v)
	}
	e.j.Close()
}

func (e *reconnectEnv) envelopes() []events.Envelope {
	e.t.Helper()
	if err := e.j.Flush(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	var envs []events.Envelope
	for env, err := range e.j.Store().ReadStream(context.Background(), "s", 1) {
		if err != nil {
			e.t.Fatal(err)
		}
		envs = append(envs, env)
	}
	return envs
}

// story returns the session's events from the first of type from on, as
// "Type Describe" lines, skipping tool calls.
func (e *reconnectEnv) story(from string) []string {
	e.t.Helper()
	var out []string
	for _, env := range e.envelopes() {
		if len(out) == 0 && env.Type != from {
			continue
		}
		ev, err := events.Decode(env)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, env.Type+" "+events.Describe(ev))
	}
	return out
}

func (e *reconnectEnv) connect(names ...string) {
	e.t.Helper()
	var cfgs []events.ServerConfig
	for _, n := range names {
		cfgs = append(cfgs, events.ServerConfig{Name: n, Command: n})
	}
	res, err := e.m.ConnectServers(context.Background(), cfgs, nil)
	if err != nil || len(res.Errors) > 0 {
		e.t.Fatalf("connect: %v %v", err, res.Errors)
	}
	synctest.Wait()
}

func (e *reconnectEnv) tool(name string) *Tool {
	e.t.Helper()
	for _, tl := range e.m.Tools() {
		if tl.Name == name {
			return tl
		}
	}
	e.t.Fatalf("no tool %s in %v", name, e.m.Tools())
	return nil
}

func (e *reconnectEnv) flush() {
	e.t.Helper()
	synctest.Wait()
	if err := e.j.Flush(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

// droppedAndBack is the story of server a dropped for reason with error
// errText, reconnected after the first delay, and its tools listed again.
func droppedAndBack(reason, errText string) []string {
	return []string{
		fmt.Sprintf(`Disconnected a reason=%s reconnecting=true error=%q`, reason, errText),
		fmt.Sprintf(`ReconnectScheduled a attempt=2 delayMs=500 cause=%q`, reason),
		`ConnectStarted a transport=stdio attempt=2 round=0`,
		`ServerConnected a protocol=2025-11-25 peer=a`,
		`ToolsListed a cause=reconnect count=3 tools=[echo hold look]`,
	}
}

// TestDropReconnectsAndToolsComeBack: a server whose connection drops is
// reconnected after the first backoff delay; its tools stay in the view,
// deferred, meanwhile, and come back live.
func TestDropReconnectsAndToolsComeBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newReconnectEnv(t, Options{})
		defer e.close()
		e.connect("a", "b")
		e.ds.drop("a")
		e.flush()
		if st := e.m.Status("a"); st != projector.StatusReconnecting {
			t.Fatalf("status after the drop: %s", st)
		}
		for _, tl := range e.m.Tools() {
			if tl.Server == "a" && !tl.Deferred {
				t.Errorf("%s not deferred while reconnecting", tl.Name)
			}
		}
		if n := len(e.m.Tools()); n != 6 {
			t.Errorf("%d tools while reconnecting, want 6: none vanish", n)
		}
		time.Sleep(defaultReconnectInitial)
		e.flush()
		if st := e.m.Status("a"); st != projector.StatusConnected {
			t.Fatalf("status after the reconnect: %s", st)
		}
		for _, tl := range e.m.Tools() {
			if tl.Deferred {
				t.Errorf("%s still deferred", tl.Name)
			}
		}
		want := droppedAndBack("transport closed", "connection closed")
		if diff := cmp.Diff(want, e.story(events.TypeDisconnected)); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
}

// TestCrashLoopTripsTheBreaker: five failed attempts within a minute stop
// the reconnects; the server is failed and its tools are gone until an
// explicit connect re-arms it.
func TestCrashLoopTripsTheBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newReconnectEnv(t, Options{})
		defer e.close()
		e.connect("a")
		e.ds.set(e.ds.refuse, "a", true)
		e.ds.drop("a")
		start := time.Now()
		for e.m.Status("a") != projector.StatusFailed {
			if time.Since(start) > time.Minute {
				t.Fatalf("status %s after a minute", e.m.Status("a"))
			}
			time.Sleep(100 * time.Millisecond)
			e.flush()
		}
		// Delays 0.5 + 1 + 2 + 4 s: the fifth failure (the drop counts,
		// it came right after the connect) gives up.
		if took := time.Since(start).Round(100 * time.Millisecond); took != 7500*time.Millisecond {
			t.Errorf("gave up after %v, want 7.5s", took)
		}
		if n := len(e.m.Tools()); n != 0 {
			t.Errorf("%d tools of a failed server", n)
		}
		want := []string{
			`Disconnected a reason=transport closed reconnecting=true error="connection closed"`,
			`ReconnectScheduled a attempt=2 delayMs=500 cause="transport closed"`,
		}
		for attempt, delay := 2, 1000; attempt <= 5; attempt, delay = attempt+1, delay*2 {
			failed := fmt.Sprintf(`ConnectFailed a timedOut=false error="MCP server \"a\": connect: connection refused"`)
			want = append(want, fmt.Sprintf(`ConnectStarted a transport=stdio attempt=%d round=0`, attempt), failed)
			if attempt < 5 {
				want = append(want, fmt.Sprintf(`ReconnectScheduled a attempt=%d delayMs=%d cause="MCP server \"a\": connect: connection refused"`, attempt+1, delay))
			}
		}
		want = append(want, `ReconnectGaveUp a attempts=5 lastError="MCP server \"a\": connect: connection refused"`)
		if diff := cmp.Diff(want, e.story(events.TypeDisconnected)); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		// Nothing more happens by itself.
		time.Sleep(time.Minute)
		e.flush()
		if got := e.story(events.TypeReconnectGaveUp); len(got) != 1 {
			t.Errorf("events after giving up: %v", got)
		}
		// An explicit connect re-arms it.
		e.ds.set(e.ds.refuse, "a", false)
		e.connect("a")
		if st := e.m.Status("a"); st != projector.StatusConnected {
			t.Errorf("status after an explicit connect: %s", st)
		}
	})
}

// TestCallDuringReconnectWaits: a call made while its server reconnects
// waits for it; a read-only call cut off by the drop is made once more
// after the reconnect; another call cut off fails with the disconnected
// error.
func TestCallDuringReconnectWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newReconnectEnv(t, Options{})
		defer e.close()
		e.connect("a")
		ctx := context.Background()
		look, hold := e.tool("mcp_a_look"), e.tool("mcp_a_hold")
		type out struct {
			text string
			err  error
		}
		call := func(tl *Tool) chan out {
			ch := make(chan out, 1)
			go func() {
				r, err := tl.Call(ctx, nil)
				if r != nil {
					ch <- out{r.Text(), err}
					return
				}
				ch <- out{"", err}
			}()
			return ch
		}
		cutLook, cutHold := call(look), call(hold)
		synctest.Wait() // both are in flight on the server
		e.ds.drop("a")
		synctest.Wait()
		waiting := call(e.tool("mcp_a_echo"))
		synctest.Wait()
		select {
		case o := <-waiting:
			t.Fatalf("call during the reconnect returned at once: %+v", o)
		default:
		}
		if o := <-cutHold; o.text != "MCP error: MCP server disconnected: a" {
			t.Errorf("cut-off call of a tool that is not read-only: %+v", o)
		}
		time.Sleep(defaultReconnectInitial)
		if o := <-waiting; o.text != "ok" || o.err != nil {
			t.Errorf("call during the reconnect: %+v", o)
		}
		synctest.Wait()
		close(e.ds.hold) // the retried read-only call returns
		if o := <-cutLook; o.text != "held" || o.err != nil {
			t.Errorf("retried read-only call: %+v", o)
		}
		e.flush()
		var retried, deferred int
		for _, env := range e.envelopes() {
			ev, _ := events.Decode(env)
			switch x := ev.(type) {
			case *events.ToolCallFinished:
				if x.Retried {
					retried++
				}
			case *events.ToolCallStarted:
				if x.Deferred {
					deferred++
				}
			}
		}
		if retried != 1 || deferred != 1 {
			t.Errorf("%d retried and %d deferred calls recorded, want 1 and 1", retried, deferred)
		}
	})
}

// TestCallNeverSentWaitsForTheReconnect: a call whose request could not
// be written, the connection's other end being gone already, is made on
// the reconnected server, even for a tool that is not read-only: it never
// reached the server, so it cannot run twice. It is not recorded as
// retried.
func TestCallNeverSentWaitsForTheReconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newReconnectEnv(t, Options{})
		defer e.close()
		e.connect("a")
		e.ds.set(e.ds.deadPeer, "a", true)
		r, err := e.tool("mcp_a_echo").Call(context.Background(), nil)
		if err != nil || r.Err != nil || r.Text() != "ok" {
			t.Fatalf("call: %v %+v", err, r)
		}
		e.flush()
		var fins []*events.ToolCallFinished
		var reconnected bool
		for _, env := range e.envelopes() {
			ev, _ := events.Decode(env)
			switch x := ev.(type) {
			case *events.ToolCallFinished:
				fins = append(fins, x)
			case *events.ToolsListed:
				reconnected = reconnected || x.Cause == events.CauseReconnect
			}
		}
		if len(fins) != 1 || fins[0].IsError || fins[0].Retried {
			t.Errorf("ToolCallFinished %+v: want one, answered, not retried", fins)
		}
		if !reconnected {
			t.Error("the call returned without a reconnect")
		}
	})
}

// TestRequestedDisconnectNeverReconnects: a requested disconnect, also of
// a server waiting to reconnect, ends it for good.
func TestRequestedDisconnectNeverReconnects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newReconnectEnv(t, Options{})
		defer e.close()
		e.connect("a", "b")
		ctx := context.Background()
		if err := e.m.DisconnectServer(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		e.ds.drop("b")
		e.flush()
		if err := e.m.DisconnectServer(ctx, "b"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		e.flush()
		for _, name := range []string{"a", "b"} {
			if st := e.m.Status(name); st != projector.StatusDisconnected {
				t.Errorf("%s: %s", name, st)
			}
		}
		for _, line := range e.story(events.TypeDisconnected) {
			if len(line) > 14 && line[:14] == "ConnectStarted" {
				t.Errorf("reconnected after a requested disconnect: %s", line)
			}
		}
	})
}

// TestUnresponsiveServerIsReconnected: a server that stops answering pings
// is dropped with reason unresponsive and reconnected.
func TestUnresponsiveServerIsReconnected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newReconnectEnv(t, Options{})
		defer e.close()
		e.connect("a")
		e.ds.set(e.ds.deaf, "a", true)
		time.Sleep(defaultHealthInterval + defaultHealthTimeout)
		e.flush()
		e.ds.set(e.ds.deaf, "a", false)
		time.Sleep(defaultReconnectInitial)
		e.flush()
		want := droppedAndBack("unresponsive", "no answer to a health check within 10s")
		if diff := cmp.Diff(want, e.story(events.TypeDisconnected)); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
}

// TestHostResumedChecksRemoteServers: a wall clock that jumps an hour past
// the monotonic clock records HostResumed, and a remote server that no
// longer answers is found at once instead of at its next health check.
func TestHostResumedChecksRemoteServers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var jump time.Duration
		st := memory.New()
		j, err := journal.New(st, &journal.Options{Now: func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return time.Now().Add(jump)
		}})
		if err != nil {
			t.Fatal(err)
		}
		m, err := New(j, "s", &Options{Cwd: t.TempDir(), Reconnect: ReconnectPolicy{NoJitter: true}})
		if err != nil {
			t.Fatal(err)
		}
		ds := newDropServers()
		m.dial = ds.dial
		e := &reconnectEnv{t: t, j: j, m: m, ds: ds}
		defer e.close()
		if _, err := m.ConnectServers(context.Background(), []events.ServerConfig{{Name: "web", Type: "http", URL: "https://mcp.example.com/mcp"}}, nil); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		ds.set(ds.deaf, "web", true)
		mu.Lock()
		jump = time.Hour
		mu.Unlock()
		time.Sleep(defaultClockCheck + defaultHealthTimeout)
		e.flush()
		got := e.story(events.TypeHostResumed)
		if len(got) < 2 || got[0] != "HostResumed sleptMs=3600000" ||
			got[1] != `Disconnected web reason=unresponsive reconnecting=true error="no answer to a health check within 10s"` {
			t.Errorf("events after the jump: %q", got)
		}
	})
}

// TestDropsThatComeTooSoonTripTheBreaker: connections that drop within
// 10 s of their connect count as failed attempts; the fifth gives up at
// the drop itself, and an explicit connect brings the server back.
func TestDropsThatComeTooSoonTripTheBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newReconnectEnv(t, Options{})
		defer e.close()
		e.connect("a")
		for i := range 5 {
			e.ds.drop("a")
			e.flush()
			if i < 4 {
				// Delays 0.5, 1, 2, 4 s: each unstable drop continues the
				// backoff.
				time.Sleep(defaultReconnectInitial << i)
				e.flush()
				if st := e.m.Status("a"); st != projector.StatusConnected {
					t.Fatalf("after drop %d: %s", i+1, st)
				}
			}
		}
		if st := e.m.Status("a"); st != projector.StatusFailed {
			t.Fatalf("after five quick drops: %s", st)
		}
		got := e.story(events.TypeReconnectGaveUp)
		if len(got) != 1 || got[0] != `ReconnectGaveUp a attempts=5 lastError="connection closed"` {
			t.Errorf("events from ReconnectGaveUp on: %q", got)
		}
		e.connect("a")
		if st := e.m.Status("a"); st != projector.StatusConnected {
			t.Errorf("status after an explicit connect: %s", st)
		}
	})
}

// TestReconnectNowCutsTheDelayShort: ReconnectNow starts a reconnecting
// server's attempt at once, on the fake clock no time passes; it is
// refused for a connected server and an unknown one.
func TestReconnectNowCutsTheDelayShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newReconnectEnv(t, Options{Reconnect: ReconnectPolicy{Initial: time.Hour, Max: time.Hour, NoJitter: true}})
		defer e.close()
		e.connect("a", "b")
		if err := e.m.ReconnectNow("a"); !errors.Is(err, ErrNotReconnecting) {
			t.Fatalf("connected server: %v", err)
		}
		if err := e.m.ReconnectNow("zz"); !errors.Is(err, ErrUnknownServer) {
			t.Fatalf("unknown server: %v", err)
		}
		e.ds.drop("a")
		e.flush()
		if st := e.m.Status("a"); st != projector.StatusReconnecting {
			t.Fatalf("status after the drop: %s", st)
		}
		start := time.Now()
		if err := e.m.ReconnectNow("a"); err != nil {
			t.Fatal(err)
		}
		e.flush()
		if st := e.m.Status("a"); st != projector.StatusConnected {
			t.Fatalf("status after ReconnectNow: %s", st)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("reconnect waited %v", waited)
		}
		want := droppedAndBack("transport closed", "connection closed")
		want[1] = `ReconnectScheduled a attempt=2 delayMs=3600000 cause="transport closed"`
		if diff := cmp.Diff(want, e.story(events.TypeDisconnected)); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
}
