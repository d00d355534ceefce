package manager

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager/internal/transport"
	"github.com/mcplife/mcplife/store/memory"
)

// probeServer is one go-sdk server that counts the requests it receives
// by method, and can answer server/discover as a server of the legacy
// era does (method not found).
type probeServer struct {
	srv *mcp.Server

	mu      sync.Mutex
	methods map[string]int
	legacy  bool // server/discover is answered with method not found
	// seen gets the method of each request received and "acked" for each
	// listen acknowledged, while it has room.
	seen     chan string
	sessions []*mcp.ServerSession // in memory
}

// newProbeServer returns a server with the options o (nil: none).
func newProbeServer(o ...*mcp.ServerOptions) *probeServer {
	ps := &probeServer{methods: map[string]int{}, seen: make(chan string, 256)}
	var opts *mcp.ServerOptions
	if len(o) > 0 {
		opts = o[0]
	}
	ps.srv = mcp.NewServer(&mcp.Implementation{Name: "a", Version: "1"}, opts)
	ps.addTool("echo")
	ps.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ps.mu.Lock()
			ps.methods[method]++
			legacy := ps.legacy
			ps.mu.Unlock()
			ps.see(method)
			if method == "server/discover" && legacy {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}
			}
			return next(ctx, method, req)
		}
	})
	ps.srv.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "notifications/subscriptions/acknowledged" {
				ps.see("acked") // the listen is registered: list changes reach it
			}
			return res, err
		}
	})
	return ps
}

func (ps *probeServer) addTool(name string) {
	ps.srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
}

// dial connects a new session of the server in memory.
func (ps *probeServer) dial(string, events.ServerConfig, transport.Resolved, string) (mcp.Transport, error) {
	st, ct := mcp.NewInMemoryTransports()
	ss, err := ps.srv.Connect(context.Background(), st, nil)
	if err != nil {
		return nil, err
	}
	ps.mu.Lock()
	ps.sessions = append(ps.sessions, ss)
	ps.mu.Unlock()
	return ct, nil
}

// drop closes the server side of every in-memory session.
func (ps *probeServer) drop() {
	ps.mu.Lock()
	ss := ps.sessions
	ps.sessions = nil
	ps.mu.Unlock()
	for _, s := range ss {
		s.Close()
	}
}

func (ps *probeServer) see(what string) {
	select {
	case ps.seen <- what:
	default:
	}
}

// await reads ps.seen until it got n of what.
func (ps *probeServer) await(t *testing.T, ctx context.Context, what string, n int) {
	t.Helper()
	for n > 0 {
		select {
		case got := <-ps.seen:
			if got == what {
				n--
			}
		case <-ctx.Done():
			t.Fatalf("waiting for %d more %s: %v", n, what, ctx.Err())
		}
	}
}

// count returns how many requests of method the server received.
func (ps *probeServer) count(method string) int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.methods[method]
}

func (ps *probeServer) setLegacy(v bool) {
	ps.mu.Lock()
	ps.legacy = v
	ps.mu.Unlock()
}

// newProbeEnv is a manager on a fake clock whose servers are ps.
func newProbeEnv(t *testing.T, opts Options, ps *probeServer) *reconnectEnv {
	t.Helper()
	e := newReconnectEnv(t, opts)
	e.m.dial = ps.dial
	return e
}

// lifeStory returns the lines of a connection's life in evs, from the
// first event of type from on: connects, lists, list changes, drops and
// reconnects; a list without its cache hints, and no era records, which
// these tests do not judge.
func lifeStory(evs []events.Event, from string) []string {
	var out []string
	for _, ev := range evs {
		if len(out) == 0 && ev.Type() != from {
			continue
		}
		switch x := ev.(type) {
		case *events.ToolsListed:
			var names []string
			for _, d := range x.Tools {
				names = append(names, d.Name)
			}
			out = append(out, fmt.Sprintf("ToolsListed %s cause=%s tools=%v", x.Server, x.Cause, names))
		case *events.Disconnected, *events.ReconnectScheduled, *events.ConnectStarted, *events.ServerConnected, *events.ToolListChanged:
			out = append(out, ev.Type()+" "+events.Describe(ev))
		}
	}
	return out
}

