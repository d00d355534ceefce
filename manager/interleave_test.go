package manager

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/projector"
)

// scheduler is a scheduling hook (Manager.sched) that reports when a
// scheduling point of a server was reached and can hold the first
// goroutine that reaches it until released. It makes one interleaving of
// concurrent lifecycle calls happen on purpose.
type scheduler struct {
	mu      sync.Mutex
	reached map[[2]string]chan struct{} // closed at the first arrival
	arrived map[[2]string]bool
	holds   map[[2]string]chan struct{} // closed to let the holder go
}

func newScheduler(m *Manager) *scheduler {
	sc := &scheduler{reached: map[[2]string]chan struct{}{}, arrived: map[[2]string]bool{}, holds: map[[2]string]chan struct{}{}}
	m.sched = sc.hook
	return sc
}

// ch returns the arrival channel of point and server. Requires sc.mu.
func (sc *scheduler) ch(k [2]string) chan struct{} {
	ch, ok := sc.reached[k]
	if !ok {
		ch = make(chan struct{})
		sc.reached[k] = ch
	}
	return ch
}

func (sc *scheduler) hook(point, server string) {
	k := [2]string{point, server}
	sc.mu.Lock()
	if !sc.arrived[k] {
		sc.arrived[k] = true
		close(sc.ch(k))
	}
	h := sc.holds[k]
	delete(sc.holds, k)
	sc.mu.Unlock()
	if h != nil {
		<-h
	}
}

// at returns a channel closed once point was reached for server.
func (sc *scheduler) at(point, server string) <-chan struct{} {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.ch([2]string{point, server})
}

// hold stops the first goroutine that reaches point for server until the
// returned function is called (it is also called when the test ends).
func (sc *scheduler) hold(t *testing.T, point, server string) (release func()) {
	ch := make(chan struct{})
	sc.mu.Lock()
	sc.holds[[2]string{point, server}] = ch
	sc.mu.Unlock()
	release = sync.OnceFunc(func() { close(ch) })
	t.Cleanup(release)
	return release
}

// await waits for ch, failing the test when ctx ends or when early
// delivers first: early is a result that must not exist yet.
func await[T any](t *testing.T, ctx context.Context, what string, ch <-chan struct{}, early <-chan T) {
	t.Helper()
	select {
	case <-ch:
	case v := <-early:
		t.Fatalf("%s: finished first (%v)", what, v)
	case <-ctx.Done():
		t.Fatalf("%s: %v", what, ctx.Err())
	}
}

// async runs f in a goroutine and delivers its result.
func async[T any](f func() T) <-chan T {
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	return ch
}

type connected struct {
	res *ConnectResult
	err error
}

func connectAsync(ctx context.Context, m *Manager, cfgs ...events.ServerConfig) <-chan connected {
	return async(func() connected {
		res, err := m.ConnectServers(ctx, cfgs, nil)
		return connected{res, err}
	})
}

// checkConnectedAgain checks the end of each interleaving below: the
// server's second connection is up with its tools, after the first one's
// Disconnected, and the live view equals a replay.
func checkConnectedAgain(t *testing.T, e *env, name string, wantTypes []string, wantTools ...string) {
	t.Helper()
	equal(t, name+" events", e.serverTypes("s1", name), wantTypes)
	equal(t, "tools", toolNames(e.m.Tools()), wantTools)
	if st := e.m.Status(name); st != projector.StatusConnected {
		t.Fatalf("status %s", st)
	}
	checkReplay(t, e)
}

