package sharedhost_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
)

func TestMain(m *testing.M) {
	fixture.RunIfChild()
	os.Exit(m.Run())
}

// deadline bounds every wait of these tests.
const deadline = 2 * time.Minute

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	t.Cleanup(cancel)
	return ctx
}

// spliceEnv is a shared host serving in this process, its session
// "shared" in st.
type spliceEnv struct {
	t      *testing.T
	st     store.Store
	j      *journal.Journal
	socket string
	cwd    string
	inMem  bool     // the server is srv of newSpliceEnv, not the fixture
	fx     []string // the fixture's behaviours
}

// newSpliceEnv serves a shared host whose servers are the fixture, or,
// given srv, srv in this process.
func newSpliceEnv(t *testing.T, srv ...*mcp.Server) *spliceEnv {
	t.Helper()
	return serveSplice(t, &sharedhost.Options{Idle: time.Hour}, nil, srv...)
}

// newFixtureEnv serves a shared host whose servers are the fixture with
// behaviours fx, reconnected at once after a drop.
func newFixtureEnv(t *testing.T, fx ...string) *spliceEnv {
	t.Helper()
	return serveSplice(t, &sharedhost.Options{Idle: time.Hour, Manager: &manager.Options{
		Reconnect: manager.ReconnectPolicy{Initial: time.Millisecond, NoJitter: true},
	}}, fx)
}

func serveSplice(t *testing.T, opts *sharedhost.Options, fx []string, srv ...*mcp.Server) *spliceEnv {
	t.Helper()
	if len(srv) > 0 {
		opts.Manager = &manager.Options{Dial: func(ctx context.Context, cfg events.ServerConfig) (mcp.Transport, error) {
			ct, st := mcp.NewInMemoryTransports()
			if _, err := srv[0].Connect(ctx, st, nil); err != nil {
				return nil, err
			}
			return ct, nil
		}}
	}
	st := memory.New()
	j, err := journal.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	e := &spliceEnv{t: t, st: st, j: j, socket: filepath.Join(t.TempDir(), "run", shared.SocketName), cwd: t.TempDir(), inMem: len(srv) > 0, fx: fx}
	l, err := shared.Listen(e.socket)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sharedhost.Serve(ctx, l, j, "shared", opts) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("shared host: %v", err)
			}
		case <-time.After(deadline):
			t.Error("the shared host did not end")
		}
	})
	return e
}

// host is one attached host: its control stream and an MCP session of
// the fixture's instance on a stream.
type host struct {
	c  *shared.Client
	cs *mcp.ClientSession
}

// attach attaches a host to the fixture (the same instance for every
// host of e) with the client options opts.
func (e *spliceEnv) attach(name string, opts *mcp.ClientOptions) *host {
	e.t.Helper()
	c, err := shared.Dial(testCtx(e.t), e.socket, shared.Hello{Session: name, Pid: os.Getpid()})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	cmd, args := "in-memory", []string(nil)
	if !e.inMem {
		cmd, args = fixturetest.Command(e.t, e.fx...)
	}
	att, err := c.Attach(testCtx(e.t), shared.Attach{Name: "fx", Config: events.ServerConfig{Command: cmd, Args: args}, Command: cmd, Args: args, Cwd: e.cwd})
	if err != nil {
		e.t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, opts).Connect(testCtx(e.t), c.Transport(att), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return &host{c: c, cs: cs}
}

// recordedCalls returns the calls the shared host's session recorded.
func (e *spliceEnv) recordedCalls() int {
	e.t.Helper()
	n := 0
	for env, err := range e.st.ReadStream(context.Background(), "shared", 1) {
		if err != nil {
			e.t.Fatal(err)
		}
		if env.Type == events.TypeToolCallStarted {
			n++
		}
	}
	return n
}

// call is a tool call's outcome.
type call struct {
	res *mcp.CallToolResult
	err error
}

func (h *host) callAsync(ctx context.Context, p *mcp.CallToolParams) <-chan call {
	ch := make(chan call, 1)
	go func() {
		res, err := h.cs.CallTool(ctx, p)
		ch <- call{res, err}
	}()
	return ch
}

func text(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func wait(t *testing.T, ch <-chan call) call {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(deadline):
		t.Fatal("a call never returned")
		return call{}
	}
}

// TestSpliceTwoHostsConcurrent has two hosts call one shared server at
// once: each host's client numbers its requests alike, so their ids
// collide on the server's connection unless the shared host rewrites
// them; every call gets its own answer, and the shared host records
// none of them (they did not go through its manager).
func TestSpliceTwoHostsConcurrent(t *testing.T) {
	e := newSpliceEnv(t)
	hosts := []*host{e.attach("h1", nil), e.attach("h2", nil)}
	ctx := testCtx(t)
	gate := fixturetest.NewGate(t)
	var held []<-chan call
	for _, h := range hosts {
		held = append(held, h.callAsync(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"gate": gate.Path()}}))
	}
	if err := gate.WaitReached(ctx, 2); err != nil {
		t.Fatal(err)
	}
	// Both held calls are in flight; more calls of both hosts meanwhile.
	var wg sync.WaitGroup
	for i, h := range hosts {
		for k := range 10 {
			wg.Go(func() {
				want := fmt.Sprintf("h%d call %d", i+1, k)
				res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": want}})
				if err != nil || res.IsError || text(res) != want {
					t.Errorf("echo %q: %v %q", want, err, text(res))
				}
			})
		}
	}
	wg.Wait()
	gate.Release()
	for i, ch := range held {
		if c := wait(t, ch); c.err != nil || c.res.IsError || text(c.res) != "released" {
			t.Errorf("host %d: held call: %v %q", i+1, c.err, text(c.res))
		}
	}
	if n := e.recordedCalls(); n != 0 {
		t.Errorf("the shared host recorded %d calls: want none, every call spliced", n)
	}
}

