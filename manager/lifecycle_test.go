package manager

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/projector"
)

func TestConnectFastServers(t *testing.T) {
	e := newEnv(t, &Options{Gate: time.Minute})
	ctx := testCtx(t)
	src := events.SourceMeta{Provider: "native", ProviderName: "mcplife", Path: "/x/mcp.json", Level: events.LevelUser}
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{
		stdio(t, "beta", "only=echo,add"),
		stdio(t, "alpha", "only=echo", "instructions=use alpha"),
	}, map[string]events.SourceMeta{"alpha": src})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) != 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	equal(t, "tools", toolNames(res.Tools), []string{"mcp_alpha_echo", "mcp_beta_add", "mcp_beta_echo"})
	equal(t, "connected", res.Connected, []string{"alpha", "beta"})
	if res.Gate.Round != 1 || res.Gate.Outcomes["alpha"] != events.OutcomeReady || res.Gate.Outcomes["beta"] != events.OutcomeReady {
		t.Fatalf("gate %+v", res.Gate)
	}
	for _, name := range []string{"alpha", "beta"} {
		if got := e.m.Status(name); got != projector.StatusConnected {
			t.Errorf("status %s = %s", name, got)
		}
		equal(t, name+" events", e.serverTypes("s1", name), []string{"ServerDiscovered", "ConnectStarted", "ServerConnected", "ToolsListed/initial"})
	}
	alphaEcho := tool(t, e.m, "mcp_alpha_echo")
	if alphaEcho.Server != "alpha" || alphaEcho.Original != "echo" || alphaEcho.Provider != "native" || alphaEcho.Path() != "mcp:alpha via mcplife" {
		t.Fatalf("tool %+v", alphaEcho)
	}
	if !strings.Contains(string(alphaEcho.InputSchema), `"text"`) {
		t.Fatalf("schema %s", alphaEcho.InputSchema)
	}
	if got := e.m.Instructions("alpha"); got != "use alpha" {
		t.Fatalf("instructions %q", got)
	}
	if srv, orig, ok := e.m.Resolve("mcp_beta_add"); !ok || srv != "beta" || orig != "add" {
		t.Fatalf("resolve: %s %s %v", srv, orig, ok)
	}
	if got := e.m.sourceMetas(); got["alpha"] != src || len(got) != 1 {
		t.Fatalf("sources %v", got)
	}
	// The gate event follows every ConnectStarted of the round.
	types := []string{}
	for _, ev := range e.decoded("s1") {
		types = append(types, ev.Type())
	}
	last := slices.Index(types, events.TypeStartupGateElapsed)
	if last < 0 || slices.Contains(types[last+1:], events.TypeConnectStarted) {
		t.Fatalf("event order %v", types)
	}
}

