package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
)

// writeBudgetConfig writes a native config with one server of 45 tools
// ("big") and one of a single tool marked alwaysLoad ("pinned").
func writeBudgetConfig(t *testing.T) string {
	t.Helper()
	bigCmd, bigArgs := fixturetest.Command(t, "tools=30")
	pinCmd, pinArgs := fixturetest.Command(t, "only=echo")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"big":    map[string]any{"command": bigCmd, "args": bigArgs},
		"pinned": map[string]any{"command": pinCmd, "args": pinArgs, "alwaysLoad": true},
	}})
	path := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

type budgetOut struct {
	Session string `json:"session"`
	Tools   []struct {
		Name, Server, Tool string
		Loaded             *bool
	} `json:"tools"`
	Budget *struct {
		Tokens, LoadedTokens, Loaded, Total, TotalTokens int
		Applied                                          bool
	} `json:"budget"`
}

func (o budgetOut) loaded() []string {
	var out []string
	for _, t := range o.Tools {
		if t.Loaded != nil && *t.Loaded {
			out = append(out, t.Name)
		}
	}
	return out
}

// run --once --json --tool-budget: over the budget the output lists every
// tool with whether it is loaded, the search tool with server "", and the
// token counts; --call loads a held-back tool; inspect and replay of the
// recorded session show the same loaded set.
func TestRunOnceToolBudget(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	cfg := writeBudgetConfig(t)
	db := filepath.Join(t.TempDir(), "e.db")
	code, out, errOut := runCmd(t, "--db", db, "--json", "run", "--once", "--gate", "1m", "--cwd", t.TempDir(), "--config", cfg,
		"--tool-budget", "300", "--call", "big/add", "--args", `{"a":1,"b":2}`)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	var got budgetOut
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	b := got.Budget
	if b == nil || !b.Applied || b.Tokens != 300 || b.Total != 45 || b.Loaded != 2 || b.TotalTokens <= 300 || b.LoadedTokens >= 300 {
		t.Fatalf("budget = %+v", b)
	}
	if len(got.Tools) != 46 || got.Tools[0].Name != "mcp__search_tools" || got.Tools[0].Server != "" {
		t.Errorf("tools: %d, first %+v", len(got.Tools), got.Tools[0])
	}
	want := []string{"mcp__search_tools", "mcp_big_add", "mcp_pinned_echo"}
	if l := got.loaded(); !slices.Equal(l, want) {
		t.Errorf("loaded = %v, want %v", l, want)
	}

	// inspect replays the session: at its end the same tools are loaded.
	code, out, _ = runCmd(t, "--db", db, "--json", "inspect", got.Session, "--seq", "1000000")
	var ins budgetOut
	if err := json.Unmarshal([]byte(out), &ins); code != 0 || err != nil {
		t.Fatalf("inspect: exit %d %v\n%s", code, err, out)
	}
	// SessionClosed disconnects every server: the view is empty then.
	if ins.Budget == nil || ins.Budget.Tokens != 300 || len(ins.Tools) != 0 {
		t.Errorf("inspect at the end: %+v", ins)
	}
	// Just before the close the tool is loaded.
	code, out, _ = runCmd(t, "--db", db, "replay", got.Session)
	if code != 0 || !strings.Contains(out, "ToolsActivated") || !strings.Contains(out, "by=host count=1 tools=[mcp_big_add]") {
		t.Fatalf("replay: exit %d\n%s", code, out)
	}
	seq := seqOf(t, db, got.Session, "ToolsActivated")
	code, out, _ = runCmd(t, "--db", db, "--json", "inspect", got.Session, "--seq", seq)
	ins = budgetOut{}
	if err := json.Unmarshal([]byte(out), &ins); code != 0 || err != nil {
		t.Fatalf("inspect: exit %d %v\n%s", code, err, out)
	}
	if l := ins.loaded(); !slices.Equal(l, want) || ins.Budget == nil || !ins.Budget.Applied {
		t.Errorf("inspect at the activation: loaded %v, budget %+v", l, ins.Budget)
	}
	code, out, _ = runCmd(t, "--db", db, "inspect", got.Session, "--seq", seq)
	if code != 0 || !strings.Contains(out, "LOADED") || !strings.Contains(out, "2 of 45 tools loaded") {
		t.Errorf("inspect text: exit %d\n%s", code, out)
	}
	if code, out, _ := runCmd(t, "--db", db, "verify", "--all"); code != 0 {
		t.Errorf("verify: %d %s", code, out)
	}

	// run's default budget (20,000 tokens) does not apply to 45 small tools.
	code, out, _ = runCmd(t, "--db", db, "--json", "run", "--once", "--gate", "1m", "--cwd", t.TempDir(), "--config", cfg)
	got = budgetOut{}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("exit %d %v\n%s", code, err, out)
	}
	if got.Budget == nil || got.Budget.Tokens != 20000 || got.Budget.Applied || len(got.loaded()) != 45 {
		t.Errorf("default budget: %+v, %d loaded", got.Budget, len(got.loaded()))
	}
	if code, _, _ := runCmd(t, "--db", db, "run", "--once", "--tool-budget", "-1"); code != 2 {
		t.Errorf("negative --tool-budget: exit %d, want 2", code)
	}
}

// seqOf returns the sequence number of the session's first event of typ,
// as replay --json prints it.
func seqOf(t *testing.T, db, session, typ string) string {
	t.Helper()
	code, out, _ := runCmd(t, "--db", db, "--json", "replay", session)
	if code != 0 {
		t.Fatalf("replay: exit %d", code)
	}
	for line := range strings.SplitSeq(out, "\n") {
		var ev struct {
			Seq  json.Number `json:"seq"`
			Type string      `json:"type"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == typ {
			return ev.Seq.String()
		}
	}
	t.Fatalf("no %s in\n%s", typ, out)
	return ""
}

func TestSearchCommand(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	cfg := writeBudgetConfig(t)
	db := filepath.Join(t.TempDir(), "e.db")
	code, out, errOut := runCmd(t, "--db", db, "--json", "search", "add two numbers", "--limit", "3", "--cwd", t.TempDir(), "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	var got struct {
		Query   string `json:"query"`
		Results []struct {
			Name, Server, Tool string
			Score              float64
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.Query != "add two numbers" || len(got.Results) == 0 || len(got.Results) > 3 ||
		got.Results[0].Name != "mcp_big_add" || got.Results[0].Server != "big" || got.Results[0].Tool != "add" || got.Results[0].Score <= 0 {
		t.Errorf("search = %+v", got)
	}
	code, out, _ = runCmd(t, "--db", db, "search", "echo text", "--server", "pinned", "--cwd", t.TempDir(), "--config", cfg)
	if code != 0 || !strings.Contains(out, "mcp_pinned_echo") || strings.Contains(out, "mcp_big_") {
		t.Errorf("search --server pinned: exit %d\n%s", code, out)
	}
	// The query is not recorded.
	raw, _ := os.ReadFile(db)
	for _, f := range []string{db + "-wal"} {
		b, _ := os.ReadFile(f)
		raw = append(raw, b...)
	}
	if strings.Contains(string(raw), "two numbers") {
		t.Error("the query reached the store")
	}
	for _, args := range [][]string{{"search"}, {"search", "x", "--limit", "0"}, {"search", "a", "b"}} {
		if code, _, _ := runCmd(t, append([]string{"--db", db}, args...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