// A reconnect requested while the teardown of the same server is about to
// record its Disconnected waits for it: the Disconnected must not follow
// the new ConnectStarted, or the view would drop the new connection's
// tools.
func TestReconnectWaitsForTheTeardownsDisconnected(t *testing.T) {
	e := newEnv(t, &Options{Gate: time.Minute})
	ctx := testCtx(t)
	sc := newScheduler(e.m)
	c := stdio(t, "c", "only=add")
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{c}, nil); err != nil {
		t.Fatal(err)
	}

	release := sc.hold(t, "finish.emit", "c")
	disc := async(func() error { return e.m.DisconnectServer(ctx, "c") })
	await(t, ctx, "teardown", sc.at("finish.emit", "c"), disc)
	again := connectAsync(ctx, e.m, c)
	await(t, ctx, "reconnect waits for the teardown", sc.at("connect.wait", ""), again)
	release()

	if err := <-disc; err != nil {
		t.Fatal(err)
	}
	r := <-again
	if r.err != nil || len(r.res.Errors) > 0 {
		t.Fatal(r.res.Errors, r.err)
	}
	equal(t, "reconnect tools", toolNames(r.res.Tools), []string{"mcp_c_add"})
	checkConnectedAgain(t, e, "c", []string{"ServerDiscovered", "ConnectStarted", "ServerConnected", "ToolsListed/initial",
		"Disconnected/requested", "ConnectStarted", "ServerConnected", "ToolsListed/initial"}, "mcp_c_add")
}

// A first tool list that finished just before its connection was torn
// down is recorded before that connection's Disconnected, never after
// the reconnect's ConnectStarted, where it would stand for the new
// connection's tools.
func TestLateListOfOldConnectionPrecedesItsDisconnected(t *testing.T) {
	e := newEnv(t, &Options{Gate: time.Minute})
	ctx := testCtx(t)
	sc := newScheduler(e.m)
	c := stdio(t, "c", "only=add")

	release := sc.hold(t, "run.listed", "c") // listed, not yet recorded
	first := connectAsync(ctx, e.m, c)
	await(t, ctx, "first list", sc.at("run.listed", "c"), first)
	disc := async(func() error { return e.m.DisconnectServer(ctx, "c") })
	await(t, ctx, "teardown", sc.at("disconnect.sent", "c"), disc)
	again := connectAsync(ctx, e.m, c)
	await(t, ctx, "reconnect waits for the teardown", sc.at("connect.wait", ""), again)
	release()

	if r := <-first; r.err != nil {
		t.Fatal(r.err)
	}
	if err := <-disc; err != nil {
		t.Fatal(err)
	}
	r := <-again
	if r.err != nil || len(r.res.Errors) > 0 {
		t.Fatal(r.res.Errors, r.err)
	}
	checkConnectedAgain(t, e, "c", []string{"ServerDiscovered", "ConnectStarted", "ServerConnected", "ToolsListed/initial",
		"Disconnected/requested", "ConnectStarted", "ServerConnected", "ToolsListed/initial"}, "mcp_c_add")
}

// DisconnectAll while a server's connect has succeeded and its first
// tools/list is in flight: the connection is recorded, the disconnect
// cancels the list, the owner closes the connection, and a later reload
// connects the server again. (The disconnect used to mark the record
// closing from the caller's goroutine, racing with the owner publishing
// the connection; the owner now takes it at its next wait.)
func TestDisconnectAllDuringConnectInFlight(t *testing.T) {
	e := newEnv(t, &Options{Gate: time.Minute})
	ctx := testCtx(t)
	g := fixturetest.NewGate(t)
	a, c := stdio(t, "a", "only=echo"), stdio(t, "c", "only=add", g.Arg("block-list-until"))

	first := connectAsync(ctx, e.m, a, c)
	if err := g.WaitReached(ctx, 1); err != nil {
		t.Fatal(err)
	}
	disc := async(func() error { return e.m.DisconnectAll(ctx) })
	r := <-first
	if r.err != nil {
		t.Fatal(r.err)
	}
	if err := <-disc; err != nil {
		t.Fatal(err)
	}
	// Torn down before its first list: failed at the gate.
	if o, err := r.res.Gate.Outcomes["c"], r.res.Errors["c"]; o != events.OutcomeFailed || !errors.Is(err, ErrDisconnected) {
		t.Fatalf("gate outcome of c %q, error %v", o, err)
	}
	if got, want := r.res.Errors["c"].Error(), ErrDisconnected.Error()+": c"; got != want {
		t.Fatalf("error of c %q, want %q (naming the server)", got, want)
	}
	if n := len(e.m.Tools()); n != 0 {
		t.Fatalf("%d tools after DisconnectAll", n)
	}
	g.Release() // the next connection lists at once
	res, err := e.m.Reload(ctx, func(context.Context) ([]events.ServerConfig, map[string]events.SourceMeta, error) {
		return []events.ServerConfig{a, c}, nil, nil
	})
	if err != nil || len(res.Errors) > 0 {
		t.Fatal(res.Errors, err)
	}
	checkConnectedAgain(t, e, "c", []string{"ServerDiscovered", "ConnectStarted", "ServerConnected",
		"Disconnected/requested", "ConnectStarted", "ServerConnected", "ToolsListed/initial"}, "mcp_a_echo", "mcp_c_add")
}

