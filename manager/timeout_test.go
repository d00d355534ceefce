package manager

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
)

// TestToolTimeoutCancelsTheCall: a call that outlives the server's
// toolTimeoutMs fails with an error naming the limit, is recorded as an
// error (not a caller's cancel), and the server receives
// notifications/cancelled for it.
func TestToolTimeoutCancelsTheCall(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	cancelled := fixturetest.NewGate(t)
	never := fixturetest.NewGate(t)
	cfg := stdio(t, "slow", "only=sleep")
	limit := int64(300)
	cfg.ToolTimeoutMs = &limit
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{cfg}, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r, err := tool(t, e.m, "mcp_slow_sleep").Call(ctx, map[string]any{"gate": never.Path(), "on_cancel": cancelled.Path()})
	if err != nil {
		t.Fatalf("a timed out call is a result, not an error: %v", err)
	}
	if want := `MCP error: Tool call sleep of MCP server "slow" timed out after 300ms`; !r.Result.IsError || r.Text() != want {
		t.Fatalf("result %q, want %q", r.Text(), want)
	}
	if !errors.Is(r.Err, ErrTimeout) {
		t.Errorf("Err %v, want one matching ErrTimeout", r.Err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("returned after %v, before the timeout", took)
	}
	// The server saw the cancellation.
	if err := cancelled.WaitReached(ctx, 1); err != nil {
		t.Fatalf("notifications/cancelled did not reach the server: %v", err)
	}
	if err := e.j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	fins := ofType[*events.ToolCallFinished](e, "s1")
	if len(fins) != 1 || !fins[0].IsError || fins[0].Cancelled || !strings.Contains(fins[0].Error, "timed out after 300ms") {
		t.Fatalf("ToolCallFinished %+v", fins)
	}
}

func TestStartupTimeoutDefaults(t *testing.T) {
	five := int64(5000)
	for _, tc := range []struct {
		cfg  events.ServerConfig
		want time.Duration
	}{
		{events.ServerConfig{Command: "node"}, defaultTimeout},
		{events.ServerConfig{Command: "npx"}, defaultPackageRunnerTimeout},
		{events.ServerConfig{Command: "/usr/local/bin/uvx"}, defaultPackageRunnerTimeout},
		{events.ServerConfig{Command: `C:\tools\bunx.cmd`}, defaultPackageRunnerTimeout},
		{events.ServerConfig{Command: "pipx.exe"}, defaultPackageRunnerTimeout},
		{events.ServerConfig{Command: "npx-helper"}, defaultTimeout},
		{events.ServerConfig{Command: "npx", TimeoutMs: &five}, 5 * time.Second},
		{events.ServerConfig{URL: "https://h/mcp"}, defaultTimeout},
	} {
		if got := timeoutOf(tc.cfg); got != tc.want {
			t.Errorf("%q: startup timeout %v, want %v", tc.cfg.Command, got, tc.want)
		}
	}
	zero := int64(0)
	for cfg, want := range map[*int64]time.Duration{nil: defaultToolTimeout, &five: 5 * time.Second, &zero: 0} {
		if got := toolTimeoutOf(events.ServerConfig{ToolTimeoutMs: cfg}); got != want {
			t.Errorf("tool timeout of %v: %v, want %v", cfg, got, want)
		}
	}
}
