package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/projector"
)

func TestConcurrentLifecycleCalls(t *testing.T) {
	for _, gate := range []time.Duration{time.Nanosecond, DefaultGate} {
		t.Run(gate.String(), func(t *testing.T) { testConcurrentLifecycleCalls(t, gate) })
	}
}

// shuffle is a scheduling hook that yields the processor a random number
// of times at each scheduling point, so each run explores other
// interleavings of connects, lists, gates and teardowns.
func shuffle(string, string) {
	for range rand.IntN(4) * rand.IntN(8) {
		runtime.Gosched()
	}
}

func testConcurrentLifecycleCalls(t *testing.T, gate time.Duration) {
	e := newEnv(t, &Options{Gate: gate})
	e.m.sched = shuffle
	ctx := testCtx(t)
	configs := []events.ServerConfig{
		stdio(t, "a", "only=echo"),
		stdio(t, "b", "only=echo,add"),
		stdio(t, "c", "only=add"),
	}
	discover := func(context.Context) ([]events.ServerConfig, map[string]events.SourceMeta, error) {
		return configs, nil, nil
	}
	var wg sync.WaitGroup
	run := func(f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				t.Error(err)
			}
		}()
	}
	for i := range 3 {
		run(func() error { _, err := e.m.ConnectServers(ctx, configs[i:], nil); return err })
		run(func() error { _, err := e.m.Reload(ctx, discover); return err })
		run(func() error { return e.m.DisconnectAll(ctx) })
		run(func() error { return e.m.DisconnectServer(ctx, configs[i].Name) })
		run(func() error {
			for _, tl := range e.m.Tools() {
				if _, err := tl.Call(ctx, map[string]any{"text": "x", "a": 1, "b": 2}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	wg.Wait()
	// The session's history so far must fold into the view the manager
	// holds, whatever the interleaving was.
	checkReplay(t, e)

	// Whatever the interleaving, a final reload leaves every server
	// connected exactly once, with its tools: live, or deferred from the
	// cache while its first list is pending.
	updates, err := e.m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.m.Reload(ctx, discover)
	if err != nil || len(res.Errors) > 0 {
		t.Fatal(res.Errors, err)
	}
	want := []string{"mcp_a_echo", "mcp_b_add", "mcp_b_echo", "mcp_c_add"}
	logHistory := func() {
		for _, name := range []string{"a", "b", "c"} {
			t.Logf("%s: %v", name, e.serverTypes("s1", name))
		}
	}
	if got := toolNames(res.Tools); !slices.Equal(got, want) {
		logHistory()
		t.Fatalf("reload result tools %v", got)
	}
	// Only a server deferred at the gate may have cached tools (its late
	// list may have replaced them already).
	for _, tl := range res.Tools {
		if o := res.Gate.Outcomes[tl.Server]; tl.Deferred && o != events.OutcomeDeferred {
			t.Errorf("%s: deferred with gate outcome %q", tl.Name, o)
		}
	}
	if got := toolNames(e.m.Tools()); !slices.Equal(got, want) {
		logHistory()
		t.Fatalf("tools %v", got)
	}
	checkReplay(t, e)

	// Once the late lists of deferred servers arrived, every server is
	// connected with live tools, and the live view still equals a replay.
	for _, c := range configs {
		if err := e.m.waitForConnection(ctx, c.Name); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, ctx, updates, func() bool {
		return !slices.ContainsFunc(e.m.Tools(), func(t *Tool) bool { return t.Deferred })
	})
	if got := toolNames(e.m.Tools()); !slices.Equal(got, want) {
		logHistory()
		t.Fatalf("tools after the late lists %v", got)
	}
	for _, c := range configs {
		if st := e.m.Status(c.Name); st != projector.StatusConnected {
			t.Errorf("%s: status %s", c.Name, st)
		}
		// Nothing ended the final connection.
		types := e.serverTypes("s1", c.Name)
		final := types[lastIndex(types, "ConnectStarted")+1:]
		if slices.ContainsFunc(final, func(typ string) bool {
			return strings.HasPrefix(typ, "Disconnected") || typ == "ConnectFailed"
		}) {
			t.Errorf("%s: final connection ended: %v", c.Name, types)
		}
	}
	checkReplay(t, e)

	m := e.m
	m.mu.Lock()
	n := len(m.servers)
	m.mu.Unlock()
	if n != 3 {
		t.Fatalf("%d server records, want 3", n)
	}
	// Reload events share a correlation id.
	ids := map[string][]string{}
	for _, env := range e.events("s1") {
		if strings.HasPrefix(env.CorrelationID, "reload-") {
			ids[env.CorrelationID] = append(ids[env.CorrelationID], env.Type)
		}
	}
	if len(ids) != 4 {
		t.Fatalf("reload ids %v", ids)
	}
	for id, types := range ids {
		if types[0] != events.TypeReloadRequested || types[len(types)-1] != events.TypeReloadCompleted {
			t.Errorf("%s: %v", id, types)
		}
	}
}

func TestReload(t *testing.T) {
	// A long gate: the warm cache would otherwise serve deferred tools on
	// a loaded machine.
	e := newEnv(t, &Options{Gate: time.Minute})
	ctx := testCtx(t)
	a := stdio(t, "a", "only=echo")
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{a, stdio(t, "gone", "only=echo")}, nil); err != nil {
		t.Fatal(err)
	}
	b := stdio(t, "b", "only=add")
	res, err := e.m.Reload(ctx, func(context.Context) ([]events.ServerConfig, map[string]events.SourceMeta, error) {
		return []events.ServerConfig{a, b}, nil, nil
	})
	if err != nil || len(res.Errors) > 0 {
		t.Fatal(res.Errors, err)
	}
	equal(t, "tools", toolNames(res.Tools), []string{"mcp_a_echo", "mcp_b_add"})
	equal(t, "a events", e.serverTypes("s1", "a"), []string{"ServerDiscovered", "ConnectStarted", "ServerConnected", "ToolsListed/initial", "Disconnected/reload", "ConnectStarted", "ServerConnected", "ToolsListed/initial"})
	equal(t, "gone events", e.serverTypes("s1", "gone"), []string{"ServerDiscovered", "ConnectStarted", "ServerConnected", "ToolsListed/initial", "Disconnected/reload"})
	rc := ofType[*events.ReloadCompleted](e, "s1")
	if len(rc) != 1 || rc[0].Servers != 2 || rc[0].Tools != 2 || rc[0].Failed != 0 {
		t.Fatalf("reload completed %+v", rc)
	}
	// A discovery failure leaves no server and records why.
	res, err = e.m.Reload(ctx, func(context.Context) ([]events.ServerConfig, map[string]events.SourceMeta, error) {
		return nil, nil, fmt.Errorf("bad config file")
	})
	if err == nil || len(res.Tools) != 0 {
		t.Fatalf("failed reload: %v %v", res, err)
	}
	if df := ofType[*events.DiscoveryFailed](e, "s1"); len(df) != 1 || df[0].Path != ".mcp.json" {
		t.Fatalf("discovery failed %+v", df)
	}
}

func TestWatchersShareTheManager(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	// A parent session's watcher and a subagent's: both see later changes.
	// A third never reads; it must not hold anything up.
	parent, err := e.m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := e.m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		name := fmt.Sprintf("s%d", i)
		if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, name, "only=echo")}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range []<-chan Update{parent, sub} {
		waitFor(t, ctx, w, func() bool { return len(e.m.Tools()) == 5 })
	}
	// Coalesced: at most one update is pending.
	if len(parent) > 1 {
		t.Fatalf("%d pending updates", len(parent))
	}
	if err := e.m.DisconnectServer(ctx, "s0"); err != nil {
		t.Fatal(err)
	}
	for _, w := range []<-chan Update{parent, sub} {
		for {
			u := <-w
			if u.Type == events.TypeDisconnected && u.Server == "s0" {
				break
			}
		}
	}
	if slices.Contains(toolNames(e.m.Tools()), "mcp_s0_echo") {
		t.Fatal("disconnected server's tool still listed")
	}
	// Closing the manager closes the channels.
	if err := e.m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for range parent {
	}
}

func TestCloseStopsEverything(t *testing.T) {
	e := newEnv(t, &Options{Gate: DefaultGate}) // the held server is deferred
	ctx := testCtx(t)
	g := fixturetest.NewGate(t)
	pending := stdio(t, "pending", "only=echo", g.Arg("block-init-until"))
	seedCache(t, e, pending, "echo")
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{pending, stdio(t, "ok", "only=echo")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "late", "only=echo")}, nil); err != ErrClosed {
		t.Fatalf("connect after close: %v", err)
	}
	if n := len(e.m.Tools()); n != 0 {
		t.Fatalf("%d tools after close", n)
	}
	equal(t, "pending events", e.serverTypes("s1", "pending"), []string{"ServerDiscovered", "ConnectStarted", "CachedToolsServed", "Disconnected/requested"})
}