// A call cut off by a crashing server fails with the manager's own
// disconnected text even when the go-sdk's failure of the call (EOF)
// arrives before the drop watcher has noticed the end of the connection.
func TestCallFailsDisconnectedBeforeTheWatcherNotices(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	sc := newScheduler(e.m)
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "crashy", "only=crash")}, nil); err != nil {
		t.Fatal(err)
	}
	release := sc.hold(t, "watch.ended", "crashy")
	r, err := tool(t, e.m, "mcp_crashy_crash").Call(ctx, map[string]any{"code": 3})
	if err != nil {
		t.Fatal(err)
	}
	if want := ErrorPrefix + ErrDisconnected.Error() + ": crashy"; r.Text() != want {
		t.Errorf("call text %q, want %q", r.Text(), want)
	}
	if !errors.Is(r.Err, ErrDisconnected) || errors.Is(r.Err, ErrNotConnected) {
		t.Errorf("call's Err %v, want one matching ErrDisconnected only", r.Err)
	}
	select {
	case <-sc.at("watch.ended", "crashy"):
	case <-ctx.Done():
		t.Fatal("the watcher did not notice the crash")
	}
	release()
	fin := ofType[*events.ToolCallFinished](e, "s1")
	if len(fin) != 1 || fin[0].Error != r.Text() {
		t.Errorf("ToolCallFinished %+v, want the error %q", fin, r.Text())
	}
}

// A disconnect asked while the server's goroutine records a drop ends the
// server there: the drop is recorded without a reconnect, and nothing
// connects the server again behind the caller's back (a reconnect used to
// take the place of the dropped record after the disconnect had waited
// for it).
func TestDisconnectDuringADropEndsTheServer(t *testing.T) {
	e := newEnv(t, &Options{Reconnect: ReconnectPolicy{Initial: time.Hour, Max: time.Hour, NoJitter: true}})
	ctx := testCtx(t)
	sc := newScheduler(e.m)
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "crashy", "only=crash")}, nil); err != nil {
		t.Fatal(err)
	}
	release := sc.hold(t, "watch.ended", "crashy")
	if _, err := tool(t, e.m, "mcp_crashy_crash").Call(ctx, map[string]any{"code": 3}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sc.at("watch.ended", "crashy"):
	case <-ctx.Done():
		t.Fatal("the drop was not noticed")
	}
	// A context that has ended: the disconnect asks and returns at once.
	asked, cancel := context.WithCancel(ctx)
	cancel()
	if err := e.m.DisconnectServer(asked, "crashy"); !errors.Is(err, context.Canceled) {
		t.Fatalf("disconnect during the drop: %v, want it to wait for the drop", err)
	}
	release()
	if err := e.m.DisconnectServer(ctx, "crashy"); err != nil {
		t.Fatal(err)
	}
	equal(t, "crashy events", e.serverTypes("s1", "crashy"), []string{"ServerDiscovered", "ConnectStarted", "ServerConnected",
		"ToolsListed/initial", "ToolCallStarted", "ToolCallFinished", "Disconnected/process exited"})
	if d := ofType[*events.Disconnected](e, "s1"); len(d) != 1 || d[0].Reconnecting {
		t.Fatalf("Disconnected %+v, want one, not reconnecting", d)
	}
	e.m.mu.Lock()
	s := e.m.servers["crashy"]
	e.m.mu.Unlock()
	if s != nil {
		t.Fatalf("a record of crashy is left in state %s", s.mach.State())
	}
	if st := e.m.Status("crashy"); st != projector.StatusDisconnected {
		t.Fatalf("status %s", st)
	}
}

