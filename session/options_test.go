package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/session"
)

// A host with its own server list connects exactly those servers, reads
// no config file, and gives the tools its own display path. WaitReady
// waits for a server served from the cache at the gate until its live
// list arrives.
func TestHostServersAndWaitReady(t *testing.T) {
	gate := fixturetest.NewGate(t)
	// A project config that must not be read.
	cwd, _ := project(t, map[string]events.ServerConfig{"file": fixtureConfig(t, "only=echo")})
	fast := fixtureConfig(t, "only=echo")
	fast.Name = "fast"
	slow := fixtureConfig(t, "only=add", gate.Arg("block-list-until"))
	slow.Name = "slow"
	j, st := newJournal(t)
	// An earlier session listed slow's tools, so the gate serves them from
	// the cache.
	if _, err := j.Append(t.Context(), "earlier", &events.ToolsListed{Server: "slow", ConfigHash: slow.Hash(),
		Tools: []events.ToolDef{{Name: "add", InputSchema: json.RawMessage(`{"type":"object"}`)}}, Count: 1, Cause: events.CauseInitial}); err != nil {
		t.Fatal(err)
	}
	s, err := session.Start(t.Context(), j, &session.Options{
		Loader:  loader.Options{Cwd: cwd},
		Servers: []events.ServerConfig{fast, slow},
		Sources: map[string]events.SourceMeta{"fast": {Provider: "host", ProviderName: "my host"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())

	if got := names(s.Tools()); !slices.Equal(got, []string{"mcp_fast_echo", "mcp_slow_add"}) {
		t.Fatalf("tools at the gate = %v", got)
	}
	if tool, _ := s.Tool("mcp_fast_echo"); tool.Path != "mcp:fast via my host" {
		t.Errorf("path of mcp_fast_echo = %q", tool.Path)
	}
	if tool, _ := s.Tool("mcp_slow_add"); tool.Path != "mcp:slow" || !tool.MCP.Deferred {
		t.Errorf("mcp_slow_add at the gate: path %q, deferred %v", tool.Path, tool.MCP.Deferred)
	}
	if r := s.LoadResult(); r.Discovery != nil || len(r.Errors) != 0 || r.Connect.Gate.Outcomes["slow"] != events.OutcomeDeferred {
		t.Fatalf("load result = %+v", r)
	}

	// slow's list is held: WaitReady cannot return before ctx ends.
	short, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := s.WaitReady(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitReady with the list held = %v", err)
	}
	gate.Release()
	if err := s.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	if tool, ok := s.Tool("mcp_slow_add"); !ok || tool.MCP.Deferred {
		t.Fatalf("after WaitReady mcp_slow_add: ok %v, deferred %v", ok, ok && tool.MCP.Deferred)
	}
	mt, ok := s.Manager().Tool("mcp_slow_add")
	if !ok || mt.Deferred || mt.Server != "slow" || mt.Original != "add" {
		t.Fatalf("Manager.Tool(mcp_slow_add) = %+v, %v", mt, ok)
	}
	if _, ok := s.Manager().Tool("mcp_file_echo"); ok {
		t.Error("a server of the unread project config has a tool")
	}
	for env, err := range st.ReadStream(t.Context(), s.ID(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		if env.Type == events.TypeServerDiscovered && strings.Contains(string(env.Data), `"file"`) {
			t.Errorf("the project config was read: %s", env.Data)
		}
	}
}

// The loader's Env reaches connect-time substitution too: discovery and
// connecting share one resolver built from the same options.
func TestLoaderEnvReachesConnect(t *testing.T) {
	cfg := fixtureConfig(t, "only=env")
	cfg.Env = map[string]string{"GREETING": "${SESSION_TEST_GREETING}"}
	cwd, home := project(t, map[string]events.ServerConfig{"a": cfg})
	j, _ := newJournal(t)
	s, err := session.Start(t.Context(), j, &session.Options{Loader: loader.Options{
		Cwd: cwd, Home: home, Env: map[string]string{"SESSION_TEST_GREETING": "hello from Env"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	tool, ok := s.Tool("mcp_a_env")
	if !ok {
		t.Fatalf("tools = %v", names(s.Tools()))
	}
	res, err := tool.Call(t.Context(), json.RawMessage(`{"name":"GREETING"}`))
	if err != nil || res.Result.IsError || !strings.Contains(res.Text(), "hello from Env") {
		t.Fatalf("env GREETING: %v %+v", err, res)
	}
}

// Project configs are disabled by a plain boolean; the session takes the
// process's home directory when none is given (TestMain points it at an
// empty directory).
func TestDisableProjectConfig(t *testing.T) {
	cwd, _ := project(t, map[string]events.ServerConfig{"a": fixtureConfig(t, "only=echo")})
	j, _ := newJournal(t)
	s, err := session.Start(t.Context(), j, &session.Options{Loader: loader.Options{Cwd: cwd, DisableProjectConfig: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if got := names(s.Tools()); len(got) != 0 {
		t.Fatalf("tools = %v", got)
	}
	warned := slices.ContainsFunc(s.LoadResult().Discovery.Warnings, func(w string) bool {
		return strings.Contains(w, filepath.Join(".mcplife", "mcp.json"))
	})
	if !warned {
		t.Errorf("warnings = %q", s.LoadResult().Discovery.Warnings)
	}
}