// decoded returns the session's events, decoded.
func (e *reconnectEnv) decoded() []events.Event {
	e.t.Helper()
	var out []events.Event
	for _, env := range e.envelopes() {
		ev, err := events.Decode(env)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// noDrops fails the test when the session recorded a Disconnected.
func noDrops(t *testing.T, e *reconnectEnv) {
	t.Helper()
	if got := e.story(events.TypeDisconnected); len(got) > 0 {
		t.Errorf("a healthy server was dropped: %q", got)
	}
}

// TestModernServerIsCheckedWithDiscover: a server that negotiated
// 2026-07-28 (which has no ping) is health-checked with server/discover,
// once per interval, and stays connected.
func TestModernServerIsCheckedWithDiscover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ps := newProbeServer()
		e := newProbeEnv(t, Options{ProtocolVersion: "2026-07-28", Health: HealthOptions{Interval: time.Second}}, ps)
		defer e.close()
		e.connect("a")
		connect := ps.count("server/discover")
		if connect != 1 {
			t.Fatalf("the connect sent %d server/discover, want 1", connect)
		}
		time.Sleep(10*time.Second + time.Second/2)
		e.flush()
		if n := ps.count("server/discover") - connect; n != 10 {
			t.Errorf("%d server/discover in 10 intervals, want 10", n)
		}
		if n := ps.count("ping"); n != 0 {
			t.Errorf("%d pings sent to a server without ping", n)
		}
		noDrops(t, e)
		if got := e.story(events.TypeServerConnected); len(got) == 0 || got[0] != "ServerConnected a protocol=2026-07-28 peer=a" {
			t.Errorf("connected as %q, want protocol 2026-07-28", got)
		}
	})
}

// TestLegacyServerIsStillPinged: a server that negotiated a version with
// ping is pinged, never sent server/discover.
func TestLegacyServerIsStillPinged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ps := newProbeServer()
		e := newProbeEnv(t, Options{Health: HealthOptions{Interval: time.Second}}, ps)
		defer e.close()
		e.connect("a")
		time.Sleep(10*time.Second + time.Second/2)
		e.flush()
		if n := ps.count("ping"); n != 10 {
			t.Errorf("%d pings in 10 intervals, want 10", n)
		}
		if n := ps.count("server/discover"); n != 0 {
			t.Errorf("%d server/discover sent to a legacy server", n)
		}
		noDrops(t, e)
	})
}

// TestEraErrorOnHealthCheckProbesTheEraAgain: a server/discover answered
// with method not found is no sign of an unresponsive server but of one
// that no longer speaks 2026-07-28: the connection is closed with reason
// error and the reconnect probes on the wire, though the era recorded
// from the first connect is still fresh, here falling back to
// initialize; the server is pinged from then on.
func TestEraErrorOnHealthCheckProbesTheEraAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ps := newProbeServer(discoverKeptAnHour)
		e := newProbeEnv(t, Options{ProtocolVersion: "2026-07-28", Health: HealthOptions{Interval: time.Second}}, ps)
		defer e.close()
		e.connect("a")
		ps.setLegacy(true)
		connect := ps.count("server/discover")
		time.Sleep(time.Second + defaultReconnectInitial + time.Second/4)
		e.flush()
		want := []string{
			`Disconnected a reason=error reconnecting=true error="server/discover answered with an error of another protocol era: connecting again to probe the era"`,
			`ReconnectScheduled a attempt=2 delayMs=500 cause="error"`,
			`ConnectStarted a transport=stdio attempt=2 round=0`,
			`ServerConnected a protocol=2025-11-25 peer=a`,
			`ToolsListed a cause=reconnect tools=[echo]`,
		}
		if diff := cmp.Diff(want, lifeStory(e.decoded(), events.TypeDisconnected)); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		if n := ps.count("server/discover") - connect; n != 2 {
			t.Errorf("%d server/discover reached the server, want 2: the check's and the reconnect's probe", n)
		}
		time.Sleep(2 * time.Second)
		e.flush()
		if n := ps.count("ping"); n == 0 {
			t.Error("the server that fell back to 2025-11-25 was never pinged")
		}
		if got := lifeStory(e.decoded(), events.TypeDisconnected); len(got) != len(want) {
			t.Errorf("more than the one reconnect: %q", got)
		}
	})
}