// A connect asked while a server's drop is recorded waits for the
// decision and then finds the reconnecting record: it starts no second
// process, and the one record stands for the server across the drop.
func TestConnectDuringADropFindsTheReconnect(t *testing.T) {
	e := newEnv(t, &Options{Reconnect: ReconnectPolicy{Initial: time.Hour, Max: time.Hour, NoJitter: true}})
	ctx := testCtx(t)
	sc := newScheduler(e.m)
	c := stdio(t, "crashy", "only=crash")
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{c}, nil); err != nil {
		t.Fatal(err)
	}
	e.m.mu.Lock()
	before := e.m.servers["crashy"]
	e.m.mu.Unlock()
	release := sc.hold(t, "watch.ended", "crashy")
	if _, err := tool(t, e.m, "mcp_crashy_crash").Call(ctx, map[string]any{"code": 3}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sc.at("watch.ended", "crashy"):
	case <-ctx.Done():
		t.Fatal("the drop was not noticed")
	}
	again := connectAsync(ctx, e.m, c)
	await(t, ctx, "connect waits for the drop's decision", sc.at("connect.wait", ""), again)
	release()
	if r := <-again; r.err != nil || len(r.res.Errors) > 0 {
		t.Fatal(r.res.Errors, r.err)
	}
	e.m.mu.Lock()
	after, st := e.m.servers["crashy"], stDone
	e.m.mu.Unlock()
	if after != nil {
		st = after.mach.State() // the snapshot: no m.mu
	}
	if after != before || st != stBackoff {
		t.Fatalf("after the drop: record %p in state %s, want the same record %p in backoff", after, st, before)
	}
	equal(t, "crashy events", e.serverTypes("s1", "crashy"), []string{"ServerDiscovered", "ConnectStarted", "ServerConnected",
		"ToolsListed/initial", "ToolCallStarted", "ToolCallFinished", "Disconnected/process exited", "ReconnectScheduled"})
}

// A call made while a server's drop is recorded waits for the drop's
// decision, then for the reconnect, and is answered by the new process,
// rather than failing as not connected: its request never left.
func TestCallDuringADropWaitsForTheReconnect(t *testing.T) {
	e := newEnv(t, &Options{Reconnect: ReconnectPolicy{Initial: time.Hour, Max: time.Hour, NoJitter: true}})
	ctx := testCtx(t)
	sc := newScheduler(e.m)
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "crashy", "only=crash,echo")}, nil); err != nil {
		t.Fatal(err)
	}
	updates, err := e.m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	echo := tool(t, e.m, "mcp_crashy_echo")
	release := sc.hold(t, "watch.ended", "crashy")
	if _, err := tool(t, e.m, "mcp_crashy_crash").Call(ctx, map[string]any{"code": 3}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sc.at("watch.ended", "crashy"):
	case <-ctx.Done():
		t.Fatal("the drop was not noticed")
	}
	waiting := async(func() string {
		r, err := echo.Call(ctx, map[string]any{"text": "during the drop"})
		if err != nil {
			return err.Error()
		}
		return r.Text()
	})
	await(t, ctx, "the call waits for the drop's decision", sc.at("call.wait", "crashy"), waiting)
	release()
	waitFor(t, ctx, updates, func() bool { return e.m.Status("crashy") == projector.StatusReconnecting })
	select {
	case got := <-waiting:
		t.Fatalf("the call returned %q before the reconnect", got)
	default:
	}
	if err := e.m.ReconnectNow("crashy"); err != nil {
		t.Fatal(err)
	}
	if got := <-waiting; got != "during the drop" {
		t.Fatalf("the call made during the drop: %q", got)
	}
	e.m.Close(ctx) // stores the calls' events
	var deferred, finished int
	for _, x := range ofType[*events.ToolCallStarted](e, "s1") {
		if x.Tool == "echo" && x.Deferred {
			deferred++
		}
	}
	for _, x := range ofType[*events.ToolCallFinished](e, "s1") {
		if x.Tool == "echo" && !x.IsError && !x.Retried {
			finished++
		}
	}
	if deferred != 1 || finished != 1 {
		t.Errorf("echo: %d deferred starts and %d plain finishes recorded, want 1 and 1", deferred, finished)
	}
}