// TestSpliceProgress has two hosts call a tool that reports progress at
// once, under the same progress token: each gets its own notifications,
// with its token. Both calls are in flight while they report.
func TestSpliceProgress(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "reporter", Version: "1"}, nil)
	var first sync.WaitGroup // the first notification of both calls went out
	first.Add(2)
	srv.AddTool(&mcp.Tool{Name: "progress", InputSchema: json.RawMessage(`{"type":"object","properties":{"steps":{"type":"integer"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				Steps int `json:"steps"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			tok := req.Params.GetProgressToken()
			for i := 1; i <= in.Steps; i++ {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: float64(in.Steps)}); err != nil {
					return nil, err
				}
				if i == 1 {
					first.Done()
					first.Wait()
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	e := newSpliceEnv(t, srv)
	var got [2]chan *mcp.ProgressNotificationParams
	var hosts []*host
	for i := range got {
		got[i] = make(chan *mcp.ProgressNotificationParams, 16)
		hosts = append(hosts, e.attach(fmt.Sprintf("h%d", i+1), &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				got[i] <- req.Params
			},
		}))
	}
	ctx := testCtx(t)
	var calls []<-chan call
	for i, h := range hosts {
		p := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{"steps": 3 + i}}
		p.SetProgressToken("tok")
		calls = append(calls, h.callAsync(ctx, p))
	}
	for i, ch := range calls {
		if c := wait(t, ch); c.err != nil || c.res.IsError {
			t.Fatalf("host %d: progress: %v %q", i+1, c.err, text(c.res))
		}
	}
	for i := range got {
		// The go-sdk delivers notifications apart from the response:
		// the last may come just after it.
		want := 3 + i
		for k := range want {
			select {
			case p := <-got[i]:
				if p.ProgressToken != "tok" || p.Total != float64(want) {
					t.Errorf("host %d: notification %+v: want token tok, total %d", i+1, p, want)
				}
			case <-ctx.Done():
				t.Fatalf("host %d: %d progress notifications, want %d", i+1, k, want)
			}
		}
	}
	for i := range got {
		if n := len(got[i]); n > 0 {
			t.Errorf("host %d: %d notifications more than its call's", i+1, n)
		}
	}
	if n := e.recordedCalls(); n != 0 {
		t.Errorf("the shared host recorded %d calls: want none, every call spliced", n)
	}
}

// TestSpliceCancel cancels a host's spliced call: the server hears of it.
// The end of a host's control stream cancels its call as well.
func TestSpliceCancel(t *testing.T) {
	for _, how := range []string{"request", "host gone"} {
		t.Run(how, func(t *testing.T) {
			e := newSpliceEnv(t)
			h := e.attach("h1", nil)
			hold, cancelled := fixturetest.NewGate(t), fixturetest.NewGate(t)
			ctx, cancel := context.WithCancel(testCtx(t))
			defer cancel()
			ch := h.callAsync(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"gate": hold.Path(), "on_cancel": cancelled.Path()}})
			if err := hold.WaitReached(testCtx(t), 1); err != nil {
				t.Fatal(err)
			}
			if how == "request" {
				cancel()
				if c := wait(t, ch); c.err == nil {
					t.Errorf("the cancelled call returned %q", text(c.res))
				}
			} else {
				h.c.Close()
			}
			if err := cancelled.WaitReached(testCtx(t), 1); err != nil {
				t.Fatalf("the server never saw the cancellation: %v", err)
			}
			if n := e.recordedCalls(); n != 0 {
				t.Errorf("the shared host recorded %d calls: want none, the call spliced", n)
			}
		})
	}
}

