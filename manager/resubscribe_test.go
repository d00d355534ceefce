package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/projector"
)

// subsServer is an in-memory go-sdk server with resources whose
// subscriptions the test follows per connection: which URIs each
// connection asked to be subscribed to or unsubscribed from, and when a
// subscription took effect (the server notifies its subscribers from
// then on). A URI in refuse is refused from the second connection on, or
// from the first when refuseFirst is set.
type subsServer struct {
	srv         *mcp.Server
	refuse      string
	refuseFirst bool
	// hold, when set, holds every dial after the first until it is closed.
	hold chan struct{}

	mu       sync.Mutex
	sessions []*mcp.ServerSession // in connection order
	asked    chan string          // "N subscribe URI", "N unsubscribe URI" (N: the connection, from 1)
	took     chan string          // "N URI": the subscription is in effect
}

func newSubsServer(refuse string, uris ...string) *subsServer {
	ss := &subsServer{refuse: refuse, asked: make(chan string, 32), took: make(chan string, 32)}
	ss.srv = mcp.NewServer(&mcp.Implementation{Name: "subs", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			n := ss.conn(req.Session)
			ss.asked <- fmt.Sprintf("%d subscribe %s", n, req.Params.URI)
			if (n > 1 || ss.refuseFirst) && req.Params.URI == ss.refuse {
				return errors.New("no longer subscribable")
			}
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			ss.asked <- fmt.Sprintf("%d unsubscribe %s", ss.conn(req.Session), req.Params.URI)
			return nil
		},
	})
	for _, uri := range uris {
		ss.srv.AddResource(&mcp.Resource{URI: uri, Name: uri}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}}, nil
		})
	}
	// A legacy subscription is in effect once its resources/subscribe is
	// answered; a subscriptions/listen one once the server acknowledged it.
	ss.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "resources/subscribe" && err == nil {
				ss.took <- fmt.Sprintf("%d %s", ss.conn(req.GetSession()), req.GetParams().(*mcp.SubscribeParams).URI)
			}
			return res, err
		}
	})
	ss.srv.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if p, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok && err == nil {
				for _, uri := range p.Notifications.ResourceSubscriptions {
					ss.took <- fmt.Sprintf("%d %s", ss.conn(req.GetSession()), uri)
				}
			}
			return res, err
		}
	})
	return ss
}

// conn returns the number of the connection of session (from 1).
func (ss *subsServer) conn(session mcp.Session) int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for i, s := range ss.sessions {
		if mcp.Session(s) == session {
			return i + 1
		}
	}
	return 0
}