// The owners of the servers of one disconnect tear them down each on its
// own, in parallel, and their Disconnected events are recorded together:
// one after the other in the stream, in name order, whichever owner was
// done first, under the reload's correlation for a reload.
func TestOneDisconnectRecordsItsServersTogether(t *testing.T) {
	e := newEnv(t, &Options{Gate: time.Minute})
	ctx := testCtx(t)
	cfgs := []events.ServerConfig{stdio(t, "c", "only=echo"), stdio(t, "a", "only=echo"), stdio(t, "b", "only=echo")}
	if _, err := e.m.ConnectServers(ctx, cfgs, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Reload(ctx, func(context.Context) ([]events.ServerConfig, map[string]events.SourceMeta, error) {
		return nil, nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	var got []string
	var seqs []uint64
	correlations := map[string]bool{}
	for _, env := range e.events("s1") {
		if env.Type == events.TypeDisconnected {
			var d events.Disconnected
			if err := json.Unmarshal(env.Data, &d); err != nil {
				t.Fatal(err)
			}
			got = append(got, d.Server)
			seqs = append(seqs, env.Seq)
			correlations[env.CorrelationID] = true
		}
	}
	equal(t, "Disconnected servers", got, []string{"a", "b", "c"})
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Fatalf("Disconnected at seqs %v, want them one after the other", seqs)
		}
	}
	if len(correlations) != 1 || correlations[""] {
		t.Fatalf("correlations %v, want the reload's one", correlations)
	}
}