func TestFailingServersAreIsolated(t *testing.T) {
	// A long gate: every outcome is known before it elapses.
	e := newEnv(t, &Options{Gate: time.Minute})
	ctx := testCtx(t)
	hang := stdio(t, "hang", "hang-init")
	hang.TimeoutMs = ms(300)
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{
		stdio(t, "ok", "only=echo"),
		stdio(t, "badinit", "fail-init", "stderr=boom: config missing"),
		stdio(t, "exits", "exit-on-init", "exit-code=3"),
		hang,
		stdio(t, "badlist", "fail-list"),
		{Name: "invalid", Type: "stdio"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "tools", toolNames(res.Tools), []string{"mcp_ok_echo"})
	equal(t, "connected", res.Connected, []string{"badlist", "ok"})
	contains(t, "badinit error", res.Errors["badinit"].Error(), "boom: config missing")
	contains(t, "exits error", res.Errors["exits"].Error(), "process exited with status 3")
	if got, want := res.Errors["hang"].Error(), `Connection to MCP server "hang" timed out after 300ms`; got != want {
		t.Fatalf("hang error %q, want %q", got, want)
	}
	if !errors.Is(res.Errors["hang"], ErrTimeout) {
		t.Fatal("timeout error does not wrap ErrTimeout")
	}
	contains(t, "badlist error", res.Errors["badlist"].Error(), "tools/list")
	if got := res.Errors["invalid"].Error(); got != `Server "invalid": stdio server requires "command" field` {
		t.Fatalf("invalid: %q", got)
	}
	var se *ServerError
	if !errors.As(res.Errors["badinit"], &se) || se.Server != "badinit" || se.Op != OpConnect {
		t.Fatalf("ServerError %+v", se)
	}
	for name, want := range map[string]events.Outcome{"ok": "ready", "badinit": "failed", "exits": "failed", "hang": "failed", "badlist": "failed"} {
		if got := res.Gate.Outcomes[name]; got != want {
			t.Errorf("outcome %s = %s, want %s", name, got, want)
		}
	}
	equal(t, "badinit events", e.serverTypes("s1", "badinit"), []string{"ServerDiscovered", "ConnectStarted", "ConnectFailed"})
	equal(t, "badlist events", e.serverTypes("s1", "badlist"), []string{"ServerDiscovered", "ConnectStarted", "ServerConnected", "ToolsListFailed"})
	equal(t, "invalid events", e.serverTypes("s1", "invalid"), []string{"ServerInvalid"})
	for _, cf := range ofType[*events.ConnectFailed](e, "s1") {
		if cf.Server == "hang" && !cf.TimedOut {
			t.Error("hang: TimedOut not set")
		}
	}
	for name, want := range map[string]projector.Status{"ok": "connected", "badinit": "disconnected", "hang": "disconnected", "badlist": "connected"} {
		if got := e.m.Status(name); got != want {
			t.Errorf("status %s = %s, want %s", name, got, want)
		}
	}
	// A failed server is connected again by a later call.
	res, err = e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "badinit", "fail-init", "stderr=boom: config missing")}, nil)
	if err != nil || res.Errors["badinit"] == nil {
		t.Fatalf("retry: %v %v", res.Errors, err)
	}
	if got := len(ofType[*events.ConnectStarted](e, "s1")); got != 6 {
		t.Fatalf("%d ConnectStarted, want 6", got)
	}
}

func TestGateAwaitsPendingServerWithoutCache(t *testing.T) {
	snap := make(chan map[string]events.Outcome, 1)
	e := newEnv(t, &Options{Gate: 1, OnGate: func(g GateOutcome) { snap <- g.Outcomes }})
	ctx := testCtx(t)
	g := fixturetest.NewGate(t)
	go func() {
		o := <-snap
		if o["slow"] != events.OutcomeAwaited {
			t.Errorf("outcome at snapshot %v", o)
		}
		g.Release()
	}()
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "slow", "only=echo", g.Arg("block-list-until")), stdio(t, "fast", "only=echo")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "tools", toolNames(res.Tools), []string{"mcp_fast_echo", "mcp_slow_echo"})
	if res.Gate.Outcomes["slow"] != events.OutcomeAwaited || res.Gate.Outcomes["fast"] == events.OutcomeFailed {
		t.Fatalf("outcomes %v", res.Gate.Outcomes)
	}
	equal(t, "slow events", e.serverTypes("s1", "slow"), []string{"ServerDiscovered", "ConnectStarted", "ServerConnected", "ToolsListed/initial"})
	// The gate event comes after the awaited list.
	evs := e.decoded("s1")
	if _, ok := evs[len(evs)-1].(*events.StartupGateElapsed); !ok {
		t.Fatalf("last event %T", evs[len(evs)-1])
	}
}

