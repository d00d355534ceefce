package session_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/session"
	"github.com/mcplife/mcplife/store"
)

// replayOrder folds the session's recorded events and returns the MCP
// tools it exposed, in the order it offered them.
func replayOrder(t *testing.T, st store.Store, id string) []string {
	t.Helper()
	v := projector.NewToolView(id)
	for env, err := range st.ReadStream(t.Context(), id, 1) {
		if err != nil {
			t.Fatal(err)
		}
		v.Apply(env)
	}
	var out []string
	for _, tl := range session.ExposedTools(v, session.Expose(v, 0)) {
		out = append(out, tl.Name)
	}
	return out
}

// Tools keeps the agent's tools first, as given, then the MCP tools in
// the order they were first exposed: a server connected later comes
// after, whatever its name; one that goes leaves the others in place, and
// comes back to its place. A replay of the recorded events gives the same
// list.
func TestToolsKeepTheirOrder(t *testing.T) {
	j, st := newJournal(t)
	zfast := fixtureConfig(t, "only=echo,add")
	zfast.Name = "zfast"
	alate := fixtureConfig(t, "only=pid,env")
	alate.Name = "alate"
	own := []session.Tool{{Name: "zz_own"}, {Name: "aa_own"}}
	s, err := session.Start(t.Context(), j, &session.Options{Loader: loader.Options{Cwd: t.TempDir()},
		Servers: []events.ServerConfig{zfast}, Tools: own, Manager: &manager.Options{Gate: 1 << 40}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	check := func(step string, want ...string) {
		t.Helper()
		s.RefreshMCPTools()
		if got := names(s.Tools()); !slices.Equal(got, want) {
			t.Errorf("%s: tools %v, want %v", step, got, want)
		}
		if got := replayOrder(t, st, s.ID()); !slices.Equal(got, want[2:]) {
			t.Errorf("%s: replayed %v, live %v", step, got, want[2:])
		}
	}
	check("at the gate", "zz_own", "aa_own", "mcp_zfast_add", "mcp_zfast_echo")

	if _, err := s.Manager().ConnectServers(t.Context(), []events.ServerConfig{alate}, nil); err != nil {
		t.Fatal(err)
	}
	check("late server", "zz_own", "aa_own", "mcp_zfast_add", "mcp_zfast_echo", "mcp_alate_env", "mcp_alate_pid")

	if err := s.Manager().DisconnectServer(t.Context(), "zfast"); err != nil {
		t.Fatal(err)
	}
	check("first server gone", "zz_own", "aa_own", "mcp_alate_env", "mcp_alate_pid")

	if _, err := s.Manager().ConnectServers(t.Context(), []events.ServerConfig{zfast}, nil); err != nil {
		t.Fatal(err)
	}
	check("first server back", "zz_own", "aa_own", "mcp_zfast_add", "mcp_zfast_echo", "mcp_alate_env", "mcp_alate_pid")
}

// With ToolsCallTool the session offers two tools that never change while
// servers come and go: the list tool lists every MCP tool (in the session's
// order, optionally of one server) and the call tool calls one, recorded
// as a call of that tool. Bad arguments and unknown names are the tool's
// error results.
func TestCallToolMode(t *testing.T) {
	j, st := newJournal(t)
	a := fixtureConfig(t, "only=echo")
	a.Name = "a"
	b := fixtureConfig(t, "only=pid")
	b.Name = "b"
	s, err := session.Start(t.Context(), j, &session.Options{Loader: loader.Options{Cwd: t.TempDir()}, ToolMode: session.ToolsCallTool,
		Servers: []events.ServerConfig{a}, Tools: []session.Tool{{Name: "own"}}, Manager: &manager.Options{Gate: 1 << 40}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	want := []string{"own", session.ListToolsName, session.CallToolName}
	if got := names(s.Tools()); !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	before := s.Tools()
	if _, err := s.Manager().ConnectServers(t.Context(), []events.ServerConfig{b}, nil); err != nil {
		t.Fatal(err)
	}
	s.RefreshMCPTools()
	after := s.Tools()
	for i := range after {
		if after[i].Name != before[i].Name || after[i].Description != before[i].Description || string(after[i].InputSchema) != string(before[i].InputSchema) {
			t.Errorf("tool %d changed when a server connected: %+v, was %+v", i, after[i], before[i])
		}
	}

	call := func(tool, args string) *manager.CallResult {
		t.Helper()
		tl, ok := s.Tool(tool)
		if !ok {
			t.Fatalf("no tool %s", tool)
		}
		res, err := tl.Call(t.Context(), json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s %s: %v", tool, args, err)
		}
		return res
	}
	var listed struct {
		Tools []struct {
			Name, Server, Description string
			InputSchema               json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(call(session.ListToolsName, `{}`).Text()), &listed); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range listed.Tools {
		got = append(got, tl.Server+"/"+tl.Name)
		if len(tl.InputSchema) == 0 || tl.Description == "" {
			t.Errorf("listed %s without its schema or description", tl.Name)
		}
	}
	if !slices.Equal(got, []string{"a/mcp_a_echo", "b/mcp_b_pid"}) {
		t.Errorf("listed %v", got)
	}
	if res := call(session.ListToolsName, `{"server":"b"}`); !strings.Contains(res.Text(), "mcp_b_pid") || strings.Contains(res.Text(), "mcp_a_echo") {
		t.Errorf("list of b: %s", res.Text())
	}

	if res := call(session.CallToolName, `{"name":"mcp_a_echo","arguments":{"text":"through the call tool"}}`); res.Result.IsError || res.Text() != "through the call tool" {
		t.Errorf("call_tool echo: %+v", res)
	}
	for args, want := range map[string]string{
		`{"name":"mcp_a_nope"}`:                   `no MCP tool "mcp_a_nope"; mcp__list_tools lists the tools`,
		`{"arguments":{}}`:                        "naming the tool to call",
		`{"name":"mcp_a_echo","arguments":"hi"}`:  `"arguments" must be an object`,
		`{"name":"` + session.CallToolName + `"}`: "(call it directly)",
	} {
		if res := call(session.CallToolName, args); !res.Result.IsError || !strings.Contains(res.Text(), want) {
			t.Errorf("call_tool %s: %+v, want an error result saying %q", args, res, want)
		}
	}
	// The call is recorded as a call of the tool called; the mode is
	// recorded at the start.
	if err := j.Flush(t.Context()); err != nil { // calls are deferred appends
		t.Fatal(err)
	}
	var calls []string
	for env, err := range st.ReadStream(t.Context(), s.ID(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		if env.Type == events.TypeSessionStarted && !strings.Contains(string(env.Data), `"toolMode":"call_tool"`) {
			t.Errorf("SessionStarted does not record the mode: %s", env.Data)
		}
		if env.Type == events.TypeToolCallStarted {
			ev, _ := events.Decode(env)
			c := ev.(*events.ToolCallStarted)
			calls = append(calls, c.Server+"/"+c.Tool)
		}
	}
	if !slices.Equal(calls, []string{"a/echo"}) {
		t.Errorf("recorded calls %v, want a/echo", calls)
	}
}

// ToolsCallTool and a tool budget are two ways to keep the list short;
// asking for both, or for an unknown mode, is an error.
func TestToolModeOptionsChecked(t *testing.T) {
	for _, o := range []session.Options{
		{ToolMode: session.ToolsCallTool, ToolBudget: 100},
		{ToolMode: "everything"},
	} {
		o.Servers = []events.ServerConfig{}
		if _, err := session.Start(t.Context(), nil, &o); err == nil || !strings.Contains(err.Error(), "ToolMode") {
			t.Errorf("Start(%+v) = %v", o, err)
		}
	}
}