func (ss *subsServer) dial(ctx context.Context, _ events.ServerConfig) (mcp.Transport, error) {
	ss.mu.Lock()
	again := len(ss.sessions) > 0
	ss.mu.Unlock()
	if again && ss.hold != nil {
		select {
		case <-ss.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	ct, st := mcp.NewInMemoryTransports()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, err := ss.srv.Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	ss.sessions = append(ss.sessions, s)
	return ct, nil
}

// drop closes the server's side of its latest connection.
func (ss *subsServer) drop() {
	ss.mu.Lock()
	s := ss.sessions[len(ss.sessions)-1]
	ss.mu.Unlock()
	s.Close()
}

// logLines is a slog handler that sends each record's message on a
// channel, and keeps the records.
type logLines struct {
	records
	msgs chan string
}

func (l *logLines) Handle(ctx context.Context, rec slog.Record) error {
	l.records.Handle(ctx, rec)
	select {
	case l.msgs <- rec.Message:
	default:
	}
	return nil
}
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logLines) WithGroup(string) slog.Handler      { return l }

// awaitOne returns the next value of ch for which keep is true, failing the
// test when ctx ends first.
func awaitOne(t *testing.T, ctx context.Context, ch <-chan string, what string, keep func(string) bool) string {
	t.Helper()
	for {
		select {
		case v := <-ch:
			if keep(v) {
				return v
			}
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		}
	}
}

// TestResubscribeAfterReconnect: a server whose connection dropped is
// subscribed again, on its new connection, to the URIs the session is
// still subscribed to (not to one it unsubscribed from), so an update
// after the reconnect reaches Options.OnResourceUpdated and is recorded;
// a URI the server refuses then is logged and the reconnect goes on.
// Under 2026-07-28 each subscription is a subscriptions/listen stream the
// new connection opens again, and a subscribe returns once the server
// acknowledged it.
func TestResubscribeAfterReconnect(t *testing.T) {
	const r1, r2, r3 = "test://r/1", "test://r/2", "test://r/3"
	for _, pv := range []string{legacyProtocol, modernProtocol} {
		t.Run(pv, func(t *testing.T) {
			ss := newSubsServer(r3, r1, r2, r3)
			reported := make(chan string, 16)
			logs := &logLines{msgs: make(chan string, 64)}
			e := newEnv(t, &Options{
				ProtocolVersion:   pv,
				Dial:              ss.dial,
				Logger:            slog.New(logs),
				Reconnect:         ReconnectPolicy{Initial: time.Millisecond, NoJitter: true},
				OnResourceUpdated: func(server, uri string) { reported <- server + " " + uri },
			})
			ctx := testCtx(t)
			// The timeout bounds the wait for the acknowledgement of a
			// refused subscriptions/listen stream.
			cfg := events.ServerConfig{Name: "lib", Command: "x", TimeoutMs: ms(3000)}
			if res, err := e.m.ConnectServers(ctx, []events.ServerConfig{cfg}, nil); err != nil || len(res.Errors) > 0 {
				t.Fatal(res, err)
			}
			if err := e.m.WaitReady(ctx); err != nil {
				t.Fatal(err)
			}
			for _, uri := range []string{r1, r2, r3} {
				if err := e.m.SubscribeResource(ctx, "lib", uri); err != nil {
					t.Fatal(err)
				}
				awaitOne(t, ctx, ss.took, "the first subscription to "+uri, func(v string) bool { return v == "1 "+uri })
			}
			if err := e.m.UnsubscribeResource(ctx, "lib", r2); err != nil {
				t.Fatal(err)
			}
			awaitOne(t, ctx, ss.asked, "the unsubscribe", func(v string) bool { return v == "1 unsubscribe "+r2 })
			if err := ss.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: r1}); err != nil {
				t.Fatal(err)
			}
			if got := awaitOne(t, ctx, reported, "the update before the drop", func(string) bool { return true }); got != "lib "+r1 {
				t.Fatalf("reported %q before the drop", got)
			}

			ss.drop()
			var again []string
			for len(again) < 2 {
				again = append(again, awaitOne(t, ctx, ss.asked, "the subscribes of the new connection", func(v string) bool { return v[0] == '2' }))
			}
			slices.Sort(again) // under 2026-07-28 each stream's request is handled on its own
			if want := []string{"2 subscribe " + r1, "2 subscribe " + r3}; !slices.Equal(again, want) {
				t.Fatalf("the new connection was asked %q, want %q (and nothing of %s)", again, want, r2)
			}
			awaitOne(t, ctx, ss.took, "the subscription of the new connection", func(v string) bool { return v == "2 "+r1 })
			if err := ss.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: r1}); err != nil {
				t.Fatal(err)
			}
			if got := awaitOne(t, ctx, reported, "the update after the reconnect", func(string) bool { return true }); got != "lib "+r1 {
				t.Fatalf("reported %q after the reconnect", got)
			}
			const refused = "MCP server refused a resource subscription after its reconnect; the next connection asks again"
			// Under 2026-07-28 the refused stream is never acknowledged:
			// it is logged once the server's timeout passed.
			awaitOne(t, ctx, logs.msgs, "the log of the refusal", func(v string) bool { return v == refused })
			if got := logs.serverLogs(refused); len(got) != 1 || !strings.HasPrefix(got[0], "WARN server=lib uri="+r3+" err=") {
				t.Errorf("the refusal's log: %q", got)
			}
			if err := e.m.WaitReady(ctx); err != nil {
				t.Fatal(err)
			}
			if st := e.m.Status("lib"); st != projector.StatusConnected {
				t.Fatalf("status after the reconnect: %s", st)
			}

			// The refused URI is not subscribed on the new connection: its
			// unsubscribe asks the server nothing; r1's does.
			for _, uri := range []string{r3, r1} {
				if err := e.m.UnsubscribeResource(ctx, "lib", uri); err != nil {
					t.Fatal(err)
				}
			}
			if got := awaitOne(t, ctx, ss.asked, "the unsubscribe after the reconnect", func(v string) bool { return v[0] == '2' }); got != "2 unsubscribe "+r1 {
				t.Fatalf("after the reconnect the server was asked %q, want unsubscribe %s", got, r1)
			}

			var recorded []string
			for _, ev := range ofType[*events.ResourceUpdated](e, "s1") {
				recorded = append(recorded, ev.Server+" "+ev.URI)
			}
			if want := []string{"lib " + r1, "lib " + r1}; !slices.Equal(recorded, want) {
				t.Errorf("ResourceUpdated events %q, want %q", recorded, want)
			}
		})
	}
}