// seedCache records a tool list for server under cfg's hash in another
// session, as an earlier run would have.
func seedCache(t *testing.T, e *env, cfg events.ServerConfig, tools ...string) {
	t.Helper()
	var defs []events.ToolDef
	for _, name := range tools {
		defs = append(defs, events.ToolDef{Name: name, Description: "cached " + name, InputSchema: []byte(`{"type":"object"}`)})
	}
	_, err := e.j.Append(context.Background(), "earlier", &events.ToolsListed{
		Server: cfg.Name, ConfigHash: cfg.Hash(), Tools: defs, Count: len(defs), Cause: events.CauseInitial,
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestGateServesDeferredToolsFromCache(t *testing.T) {
	e := newEnv(t, &Options{Gate: 1})
	ctx := testCtx(t)
	g := fixturetest.NewGate(t)
	slow := stdio(t, "slow", "only=echo,add", g.Arg("block-list-until"))
	seedCache(t, e, slow, "echo")
	updates, err := e.m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{slow, stdio(t, "fast", "only=echo")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Gate.Outcomes["slow"] != events.OutcomeDeferred {
		t.Fatalf("outcomes %v", res.Gate.Outcomes)
	}
	equal(t, "tools at the gate", toolNames(res.Tools), []string{"mcp_fast_echo", "mcp_slow_echo"})
	deferred := tool(t, e.m, "mcp_slow_echo")
	if !deferred.Deferred || deferred.Description != "cached echo" {
		t.Fatalf("deferred tool %+v", deferred)
	}
	// A call on the deferred tool waits for the connection and succeeds
	// even while tools/list is still held.
	r, err := deferred.Call(ctx, map[string]any{"text": "hi"})
	if err != nil || r.Result.IsError || r.Text() != "hi" {
		t.Fatalf("deferred call: %+v %v", r, err)
	}
	g.Release()
	waitFor(t, ctx, updates, func() bool {
		tl := e.m.Tools()
		return len(tl) == 3 && !slices.ContainsFunc(tl, func(t *Tool) bool { return t.Deferred })
	})
	equal(t, "tools after the late list", toolNames(e.m.Tools()), []string{"mcp_fast_echo", "mcp_slow_add", "mcp_slow_echo"})
	// The call may be recorded before ServerConnected: the deferred tool
	// was usable from the gate on.
	types := slices.DeleteFunc(e.serverTypes("s1", "slow"), func(s string) bool { return s == "ServerConnected" })
	equal(t, "slow events", types, []string{"ServerDiscovered", "ConnectStarted", "CachedToolsServed", "ToolCallStarted", "ToolCallFinished", "ToolsListed/late"})
	if i := slices.Index(e.serverTypes("s1", "slow"), "ServerConnected"); i < 3 {
		t.Fatalf("ServerConnected before the cached tools: %v", e.serverTypes("s1", "slow"))
	}
	calls := ofType[*events.ToolCallStarted](e, "s1")
	if len(calls) != 1 || !calls[0].Deferred || calls[0].Tool != "echo" || calls[0].Arguments != nil {
		t.Fatalf("call events %+v", calls)
	}
}

func TestDeferredToolWithoutConnectionFails(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "a", "only=echo")}, nil)
	if err != nil || len(res.Tools) != 1 {
		t.Fatal(res, err)
	}
	echo := res.Tools[0]
	if err := e.m.DisconnectServer(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	r, err := echo.Call(ctx, nil)
	if err != nil || !r.Result.IsError || r.Text() != "MCP error: MCP server not connected: a" {
		t.Fatalf("call after disconnect: %+v %v", r, err)
	}
	if err := e.m.waitForConnection(ctx, "a"); !errors.Is(err, ErrNotConnected) || err.Error() != "MCP server not connected: a" {
		t.Fatalf("waitForConnection: %v", err)
	}
	if len(e.m.Tools()) != 0 || e.m.Status("a") != projector.StatusDisconnected || len(e.m.sourceMetas()) != 0 {
		t.Fatalf("after disconnect: %v %s", toolNames(e.m.Tools()), e.m.Status("a"))
	}
	equal(t, "events", e.serverTypes("s1", "a"), []string{"ServerDiscovered", "ConnectStarted", "ServerConnected", "ToolsListed/initial", "Disconnected/requested"})
	// Idempotent.
	if err := e.m.DisconnectServer(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := e.m.DisconnectAll(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestIncrementalConnectKeepsOtherToolsAndNeverSpawnsTwice(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	a := stdio(t, "a", "only=echo")
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{a}, nil); err != nil {
		t.Fatal(err)
	}
	b := stdio(t, "b", "only=add")
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.m.ConnectServers(ctx, []events.ServerConfig{b, a}, nil)
			if err != nil {
				t.Error(err)
				return
			}
			if !slices.Contains(toolNames(res.Tools), "mcp_a_echo") {
				t.Errorf("incremental result lost a's tools: %v", toolNames(res.Tools))
			}
		}()
	}
	wg.Wait()
	if err := e.m.waitForConnection(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	equal(t, "tools", toolNames(e.m.Tools()), []string{"mcp_a_echo", "mcp_b_add"})
	if got := len(ofType[*events.ConnectStarted](e, "s1")); got != 2 {
		t.Fatalf("%d ConnectStarted, want 2 (one per server)", got)
	}
}

func TestRecordedDiscoveryIsNotRepeated(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	cfg := stdio(t, "a", "only=echo")
	src := events.SourceMeta{Provider: "mcp-json", Path: "/p/mcp.json", Level: events.LevelProject}
	err := e.m.RecordDiscovery(ctx,
		&events.ServerDiscovered{Server: "a", Source: src, Transport: events.TransportStdio, ConfigHash: cfg.Hash(), Config: cfg.Redact()},
		&events.ServerSkipped{Server: "b", Reason: events.SkipDisabled, Source: src},
	)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{cfg}, map[string]events.SourceMeta{"a": src}); err != nil {
		t.Fatal(err)
	}
	equal(t, "a events", e.serverTypes("s1", "a"), []string{"ServerDiscovered", "ConnectStarted", "ServerConnected", "ToolsListed/initial"})
	if tl := tool(t, e.m, "mcp_a_echo"); tl.Provider != "mcp-json" {
		t.Fatalf("provider %q", tl.Provider)
	}
}

func TestReconnectFromAnotherSourceRecordsIt(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	cfg := stdio(t, "a", "only=echo")
	user := events.SourceMeta{Provider: "claude-code", ProviderName: "Claude Code", Path: "/home/u/.claude.json", Level: events.LevelUser}
	project := events.SourceMeta{Provider: "mcp-json", ProviderName: "Project", Path: "/p/.mcp.json", Level: events.LevelProject}
	connect := func(src events.SourceMeta) {
		t.Helper()
		if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{cfg}, map[string]events.SourceMeta{"a": src}); err != nil {
			t.Fatal(err)
		}
	}
	connect(user)
	connect(user) // connected: nothing new
	if got := tool(t, e.m, "mcp_a_echo").Path(); got != "mcp:a via Claude Code" {
		t.Fatalf("path %q", got)
	}
	if err := e.m.DisconnectServer(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	// The same config, now from the project's file.
	connect(project)
	if got := tool(t, e.m, "mcp_a_echo").Path(); got != "mcp:a via Project" {
		t.Fatalf("path after the reconnect %q", got)
	}
	if got, want := e.m.sourceMetas()["a"], project; got != want {
		t.Fatalf("sources %+v", got)
	}
	var recorded []events.SourceMeta
	for _, d := range ofType[*events.ServerDiscovered](e, "s1") {
		recorded = append(recorded, d.Source)
	}
	if !slices.Equal(recorded, []events.SourceMeta{user, project}) {
		t.Fatalf("ServerDiscovered sources %+v", recorded)
	}
	checkReplay(t, e)
}

// TestRecordEntryPointsTakeTheirKindsOnly: discovery outcomes and session
// events are recorded through their own entry points, which refuse any
// other event and then record nothing.
func TestRecordEntryPointsTakeTheirKindsOnly(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	if err := e.m.RecordDiscovery(ctx,
		&events.DiscoveryFailed{Path: "/p/.mcp.json", Error: "bad"},
		&events.ServerConnected{Server: "a"},
	); err == nil || !strings.Contains(err.Error(), "ServerConnected is not a discovery outcome") {
		t.Errorf("RecordDiscovery of a ServerConnected: %v", err)
	}
	if err := e.m.RecordSession(ctx, &events.Disconnected{Server: "a"}); err == nil || !strings.Contains(err.Error(), "Disconnected is not a session event") {
		t.Errorf("RecordSession of a Disconnected: %v", err)
	}
	if evs := e.events("s1"); len(evs) != 0 {
		t.Fatalf("refused events recorded: %d events", len(evs))
	}
	if err := e.m.RecordSession(ctx, &events.SessionStarted{Cwd: "/p"}); err != nil {
		t.Fatal(err)
	}
	if err := e.m.RecordDiscovery(ctx, &events.DiscoveryFailed{Path: "/p/.mcp.json", Error: "bad"}); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, env := range e.events("s1") {
		types = append(types, env.Type)
	}
	equal(t, "events", types, []string{events.TypeSessionStarted, events.TypeDiscoveryFailed})
}
