package manager

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/projector"
)

// pidOf calls the pid tool of server and returns the server's pid.
func pidOf(t *testing.T, m *Manager, server string) int {
	t.Helper()
	r, err := tool(t, m, "mcp_"+server+"_pid").Call(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var info fixture.ProcessInfo
	if err := json.Unmarshal(structuredJSON(r), &info); err != nil {
		t.Fatalf("pid result %s: %v", structuredJSON(r), err)
	}
	return info.PID
}

// configLines describes the events recorded from the first ConfigChanged
// on, one line per event of the types a config change concerns. Within a
// run of ServerConnected and ToolsListed events, where servers connect in
// parallel, lines are ordered by server (each server's own order kept), so
// the result is deterministic.
func configLines(e *env) []string {
	e.t.Helper()
	keep := []string{
		events.TypeConfigChanged, events.TypeDisconnected, events.TypeServerDiscovered, events.TypeConnectStarted,
		events.TypeServerConnected, events.TypeConnectFailed, events.TypeToolsListed, events.TypeStartupGateElapsed,
		events.TypeToolCallStarted, events.TypeToolCallFinished,
	}
	var out []string
	var servers []string // the server of each line, for the parallel runs
	started := false
	for _, ev := range e.decoded(e.session) {
		started = started || ev.Type() == events.TypeConfigChanged
		if !started || !slices.Contains(keep, ev.Type()) {
			continue
		}
		out = append(out, ev.Type()+" "+events.Describe(ev))
		servers = append(servers, events.ServerOf(ev))
	}
	parallel := func(line string) bool {
		return strings.HasPrefix(line, events.TypeServerConnected+" ") || strings.HasPrefix(line, events.TypeToolsListed+" ")
	}
	for i := 0; i < len(out); {
		j := i
		for j < len(out) && parallel(out[j]) {
			j++
		}
		if j == i {
			i++
			continue
		}
		idx := make([]int, j-i)
		for k := range idx {
			idx[k] = i + k
		}
		slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(servers[a], servers[b]) })
		run := make([]string, len(idx))
		for k, x := range idx {
			run[k] = out[x]
		}
		copy(out[i:j], run)
		i = j
	}
	return out
}

// An edit that adds one server, changes one and removes one leaves the
// unchanged server alone: same process, and a call in flight across the
// edit completes.
func TestApplyConfigsEdit(t *testing.T) {
	e := newEnv(t, &Options{Gate: time.Minute})
	ctx := testCtx(t)
	keep := stdio(t, "keep", "only=sleep,pid")
	change := stdio(t, "change", "only=echo")
	gone := stdio(t, "gone", "only=echo")
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{keep, change, gone}, nil); err != nil {
		t.Fatal(err)
	}
	pid := pidOf(t, e.m, "keep")

	inside := fixturetest.NewGate(t)
	sleep := tool(t, e.m, "mcp_keep_sleep")
	type result struct {
		text string
		err  error
	}
	call := make(chan result, 1)
	go func() {
		r, err := sleep.Call(ctx, map[string]any{"gate": inside.Path()})
		if err != nil {
			call <- result{err: err}
			return
		}
		call <- result{text: r.Text()}
	}()
	if err := inside.WaitReached(ctx, 1); err != nil {
		t.Fatal(err)
	}

	changed := stdio(t, "change", "only=echo,add")
	added := stdio(t, "added", "only=echo")
	res, err := e.m.ApplyConfigs(ctx, []string{"/p/.mcp.json"}, []events.ServerConfig{keep, changed, added}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"added", "change"}; !slices.Equal(res.Connected, want) || len(res.Errors) != 0 {
		t.Fatalf("connected %v, errors %v; want %v and none", res.Connected, res.Errors, want)
	}
	if got := toolNames(res.Tools); !slices.Equal(got, []string{"mcp_added_echo", "mcp_change_add", "mcp_change_echo", "mcp_keep_pid", "mcp_keep_sleep"}) {
		t.Errorf("tools after the edit: %v", got)
	}
	select {
	case r := <-call:
		t.Fatalf("the call on the unchanged server ended during the edit: %+v", r)
	default:
	}
	inside.Release()
	if r := <-call; r.err != nil || r.text != "released" {
		t.Fatalf("call across the edit: %q, %v", r.text, r.err)
	}
	if got := pidOf(t, e.m, "keep"); got != pid {
		t.Errorf("unchanged server's pid %d, was %d", got, pid)
	}

	want := []string{
		"ConfigChanged paths=[/p/.mcp.json] added=[added] changed=[change] removed=[gone]",
		"Disconnected change reason=config changed exit=0",
		"Disconnected gone reason=config changed exit=0",
		"ServerDiscovered added transport=stdio source=/",
		"ServerDiscovered change transport=stdio source=/",
		"ConnectStarted added transport=stdio attempt=1 round=2",
		"ConnectStarted change transport=stdio attempt=2 round=2",
		"ServerConnected added protocol=2025-11-25 peer=mcplife-fixture",
		"ToolsListed added cause=initial count=1 tools=[echo]",
		"ServerConnected change protocol=2025-11-25 peer=mcplife-fixture",
		"ToolsListed change cause=initial count=2 tools=[add echo]",
		"StartupGateElapsed round=2 outcomes=[added=ready change=ready]",
		"ToolCallFinished keep tool=sleep isError=false",
		"ToolCallStarted keep tool=pid deferred=false",
		"ToolCallFinished keep tool=pid isError=false",
	}
	if diff := cmp.Diff(want, configLines(e)); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
	cc := ofType[*events.ConfigChanged](e, e.session)
	discs := ofType[*events.Disconnected](e, e.session)
	if len(cc) != 1 || len(discs) != 2 {
		t.Fatalf("%d ConfigChanged, %d Disconnected", len(cc), len(discs))
	}
	// One correlation ties the change to its teardowns.
	var ids []string
	for _, env := range e.events(e.session) {
		if env.Type == events.TypeConfigChanged || env.Type == events.TypeDisconnected {
			ids = append(ids, env.CorrelationID)
		}
	}
	if len(ids) != 3 || ids[0] == "" || ids[1] != ids[0] || ids[2] != ids[0] {
		t.Errorf("correlation ids %q, want one shared", ids)
	}
	if got := e.m.sourceMetas(); len(got) != 0 {
		t.Errorf("sources %v", got)
	}
}

