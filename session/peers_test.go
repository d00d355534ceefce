package session_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/peers"
	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/session"
)

// The real servers the project tests against, under the budget mcp-audit
// run uses by default (20,000 tokens) and under one they exceed. The test
// logs the estimated tokens of the exposed tool set with and without the
// budget applied.
func TestToolBudgetRealServers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node servers")
	}
	node, everything := peers.Everything(t)
	_, filesystem := peers.Filesystem(t)
	servers := []events.ServerConfig{
		{Name: "everything", Command: node, Args: []string{everything, "stdio"}},
		{Name: "filesystem", Command: node, Args: []string{filesystem, t.TempDir()}},
	}
	j, _ := newJournal(t)
	start := func(budget int) *session.Session {
		s, err := session.Start(t.Context(), j, &session.Options{Loader: loader.Options{Cwd: t.TempDir()}, Servers: servers,
			Manager: &manager.Options{Gate: 1 << 40}, ToolBudget: budget})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(context.Background()) })
		if err := s.WaitReady(t.Context()); err != nil {
			t.Fatal(err)
		}
		return s
	}

	def := start(20000)
	e := def.Exposure()
	if e.Applied || e.Total < 20 {
		t.Fatalf("default budget on the real servers: %+v", e)
	}
	t.Logf("real servers: %d tools, %d estimated tokens; budget 20000 does not apply", e.Total, e.Tokens)

	tight := start(e.Tokens / 2)
	te := tight.Exposure()
	if !te.Applied || te.Loaded != 0 || te.LoadedTokens >= 300 {
		t.Fatalf("budget %d: %+v", te.Budget, te)
	}
	if got := names(tight.Tools()); !slices.Equal(got, []string{session.SearchToolName}) {
		t.Fatalf("budget %d exposes %v", te.Budget, got)
	}
	t.Logf("budget %d applied: %d tools exposed (the search tool), %d estimated tokens instead of %d", te.Budget, len(tight.Tools()), te.LoadedTokens, te.Tokens)

	search, _ := tight.Tool(session.SearchToolName)
	res, err := search.Call(t.Context(), json.RawMessage(`{"query":"list the files in a directory","limit":3}`))
	if err != nil || res.Result.IsError {
		t.Fatalf("search: %v %+v", err, res)
	}
	var out searchOut
	if err := json.Unmarshal([]byte(res.Text()), &out); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(out.Tools, func(m struct {
		Name, Server, Description string
		InputSchema               json.RawMessage
	}) bool {
		return m.Name == "mcp_filesystem_list_directory"
	}) {
		t.Fatalf("search for listing a directory found %+v", out.Tools)
	}
	after := tight.Exposure()
	t.Logf("after one search: %d tools loaded, %d estimated tokens", after.Loaded, after.LoadedTokens)
	if !slices.Contains(names(tight.Tools()), "mcp_filesystem_list_directory") {
		t.Errorf("list_directory not loaded: %v", names(tight.Tools()))
	}
}
