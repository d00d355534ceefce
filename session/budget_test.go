package session_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/session"
	"github.com/mcplife/mcplife/store"
)

// budgetProject is a project with one server of 45 tools ("big") and one
// of a single tool marked alwaysLoad ("pinned").
func budgetProject(t *testing.T) (cwd, home string) {
	pinned := fixtureConfig(t, "only=echo")
	pinned.AlwaysLoad = true
	return project(t, map[string]events.ServerConfig{
		"big":    fixtureConfig(t, "tools=30"),
		"pinned": pinned,
	})
}

func startBudget(t *testing.T, j *journal.Journal, cwd, home string, budget int) *session.Session {
	t.Helper()
	own := session.Tool{Name: "read_file", Description: "the agent's own tool"}
	s, err := session.Start(t.Context(), j, &session.Options{Loader: loader.Options{Cwd: cwd, Home: home},
		Manager: &manager.Options{Gate: 1 << 40}, Tools: []session.Tool{own}, ToolBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	if err := s.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

// Under the budget, or without one, the session exposes exactly what it
// exposed before budgets existed.
func TestToolBudgetUnderBudgetChangesNothing(t *testing.T) {
	cwd, home := budgetProject(t)
	j, _ := newJournal(t)
	off := startBudget(t, j, cwd, home, 0)
	under := startBudget(t, j, cwd, home, 1_000_000)
	// The same tools; each session's order is that of its servers' lists.
	if got, want := slices.Sorted(slices.Values(names(under.Tools()))), slices.Sorted(slices.Values(names(off.Tools()))); !slices.Equal(got, want) || len(got) != 46 {
		t.Fatalf("under budget: %d tools %v\nwithout budget: %d tools %v", len(got), got, len(want), want)
	}
	if slices.Contains(names(under.Tools()), session.SearchToolName) {
		t.Error("the search tool is exposed under budget")
	}
	e := under.Exposure()
	if e.Applied || e.Total != 45 || e.Loaded != 45 || e.Tokens == 0 || e.LoadedTokens != e.Tokens {
		t.Errorf("exposure under budget = %+v", e)
	}
	if e := off.Exposure(); e.Budget != 0 || e.Applied || e.Tokens != 0 {
		t.Errorf("exposure without budget = %+v", e)
	}
}

// callJSON calls a tool of the session and decodes its text result.
func callJSON(t *testing.T, s *session.Session, name string, args string, out any) {
	t.Helper()
	tool, ok := s.Tool(name)
	if !ok {
		t.Fatalf("%s is not exposed; tools: %v", name, names(s.Tools()))
	}
	res, err := tool.Call(t.Context(), json.RawMessage(args))
	if err != nil || res.Result.IsError {
		t.Fatalf("call %s: %v %+v", name, err, res)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(res.Text()), out); err != nil {
			t.Fatalf("%s result: %v\n%s", name, err, res.Text())
		}
	}
}

type searchOut struct {
	Loaded []string `json:"loaded"`
	Tools  []struct {
		Name, Server, Description string
		InputSchema               json.RawMessage
	} `json:"tools"`
}

// waitView blocks on the manager's updates until cond holds for its tools.
func waitView(t *testing.T, updates <-chan manager.Update, m *manager.Manager, cond func(names []string) bool) {
	t.Helper()
	for {
		var ns []string
		for _, tl := range m.Tools() {
			ns = append(ns, tl.Name)
		}
		if cond(ns) {
			return
		}
		select {
		case <-updates:
		case <-t.Context().Done():
			t.Fatalf("condition never held; view: %v", ns)
		}
	}
}

// replayExposure folds the session's recorded events into a fresh view
// and returns the MCP tool names the budget exposes there.
func replayExposure(t *testing.T, st store.Store, session_ string, budget int) []string {
	t.Helper()
	v := projector.NewToolView(session_)
	for env, err := range st.ReadStream(t.Context(), session_, 1) {
		if err != nil {
			t.Fatal(err)
		}
		v.Apply(env)
	}
	var out []string
	for _, tl := range session.ExposedTools(v, session.Expose(v, budget)) {
		out = append(out, tl.Name)
	}
	return out
}

func liveExposure(s *session.Session) []string {
	var out []string
	for _, tl := range s.Tools() {
		if tl.MCP != nil {
			out = append(out, tl.Name)
		}
	}
	return out
}

// Over the budget the session exposes the agent's tools, the alwaysLoad
// server and the search tool; a search loads its matches (recorded as
// ToolsActivated, without the query); loaded tools survive a re-list
// and are unloaded by one that drops them; a replay of the recorded
// events exposes what the live session exposed.
func TestToolBudgetOverBudgetSearchLoads(t *testing.T) {
	cwd, home := budgetProject(t)
	j, st := newJournal(t)
	const budget = 300
	s := startBudget(t, j, cwd, home, budget)
	sub, err := s.Subagent(nil)
	if err != nil {
		t.Fatal(err)
	}

	if got, want := names(s.Tools()), []string{"read_file", session.SearchToolName, "mcp_pinned_echo"}; !slices.Equal(got, want) {
		t.Fatalf("over budget: tools %v, want %v", got, want)
	}
	e := s.Exposure()
	if !e.Applied || e.Budget != budget || e.Total != 45 || e.Loaded != 1 || e.Tokens <= budget || e.LoadedTokens >= budget {
		t.Errorf("exposure = %+v", e)
	}
	if got := names(sub.Tools()); !slices.Equal(got, []string{session.SearchToolName, "mcp_pinned_echo"}) {
		t.Errorf("subagent tools = %v", got)
	}

	// Bad arguments are the tool's error, not the session's.
	search, _ := s.Tool(session.SearchToolName)
	if res, err := search.Call(t.Context(), json.RawMessage(`{"server":"big"}`)); err != nil || !res.Result.IsError || !strings.Contains(res.Text(), "query") {
		t.Errorf("search without query: %v %+v", err, res)
	}

	const query = "add two numbers zzsecretzz"
	var found searchOut
	callJSON(t, sub, session.SearchToolName, fmt.Sprintf(`{"query":%q,"server":"big","limit":1}`, query), &found)
	if len(found.Tools) == 0 || found.Tools[0].Name != "mcp_big_add" || found.Tools[0].Server != "big" || len(found.Tools[0].InputSchema) == 0 {
		t.Fatalf("search found %+v", found.Tools)
	}
	if !slices.Contains(found.Loaded, "mcp_big_add") {
		t.Fatalf("search loaded %v", found.Loaded)
	}
	// The parent and the subagent share the loaded set.
	for _, x := range []*session.Session{s, sub} {
		if !slices.Contains(names(x.Tools()), "mcp_big_add") {
			t.Fatalf("mcp_big_add not exposed after the search: %v", names(x.Tools()))
		}
	}
	callJSON(t, s, "mcp_big_add", `{"a":2,"b":3}`, nil)

	// The host loads by name too; unknown names are reported.
	if err := s.LoadTools(t.Context(), "mcp_big_change_tools", "mcp_big_nope"); err == nil || !strings.Contains(err.Error(), "mcp_big_nope") {
		t.Errorf("LoadTools with an unknown name: %v", err)
	}
	if got := replayExposure(t, st, s.ID(), budget); !slices.Equal(got, liveExposure(s)) {
		t.Errorf("replayed exposure %v, live %v", got, liveExposure(s))
	}

	updates, err := s.Manager().Watch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// A re-list that keeps the loaded tools keeps them loaded.
	callJSON(t, s, "mcp_big_change_tools", `{"remove":"fail"}`, nil)
	waitView(t, updates, s.Manager(), func(ns []string) bool { return !slices.Contains(ns, "mcp_big_fail") })
	s.RefreshMCPTools()
	// In the order of exposure: the alwaysLoad server's tool, then the
	// loaded ones in the order they were loaded.
	if got := liveExposure(s); !slices.Equal(got, []string{"mcp_pinned_echo", "mcp_big_add", "mcp_big_change_tools"}) {
		t.Fatalf("after a re-list the exposed MCP tools are %v", got)
	}
	// A re-list without a loaded tool unloads it; listed again, it stays
	// held back until loaded again.
	callJSON(t, s, "mcp_big_change_tools", `{"remove":"add"}`, nil)
	waitFor(t, s, func(ts []session.Tool) bool { return !slices.Contains(names(ts), "mcp_big_add") })
	callJSON(t, s, "mcp_big_change_tools", `{"add":"add"}`, nil)
	waitView(t, updates, s.Manager(), func(ns []string) bool { return slices.Contains(ns, "mcp_big_add") })
	s.RefreshMCPTools()
	if slices.Contains(names(s.Tools()), "mcp_big_add") {
		t.Error("a tool dropped and listed again came back loaded")
	}
	if got := replayExposure(t, st, s.ID(), budget); !slices.Equal(got, liveExposure(s)) {
		t.Errorf("replayed exposure %v, live %v", got, liveExposure(s))
	}

	// The recorded activations: tool names and the cause, never the query.
	var acts []events.ToolsActivated
	for env, err := range st.ReadStream(t.Context(), s.ID(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(env.Data), "zzsecretzz") {
			t.Errorf("%s records the search query: %s", env.Type, env.Data)
		}
		if env.Type == events.TypeToolsActivated {
			ev, _ := events.Decode(env)
			acts = append(acts, *ev.(*events.ToolsActivated))
		}
		if env.Type == events.TypeSessionStarted && !strings.Contains(string(env.Data), `"toolBudget":"300"`) {
			t.Errorf("SessionStarted does not record the budget: %s", env.Data)
		}
	}
	want := []events.ToolsActivated{
		{Tools: []string{"mcp_big_add"}, By: events.ActivatedBySearch},
		{Tools: []string{"mcp_big_change_tools"}, By: events.ActivatedByHost},
	}
	if len(acts) != 2 || !slices.Equal(acts[0].Tools, want[0].Tools) || acts[0].By != want[0].By ||
		!slices.Equal(acts[1].Tools, want[1].Tools) || acts[1].By != want[1].By {
		t.Errorf("ToolsActivated = %+v, want %+v", acts, want)
	}
}

// No exposed MCP tool name can be the search tool's, nor start like it:
// naming turns every run of other characters into one "_" and trims the
// edges of each part, hash-suffixed names included.
func TestSearchToolNameNeverCollides(t *testing.T) {
	parts := []string{"", "_", "__", "search", "_search", "search_tools", "_search_tools", "mcp", "mcp_", "mcp__search_tools",
		"__search_tools", " search tools ", "Search-Tools", "ツール", strings.Repeat("x", 80), "a__b", "-"}
	var refs []projector.ToolRef
	for _, srv := range parts {
		for _, tool := range parts {
			refs = append(refs, projector.ToolRef{Server: srv, Tool: tool})
			// Twice the same sanitised pair: the second gets a hash suffix.
			refs = append(refs, projector.ToolRef{Server: srv + "!", Tool: tool + "?"})
		}
	}
	assigned, collisions := projector.AssignNames(refs)
	if len(collisions) == 0 {
		t.Fatal("no collision was resolved; the test does not cover hash suffixes")
	}
	for ref, name := range assigned {
		if name == session.SearchToolName || strings.HasPrefix(name, "mcp__") || strings.Contains(name, "__") {
			t.Errorf("%+v is named %q", ref, name)
		}
	}
}

func FuzzSearchToolNameNeverCollides(f *testing.F) {
	f.Add("", "search_tools")
	f.Add("_", "_search_tools")
	f.Add("__", "__")
	f.Fuzz(func(t *testing.T, server, tool string) {
		if name := projector.ToolName(server, tool); strings.HasPrefix(name, "mcp__") {
			t.Errorf("ToolName(%q, %q) = %q", server, tool, name)
		}
	})
}