// A server that is not running stays down across an edit that leaves its
// config alone, is connected again when its config changes, and is
// forgotten when the config drops it, so putting it back adds it, as it
// adds a running server that an edit removed.
func TestApplyConfigsServerNotRunning(t *testing.T) {
	e := newEnv(t, &Options{Gate: time.Minute})
	ctx := testCtx(t)
	up := stdio(t, "up", "only=echo")
	broken := stdio(t, "down", "only=echo", "fail-init")
	fixed := stdio(t, "down", "only=echo")
	if res, err := e.m.ConnectServers(ctx, []events.ServerConfig{up, broken}, nil); err != nil || res.Errors["down"] == nil {
		t.Fatalf("connect: %v, %v", res, err)
	}
	starts := func() int {
		n := 0
		for _, cs := range ofType[*events.ConnectStarted](e, e.session) {
			if cs.Server == "down" {
				n++
			}
		}
		return n
	}
	steps := []struct {
		configs                        []events.ServerConfig
		added, changed, removed, conns []string
		downStarts                     int
	}{
		{configs: []events.ServerConfig{up, broken}, downStarts: 1},
		{configs: []events.ServerConfig{up}, downStarts: 1},
		{configs: []events.ServerConfig{up, broken}, added: []string{"down"}, downStarts: 2},
		{configs: []events.ServerConfig{up, fixed}, changed: []string{"down"}, conns: []string{"down"}, downStarts: 3},
		{configs: []events.ServerConfig{up}, removed: []string{"down"}, downStarts: 3},
		{configs: []events.ServerConfig{up, fixed}, added: []string{"down"}, conns: []string{"down"}, downStarts: 4},
	}
	for i, st := range steps {
		res, err := e.m.ApplyConfigs(ctx, []string{"/p/.mcp.json"}, st.configs, nil)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if !slices.Equal(res.Connected, st.conns) {
			t.Errorf("step %d: connected %v, want %v", i, res.Connected, st.conns)
		}
		cc := ofType[*events.ConfigChanged](e, e.session)
		last := cc[len(cc)-1]
		if len(cc) != i+1 || !slices.Equal(last.Added, st.added) || !slices.Equal(last.Changed, st.changed) || !slices.Equal(last.Removed, st.removed) {
			t.Errorf("step %d: ConfigChanged %+v, want added %v changed %v removed %v", i, last, st.added, st.changed, st.removed)
		}
		if n := starts(); n != st.downStarts {
			t.Errorf("step %d: %d ConnectStarted of down, want %d", i, n, st.downStarts)
		}
	}
	if d := ofType[*events.Disconnected](e, e.session); len(d) != 1 || d[0].Server != "down" || d[0].Reason != events.ReasonConfigChanged {
		t.Errorf("Disconnected %+v; want only down's removal", d)
	}
	if got := e.m.Status("down"); got != "connected" {
		t.Errorf("down is %s after its fix", got)
	}
}