// TestSpliceDrop ends the server under a spliced call: the call fails
// with the error of a disconnected server instead of waiting forever.
func TestSpliceDrop(t *testing.T) {
	e := newSpliceEnv(t)
	h1, h2 := e.attach("h1", nil), e.attach("h2", nil)
	ctx := testCtx(t)
	hold := fixturetest.NewGate(t)
	ch := h1.callAsync(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"gate": hold.Path()}})
	if err := hold.WaitReached(ctx, 1); err != nil {
		t.Fatal(err)
	}
	h2.cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash"}) // fails too: the server is gone
	c := wait(t, ch)
	if c.err != nil || !c.res.IsError || !strings.Contains(text(c.res), "MCP server disconnected") {
		t.Errorf("the call cut off by the drop: %v %+v %q, want the error result of a disconnected server", c.err, c.res, text(c.res))
	}
}

// TestSpliceDropAgain ends the server under spliced calls, as a crash
// does: the shared host's manager reconnects it, and each call follows
// the manager's rule for its own calls cut off by a drop. A call of a
// read-only tool is made once more on the new connection, its answer
// reaching the host under its own id; a call of any
// other tool fails as cut off and ran once. The call carries a progress
// token, which the point replaces on each connection.
func TestSpliceDropAgain(t *testing.T) {
	for _, readOnly := range []bool{true, false} {
		t.Run(fmt.Sprintf("read-only=%v", readOnly), func(t *testing.T) {
			var fx []string
			if readOnly {
				fx = append(fx, "read-only=sleep")
			}
			e := newFixtureEnv(t, fx...)
			h1 := e.attach("h1", nil)
			h2 := e.attach("h2", nil)
			ctx := testCtx(t)
			hold := fixturetest.NewGate(t)
			p := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"gate": hold.Path()}}
			p.SetProgressToken("tok")
			ch := h1.callAsync(ctx, p)
			if err := hold.WaitReached(ctx, 1); err != nil {
				t.Fatal(err)
			}
			// The server process exits under the held call.
			if res, err := h2.cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash"}); err != nil || !res.IsError {
				t.Fatalf("crash: %v %+v, want the error of a disconnected server", err, res)
			}
			if !readOnly {
				c := wait(t, ch)
				if c.err != nil || !c.res.IsError || !strings.Contains(text(c.res), "MCP server disconnected") {
					t.Fatalf("the cut-off call: %v %+v %q, want the error result of a disconnected server", c.err, c.res, text(c.res))
				}
				// The server is back: a call made now goes through.
				if res, err := h2.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "back"}}); err != nil || res.IsError || text(res) != "back" {
					t.Fatalf("echo after the reconnect: %v %q", err, text(res))
				}
				if n := hold.Reached(); n != 1 {
					t.Errorf("the cut-off call reached the server %d times, want once", n)
				}
				return
			}
			// Made once more on the reconnected server, held again there.
			reached := make(chan error, 1)
			go func() { reached <- hold.WaitReached(ctx, 2) }()
			select {
			case err := <-reached:
				if err != nil {
					t.Fatalf("the read-only call was not made again: %v", err)
				}
			case c := <-ch:
				t.Fatalf("the read-only call returned instead of being made again: %v %q", c.err, text(c.res))
			}
			select {
			case c := <-ch:
				t.Fatalf("the call returned while it is held: %v %q", c.err, text(c.res))
			default:
			}
			hold.Release()
			c := wait(t, ch)
			if c.err != nil || c.res.IsError || text(c.res) != "released" {
				t.Fatalf("the call made again: %v %q, want released", c.err, text(c.res))
			}
			if n := hold.Reached(); n != 2 {
				t.Errorf("the call reached the server %d times, want twice", n)
			}
			if n := e.recordedCalls(); n != 0 {
				t.Errorf("the shared host recorded %d calls: want none, the call spliced twice", n)
			}
		})
	}
}
