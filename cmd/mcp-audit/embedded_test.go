package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/session"
)

// A program that embeds a session with no journal records into the store
// `mcp-audit sessions` reads when given no --db: the session is listed,
// closed, with its server and its tool, and the file is where the help
// says.
func TestEmbeddedSessionIsListedFromTheDefaultStore(t *testing.T) {
	home, state := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("MCP_AUDIT_DB", "")
	cmd, args := fixturetest.Command(t, "only=echo")
	s, err := session.Start(t.Context(), nil, &session.Options{
		Loader:  loader.Options{Cwd: t.TempDir()},
		Servers: []events.ServerConfig{{Name: "demo", Command: cmd, Args: args}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(state, "mcplife", "events.db")); err != nil {
		t.Fatalf("the default store is not in $XDG_STATE_HOME/mcplife: %v", err)
	}

	code, out, errOut := runCmd(t, "--json", "sessions")
	if code != 0 {
		t.Fatalf("sessions: exit %d: %s %s", code, out, errOut)
	}
	var list []sessionJSON
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	i := slices.IndexFunc(list, func(e sessionJSON) bool { return e.ID == s.ID() })
	if i < 0 {
		t.Fatalf("session %s is not listed: %s", s.ID(), out)
	}
	if got := list[i]; !got.Closed || !slices.Equal(got.Servers, []string{"demo"}) || got.PeakTools != 1 {
		t.Errorf("listed as %+v, want closed, with server demo and its one tool", got)
	}
	// The recording is whole: verify finds SessionClosed last.
	if code, out, _ := runCmd(t, "verify", s.ID()); code != 0 {
		t.Errorf("verify: exit %d: %s", code, out)
	}
}
