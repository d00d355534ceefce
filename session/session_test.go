package session_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/session"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
)

func TestMain(m *testing.M) {
	fixture.RunIfChild()
	os.Exit(runHermetic(m))
}

// runHermetic runs the tests with an empty home directory and without the
// variables that point discovery at other user config directories, so a
// session that takes the process's home and environment (the default)
// never reads the real user's configs.
func runHermetic(m *testing.M) int {
	home, err := os.MkdirTemp("", "session-home-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(home)
	os.Setenv("HOME", home)
	for _, v := range []string{"XDG_CONFIG_HOME", "XDG_STATE_HOME", "MCP_AUDIT_DB", "MCPLIFE_HOST", "CODEX_HOME", "APPDATA"} {
		os.Unsetenv(v)
	}
	return m.Run()
}

// project writes a native project config naming servers and returns the
// project and home directories.
func project(t *testing.T, servers map[string]events.ServerConfig) (cwd, home string) {
	t.Helper()
	cwd, home = t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(cwd, ".mcplife"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cwd, ".mcplife", "mcp.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return cwd, home
}

func fixtureConfig(t *testing.T, behaviours ...string) events.ServerConfig {
	cmd, args := fixturetest.Command(t, behaviours...)
	return events.ServerConfig{Command: cmd, Args: args}
}

func newJournal(t *testing.T) (*journal.Journal, store.Store) {
	st := memory.New()
	j, err := journal.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close(); st.Close() })
	return j, st
}