// TestResubscribeAfterRestart: a stdio server that exits is started again
// and the new process is subscribed to the URIs the session is subscribed
// to, so its update reaches the session.
func TestResubscribeAfterRestart(t *testing.T) {
	update := fixturetest.NewGate(t)
	cfg := stdio(t, "lib", "only=crash", "resources=2", update.Arg("update-resource-on-release"))
	reported := make(chan string, 10)
	e := newEnv(t, &Options{
		Reconnect:         ReconnectPolicy{Initial: time.Millisecond, NoJitter: true},
		OnResourceUpdated: func(server, uri string) { reported <- server + " " + uri },
	})
	ctx := testCtx(t)
	updates, err := e.m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := e.m.ConnectServers(ctx, []events.ServerConfig{cfg}, nil); err != nil || len(res.Errors) > 0 {
		t.Fatal(res, err)
	}
	if err := e.m.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	first, _ := e.m.View().Server("lib")
	if err := e.m.SubscribeResource(ctx, "lib", fixture.ResourceURI(1, 2)); err != nil {
		t.Fatal(err)
	}
	tool(t, e.m, "mcp_lib_crash").Call(ctx, map[string]any{"code": 3}) // the process exits in the call
	waitFor(t, ctx, updates, func() bool {
		st, _ := e.m.View().Server("lib")
		return st.Status == projector.StatusConnected && st.Pid != first.Pid && !st.ToolsListedAt.IsZero()
	})
	// The resubscribe is answered before the new connection's lists
	// count as ready.
	if err := e.m.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	update.Release()
	select {
	case got := <-reported:
		if want := "lib " + fixture.ResourceURI(1, 2); got != want {
			t.Fatalf("reported %q, want %q", got, want)
		}
	case <-ctx.Done():
		t.Fatal("the update of the restarted server was not reported")
	}
}