// discoverKeptAnHour: the server's discover result may be kept for an hour.
var discoverKeptAnHour = &mcp.ServerOptions{SetCacheable: func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	if _, ok := req.GetParams().(*mcp.DiscoverParams); ok {
		c.TTLMs = int(time.Hour.Milliseconds())
	}
}}

// TestHealthCheckReachesTheServer: a server whose discover result may be
// kept for an hour is still sent every health check, also on a
// connection made after its result was known: a check answered without
// the server would check nothing.
func TestHealthCheckReachesTheServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ps := newProbeServer(discoverKeptAnHour)
		e := newProbeEnv(t, Options{ProtocolVersion: "2026-07-28", Health: HealthOptions{Interval: time.Second}}, ps)
		defer e.close()
		e.connect("a")
		ps.drop()
		time.Sleep(defaultReconnectInitial)
		e.flush()
		if got := lifeStory(e.decoded(), events.TypeDisconnected); len(got) < 5 || got[3] != "ServerConnected a protocol=2026-07-28 peer=a" {
			t.Fatalf("no reconnect: %q", got)
		}
		before := ps.count("server/discover")
		time.Sleep(5*time.Second + time.Second/4)
		e.flush()
		if n := ps.count("server/discover") - before; n != 5 {
			t.Errorf("%d server/discover reached the server in 5 intervals after the reconnect, want 5", n)
		}
		if got := lifeStory(e.decoded(), events.TypeDisconnected); len(got) != 5 {
			t.Errorf("dropped again: %q", got)
		}
	})
}

// TestHealthCheckSkippedWhileInUse: a server that answered a call within
// the interval is not checked; one idle for the interval is.
func TestHealthCheckSkippedWhileInUse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ps := newProbeServer()
		e := newProbeEnv(t, Options{ProtocolVersion: "2026-07-28", Health: HealthOptions{Interval: 10 * time.Second}}, ps)
		defer e.close()
		e.connect("a")
		connect := ps.count("server/discover")
		time.Sleep(5 * time.Second)
		if _, err := e.tool("mcp_a_echo").Call(context.Background(), map[string]any{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5*time.Second + time.Second/2) // past the first tick, 5 s after the call
		synctest.Wait()
		if n := ps.count("server/discover") - connect; n != 0 {
			t.Errorf("%d checks of a server that answered a call within the interval", n)
		}
		time.Sleep(10 * time.Second) // past the second tick, 15 s after the call
		synctest.Wait()
		if n := ps.count("server/discover") - connect; n != 1 {
			t.Errorf("%d checks of a server idle for the interval, want 1", n)
		}
		noDrops(t, e)
	})
}

// TestHostResumedChecksWithDiscover: after a sleep of the host, a modern
// remote server is checked at once with server/discover, although it
// answered a call just before (the monotonic clock that dates the call
// stood still while the host slept).
func TestHostResumedChecksWithDiscover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var jump time.Duration
		j, err := journal.New(memory.New(), &journal.Options{Now: func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return time.Now().Add(jump)
		}})
		if err != nil {
			t.Fatal(err)
		}
		m, err := New(j, "s", &Options{Cwd: t.TempDir(), ProtocolVersion: "2026-07-28", Reconnect: ReconnectPolicy{NoJitter: true}})
		if err != nil {
			t.Fatal(err)
		}
		ps := newProbeServer()
		m.dial = ps.dial
		e := &reconnectEnv{t: t, j: j, m: m, ds: newDropServers()}
		defer e.close()
		if _, err := m.ConnectServers(context.Background(), []events.ServerConfig{{Name: "a", Type: "http", URL: "https://mcp.example.com/mcp"}}, nil); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		connect := ps.count("server/discover")
		if _, err := e.tool("mcp_a_echo").Call(context.Background(), map[string]any{}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		jump = time.Hour
		mu.Unlock()
		time.Sleep(defaultClockCheck + time.Second)
		e.flush()
		if n := ps.count("server/discover") - connect; n != 1 {
			t.Errorf("%d server/discover after the host resumed, want 1", n)
		}
		if n := ps.count("ping"); n != 0 {
			t.Errorf("%d pings sent to a server without ping", n)
		}
		if got := e.story(events.TypeHostResumed); len(got) != 1 || got[0] != "HostResumed sleptMs=3600000" {
			t.Errorf("events after the jump: %q", got)
		}
	})
}