func names(tools []session.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

// waitFor blocks on the session's change notifications until cond holds.
func waitFor(t *testing.T, s *session.Session, cond func([]session.Tool) bool) {
	t.Helper()
	for !cond(s.Tools()) {
		select {
		case <-s.Changes():
		case <-t.Context().Done():
			t.Fatalf("condition never held; tools: %v", names(s.Tools()))
		}
	}
}

func has(name string) func([]session.Tool) bool {
	return func(ts []session.Tool) bool { return slices.Contains(names(ts), name) }
}

// seedCache records, in an earlier session, the tool list the cache will
// serve for the named server of the project's discovered config.
func seedCache(t *testing.T, j *journal.Journal, cwd, home, server string, tools ...string) {
	t.Helper()
	d, err := loader.LoadConfigs(t.Context(), loader.Options{Cwd: cwd, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	for _, srv := range d.Servers {
		if srv.Config.Name != server {
			continue
		}
		var defs []events.ToolDef
		for _, name := range tools {
			defs = append(defs, events.ToolDef{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)})
		}
		if _, err := j.Append(t.Context(), "earlier", &events.ToolsListed{Server: server, ConfigHash: srv.Config.Hash(), Tools: defs, Count: len(defs), Cause: events.CauseInitial}); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("server %s not discovered", server)
}

// A server that connects after the gate reaches the session through its
// subscription; nobody polls.
func TestLateServerReachesSessionBySubscription(t *testing.T) {
	gate := fixturetest.NewGate(t)
	cwd, home := project(t, map[string]events.ServerConfig{
		"fast": fixtureConfig(t, "only=echo"),
		"slow": fixtureConfig(t, "only=add,env", gate.Arg("block-list-until")),
	})
	j, _ := newJournal(t)
	seedCache(t, j, cwd, home, "slow", "add")
	own := session.Tool{Name: "read_file", Description: "the agent's own tool"}
	s, err := session.Start(t.Context(), j, &session.Options{Loader: loader.Options{Cwd: cwd, Home: home}, Tools: []session.Tool{own}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())

	// At the gate the slow server is still listing: its cached tool is
	// there, deferred.
	tool, ok := s.Tool("mcp_slow_add")
	if !ok || !tool.MCP.Deferred {
		for env := range j.Store().ReadAll(t.Context(), 1) {
			ev, _ := events.Decode(env)
			t.Logf("%s %s %s", env.SessionID, env.Type, events.Describe(ev))
			if d, ok := ev.(*events.ServerDiscovered); ok {
				t.Logf("  hash %s", d.ConfigHash)
			}
			if d, ok := ev.(*events.ToolsListed); ok {
				t.Logf("  hash %s", d.ConfigHash)
			}
		}
		t.Fatalf("at the gate: tools %v, mcp_slow_add deferred=%v", names(s.Tools()), ok && tool.MCP.Deferred)
	}
	if !has("mcp_fast_echo")(s.Tools()) || !has("read_file")(s.Tools()) || has("mcp_slow_env")(s.Tools()) {
		t.Fatalf("at the gate: tools %v", names(s.Tools()))
	}

	// The user narrows the active set; the selection survives refreshes.
	s.SetActive([]string{"mcp_slow_add", "read_file"})

	gate.Release()
	waitFor(t, s, func(ts []session.Tool) bool {
		t, ok := s.Tool("mcp_slow_add")
		return has("mcp_slow_env")(ts) && ok && !t.MCP.Deferred
	})
	if got := names(s.ActiveTools()); !slices.Equal(got, []string{"read_file", "mcp_slow_add"}) {
		t.Errorf("active tools after refresh = %v", got)
	}
	echo, _ := s.Tool("mcp_fast_echo")
	res, err := echo.Call(t.Context(), json.RawMessage(`{"text":"hi"}`))
	if err != nil || res.Result.IsError || !strings.Contains(res.Text(), "hi") {
		t.Fatalf("call mcp_fast_echo: %v %+v", err, res)
	}
}

// A subagent shares the parent's manager (no second spawn) and sees later
// changes; a drop reaches both by subscription.
func TestSubagentSharesConnectionsAndSeesDrops(t *testing.T) {
	release := fixturetest.NewGate(t)
	cwd, home := project(t, map[string]events.ServerConfig{
		"a": fixtureConfig(t, "only=echo"),
		"b": fixtureConfig(t, "only=pid", release.Arg("exit-on-release")),
	})
	j, st := newJournal(t)
	// Without reconnecting, so b's drop removes its tools (a reconnect
	// would keep them, deferred).
	s, err := session.Start(t.Context(), j, &session.Options{Loader: loader.Options{Cwd: cwd, Home: home},
		Manager: &manager.Options{Reconnect: manager.ReconnectPolicy{Disabled: true}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	sub, err := s.Subagent([]session.Tool{{Name: "task_done"}})
	if err != nil {
		t.Fatal(err)
	}
	// Its own tools first, then the shared ones (in the order a and b
	// happened to list them).
	if got := names(sub.Tools()); len(got) != 3 || got[0] != "task_done" || !slices.Equal(slices.Sorted(slices.Values(got[1:])), []string{"mcp_a_echo", "mcp_b_pid"}) {
		t.Fatalf("subagent tools = %v", got)
	}
	release.Release() // b exits on its own
	for _, x := range []*session.Session{s, sub} {
		waitFor(t, x, func(ts []session.Tool) bool { return !has("mcp_b_pid")(ts) && has("mcp_a_echo")(ts) })
	}
	// One spawn per server: exactly one ConnectStarted each.
	starts := map[string]int{}
	for env, err := range st.ReadStream(t.Context(), s.ID(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		if env.Type == events.TypeConnectStarted {
			ev, _ := events.Decode(env)
			starts[ev.(*events.ConnectStarted).Server]++
		}
	}
	if starts["a"] != 1 || starts["b"] != 1 {
		t.Errorf("ConnectStarted per server = %v", starts)
	}
}

func TestReloadRecordsAndRefreshes(t *testing.T) {
	cwd, home := project(t, map[string]events.ServerConfig{"a": fixtureConfig(t, "only=echo")})
	j, st := newJournal(t)
	s, err := session.Start(t.Context(), j, &session.Options{Loader: loader.Options{Cwd: cwd, Home: home}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	// The config changes on disk: reload picks it up.
	project2 := map[string]events.ServerConfig{"b": fixtureConfig(t, "only=add")}
	b, _ := json.Marshal(map[string]any{"mcpServers": project2})
	os.WriteFile(filepath.Join(cwd, ".mcplife", "mcp.json"), b, 0o644)
	if _, err := s.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := names(s.Tools()); !slices.Equal(got, []string{"mcp_b_add"}) {
		t.Fatalf("tools after reload = %v", got)
	}
	var types []string
	for env, err := range st.ReadStream(t.Context(), s.ID(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, env.Type)
	}
	if !slices.Contains(types, events.TypeReloadRequested) || !slices.Contains(types, events.TypeReloadCompleted) {
		t.Errorf("events = %v", types)
	}
}

// With MCP disabled discovery is skipped entirely: a project config that
// would run a command never runs it.
func TestMCPDisabledSkipsDiscovery(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	cwd, home := project(t, map[string]events.ServerConfig{
		"evil": {Command: "sh", Args: []string{"-c", "touch " + marker}, Env: map[string]string{"X": "!touch " + marker}},
	})
	s, err := session.Start(t.Context(), nil, &session.Options{Loader: loader.Options{Cwd: cwd, Home: home}, DisableMCP: true, Tools: []session.Tool{{Name: "own"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if got := names(s.Tools()); !slices.Equal(got, []string{"own"}) || s.Manager() != nil {
		t.Fatalf("tools = %v", got)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatal("a command ran with MCP disabled")
	}
}

// Discovery failing as a whole still starts the session: no tools and one
// error with path .mcp.json.
func TestDiscoveryFailureStillStarts(t *testing.T) {
	j, _ := newJournal(t)
	notADir := filepath.Join(t.TempDir(), "home")
	if err := os.WriteFile(notADir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := session.Start(t.Context(), j, &session.Options{Loader: loader.Options{Cwd: t.TempDir(), Home: notADir}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	res := s.LoadResult()
	if len(res.Tools) != 0 || len(res.Errors) != 1 || res.Errors[0].Path != ".mcp.json" {
		t.Fatalf("result = %+v", res)
	}
}