// TestUnsubscribeDuringReconnect: an unsubscribe made while the server
// reconnects, which waits for the new connection, and the manager's
// subscribing that connection again happen one after the other, in
// whichever order: the new connection ends up without the URI, so the
// server's update of it reaches nobody while one of a URI subscribed to
// after it does.
func TestUnsubscribeDuringReconnect(t *testing.T) {
	const r1, r2 = "test://r/1", "test://r/2"
	for _, pv := range []string{legacyProtocol, modernProtocol} {
		t.Run(pv, func(t *testing.T) {
			ss := newSubsServer("", r1, r2)
			ss.hold = make(chan struct{})
			reported := make(chan string, 16)
			e := newEnv(t, &Options{
				ProtocolVersion:   pv,
				Dial:              ss.dial,
				Reconnect:         ReconnectPolicy{Initial: time.Millisecond, NoJitter: true},
				OnResourceUpdated: func(server, uri string) { reported <- server + " " + uri },
			})
			ctx := testCtx(t)
			updates, err := e.m.Watch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if res, err := e.m.ConnectServers(ctx, []events.ServerConfig{{Name: "lib", Command: "x"}}, nil); err != nil || len(res.Errors) > 0 {
				t.Fatal(res, err)
			}
			if err := e.m.SubscribeResource(ctx, "lib", r1); err != nil {
				t.Fatal(err)
			}
			awaitOne(t, ctx, ss.took, "the first subscription", func(v string) bool { return v == "1 "+r1 })
			ss.drop()
			// The reconnect's dial is held: the unsubscribe waits for it.
			waitFor(t, ctx, updates, func() bool { return e.m.Status("lib") != projector.StatusConnected })
			unsubscribed := make(chan error, 1)
			go func() { unsubscribed <- e.m.UnsubscribeResource(ctx, "lib", r1) }()
			close(ss.hold)
			select {
			case err := <-unsubscribed:
				if err != nil {
					t.Fatal(err)
				}
			case <-ctx.Done():
				t.Fatal("the unsubscribe did not return")
			}
			if err := e.m.WaitReady(ctx); err != nil {
				t.Fatal(err)
			}
			if err := e.m.SubscribeResource(ctx, "lib", r2); err != nil {
				t.Fatal(err)
			}
			awaitOne(t, ctx, ss.took, "the subscription after the reconnect", func(v string) bool { return v == "2 "+r2 })
			for _, uri := range []string{r1, r2} {
				if err := ss.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
					t.Fatal(err)
				}
			}
			// The server sends its updates in order: had r1 been
			// subscribed again, its update would come first.
			if got := awaitOne(t, ctx, reported, "an update", func(string) bool { return true }); got != "lib "+r2 {
				t.Fatalf("reported %q first, want lib %s", got, r2)
			}
		})
	}
}

// TestSubscribeRefused: a subscribe the server refuses fails, under
// 2026-07-28 once the server's timeout passed without the listen stream's
// acknowledgement; the stream is closed, so asking again asks the server
// again, and other URIs are subscribed to as ever.
func TestSubscribeRefused(t *testing.T) {
	const r1, r2 = "test://r/1", "test://r/2"
	for _, pv := range []string{legacyProtocol, modernProtocol} {
		t.Run(pv, func(t *testing.T) {
			ss := newSubsServer(r1, r1, r2)
			ss.refuseFirst = true
			e := newEnv(t, &Options{ProtocolVersion: pv, Dial: ss.dial})
			ctx := testCtx(t)
			cfg := events.ServerConfig{Name: "lib", Command: "x", TimeoutMs: ms(1000)}
			if res, err := e.m.ConnectServers(ctx, []events.ServerConfig{cfg}, nil); err != nil || len(res.Errors) > 0 {
				t.Fatal(res, err)
			}
			for range 2 {
				err := e.m.SubscribeResource(ctx, "lib", r1)
				if err == nil {
					t.Fatal("a refused subscribe succeeded")
				}
				if pv == modernProtocol && !errors.Is(err, errNotAcknowledged) {
					t.Fatalf("refused subscribe: %v", err)
				}
				awaitOne(t, ctx, ss.asked, "the subscribe", func(v string) bool { return v == "1 subscribe "+r1 })
			}
			if err := e.m.SubscribeResource(ctx, "lib", r2); err != nil {
				t.Fatal(err)
			}
			awaitOne(t, ctx, ss.took, "the subscription to "+r2, func(v string) bool { return v == "1 "+r2 })
		})
	}
}