// A disconnect reaches an owner that is blocked inside a connect: the
// command cancels the connect, and the owner tears the server down and
// records its Disconnected at once, whatever the connect's timeout.
func TestDisconnectCancelsAConnectInFlight(t *testing.T) {
	dialing := make(chan struct{})
	e := newEnv(t, &Options{Gate: time.Minute, Dial: func(ctx context.Context, cfg events.ServerConfig) (mcp.Transport, error) {
		close(dialing)
		<-ctx.Done() // a connect that would never end on its own
		return nil, ctx.Err()
	}})
	ctx := testCtx(t)
	first := connectAsync(ctx, e.m, events.ServerConfig{Name: "c", Command: "never-started", TimeoutMs: ms(0)})
	await(t, ctx, "the owner dials", dialing, first)
	if err := e.m.DisconnectServer(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	r := <-first
	if r.err != nil {
		t.Fatal(r.err)
	}
	if o, err := r.res.Gate.Outcomes["c"], r.res.Errors["c"]; o != events.OutcomeFailed || !errors.Is(err, ErrDisconnected) {
		t.Fatalf("gate outcome of c %q, error %v", o, err)
	}
	equal(t, "c events", e.serverTypes("s1", "c"), []string{"ServerDiscovered", "ConnectStarted", "Disconnected/requested"})
	e.m.mu.Lock()
	s := e.m.servers["c"]
	e.m.mu.Unlock()
	if s != nil {
		t.Fatalf("a record of c is left in state %s", s.mach.State())
	}
}

// A disconnect that comes while the server's owner is tearing it down for
// another one waits for that teardown: the server's Disconnected is
// recorded once, by the first, and the second's other servers are
// recorded without waiting for it.
func TestDisconnectDuringAnotherTeardown(t *testing.T) {
	e := newEnv(t, &Options{Gate: time.Minute})
	ctx := testCtx(t)
	sc := newScheduler(e.m)
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "a", "only=echo"), stdio(t, "c", "only=add")}, nil); err != nil {
		t.Fatal(err)
	}
	release := sc.hold(t, "finish.emit", "c")
	one := async(func() error { return e.m.DisconnectServer(ctx, "c") })
	await(t, ctx, "the first teardown", sc.at("finish.emit", "c"), one)
	all := async(func() error { return e.m.DisconnectAll(ctx) })
	await(t, ctx, "the second disconnect is sent", sc.at("disconnect.sent", "a"), all)
	release()
	for _, ch := range []<-chan error{one, all} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"a", "c"} {
		equal(t, name+" events", e.serverTypes("s1", name), []string{"ServerDiscovered", "ConnectStarted", "ServerConnected",
			"ToolsListed/initial", "Disconnected/requested"})
	}
	if n := len(e.m.Tools()); n != 0 {
		t.Fatalf("%d tools after both disconnects", n)
	}
	checkReplay(t, e)
}