// A server whose config is the same but now comes from another file keeps
// its connection; its new source is recorded.
func TestApplyConfigsSourceMoved(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	srv := stdio(t, "fx", "only=pid")
	project := events.SourceMeta{Provider: "claude-code", Level: "project", ProviderName: "Claude Code", Path: "/p/.mcp.json"}
	user := events.SourceMeta{Provider: "claude-code", Level: "user", ProviderName: "Claude Code", Path: "/h/.claude.json"}
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{srv}, map[string]events.SourceMeta{"fx": project}); err != nil {
		t.Fatal(err)
	}
	pid := pidOf(t, e.m, "fx")
	res, err := e.m.ApplyConfigs(ctx, []string{"/p/.mcp.json", "/h/.claude.json"}, []events.ServerConfig{srv}, map[string]events.SourceMeta{"fx": user})
	if err != nil {
		t.Fatal(err)
	}
	if res.Gate.Round != 0 || len(res.Connected) != 0 {
		t.Errorf("the edit connected something: %+v", res)
	}
	cc := ofType[*events.ConfigChanged](e, e.session)
	if len(cc) != 1 || len(cc[0].Added)+len(cc[0].Changed)+len(cc[0].Removed) != 0 {
		t.Fatalf("ConfigChanged %+v", cc)
	}
	if got := e.m.sourceMetas()["fx"]; got != user {
		t.Errorf("source %+v, want %+v", got, user)
	}
	if got := e.m.View().Tools()[0].Server; got != "fx" {
		t.Fatalf("tool of %s", got)
	}
	st, _ := e.m.View().Server("fx")
	if st.Source != user {
		t.Errorf("view's source %+v", st.Source)
	}
	if got := pidOf(t, e.m, "fx"); got != pid {
		t.Errorf("pid %d, was %d", got, pid)
	}
}

// A change that could not be applied is recorded with its error, redacted,
// and every server keeps running.
func TestRecordConfigError(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "fx", "only=pid")}, nil); err != nil {
		t.Fatal(err)
	}
	pid := pidOf(t, e.m, "fx")
	err := errors.New("/p/.mcp.json:3:1: invalid character '}' near https://x.test/?api_key=s3cret")
	if err := e.m.RecordConfigError([]string{"/p/.mcp.json"}, err); err != nil {
		t.Fatal(err)
	}
	cc := ofType[*events.ConfigChanged](e, e.session)
	if len(cc) != 1 || !slices.Equal(cc[0].Paths, []string{"/p/.mcp.json"}) || len(cc[0].Added)+len(cc[0].Changed)+len(cc[0].Removed) != 0 {
		t.Fatalf("ConfigChanged %+v", cc)
	}
	if got := cc[0].Error; strings.Contains(got, "s3cret") || !strings.Contains(got, "invalid character") {
		t.Errorf("error %q: want the parse error without the secret", got)
	}
	if got := e.m.Status("fx"); got != "connected" || pidOf(t, e.m, "fx") != pid {
		t.Errorf("fx is %s after a failed change", got)
	}
	if n := len(ofType[*events.Disconnected](e, e.session)); n != 0 {
		t.Errorf("%d Disconnected", n)
	}
}

// ApplyConfigs and RecordConfigError refuse a closed manager.
func TestApplyConfigsClosed(t *testing.T) {
	e := newEnv(t, nil)
	if err := e.m.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.ApplyConfigs(testCtx(t), nil, nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("ApplyConfigs: %v", err)
	}
	if err := e.m.RecordConfigError(nil, errors.New("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("RecordConfigError: %v", err)
	}
}

// A server whose reconnects gave up stays failed across an edit that
// leaves its config alone, and connects with a fresh breaker when its
// config changes.
func TestApplyConfigsAfterGaveUp(t *testing.T) {
	e := newEnv(t, &Options{Gate: time.Minute, Reconnect: ReconnectPolicy{
		Initial: time.Millisecond, Max: time.Millisecond, NoJitter: true, BreakerAttempts: 2,
	}})
	ctx := testCtx(t)
	updates, err := e.m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	crashy := stdio(t, "crashy", "only=echo", "exit-after-init")
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{crashy}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, updates, func() bool { return e.m.Status("crashy") == projector.StatusFailed })
	if _, err := e.m.ApplyConfigs(ctx, []string{"/p/.mcp.json"}, []events.ServerConfig{crashy}, nil); err != nil {
		t.Fatal(err)
	}
	if st := e.m.Status("crashy"); st != projector.StatusFailed {
		t.Errorf("after an unrelated edit crashy is %s", st)
	}
	fixed := stdio(t, "crashy", "only=echo")
	res, err := e.m.ApplyConfigs(ctx, []string{"/p/.mcp.json"}, []events.ServerConfig{fixed}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Connected, []string{"crashy"}) {
		t.Fatalf("connected %v, errors %v", res.Connected, res.Errors)
	}
	cc := ofType[*events.ConfigChanged](e, e.session)
	if len(cc) != 2 || len(cc[0].Changed) != 0 || !slices.Equal(cc[1].Changed, []string{"crashy"}) {
		t.Errorf("ConfigChanged %+v %+v", cc[0], cc[len(cc)-1])
	}
}
