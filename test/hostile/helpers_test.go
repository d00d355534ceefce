package hostile

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/internal/lifecycletest"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/projector"
)

func TestMain(m *testing.M) {
	fixture.RunIfChild()
	os.Exit(m.Run())
}

const session = "hostile"

// env is one test's store, journal and manager (see lifecycletest.New)
// with this package's helpers.
type env struct{ *lifecycletest.Env }

func newEnv(t *testing.T) *env {
	t.Helper()
	return &env{lifecycletest.New(t, session)}
}

// stdio returns the config of a stdio fixture server.
func stdio(t *testing.T, name string, behaviours ...string) events.ServerConfig {
	t.Helper()
	cmd, args := fixturetest.Command(t, behaviours...)
	return events.ServerConfig{Name: name, Command: cmd, Args: args}
}

func withTimeout(cfg events.ServerConfig, ms int64) events.ServerConfig {
	cfg.TimeoutMs = &ms
	return cfg
}

// healthy is the well-behaved server that runs beside every hostile one.
func healthy(t *testing.T) events.ServerConfig {
	return stdio(t, "healthy", "only=echo,add")
}

// connect connects the healthy server and the given ones in one round.
func (e *env) connect(ctx context.Context, cfgs ...events.ServerConfig) *manager.ConnectResult {
	e.T.Helper()
	return e.Connect(ctx, append([]events.ServerConfig{healthy(e.T)}, cfgs...)...)
}

// checkHealthy fails the test unless the healthy server is connected with
// both its tools, and they answer.
func (e *env) checkHealthy(ctx context.Context) {
	e.T.Helper()
	if st := e.Manager.Status("healthy"); st != projector.StatusConnected {
		e.T.Fatalf("healthy server is %s", st)
	}
	var names []string
	for _, tl := range e.Manager.Tools() {
		if tl.Server == "healthy" {
			names = append(names, tl.Name)
		}
	}
	if !slices.Equal(names, []string{"mcp_healthy_add", "mcp_healthy_echo"}) {
		e.T.Fatalf("healthy tools = %v", names)
	}
	res, err := e.tool("mcp_healthy_echo").Call(ctx, map[string]any{"text": "still fine"})
	if err != nil || res.Result.IsError || res.Text() != "still fine" {
		e.T.Fatalf("healthy echo: %+v, %v", res, err)
	}
	res, err = e.tool("mcp_healthy_add").Call(ctx, map[string]any{"a": 2, "b": 3})
	if err != nil || res.Result.IsError || res.Text() != "5" {
		e.T.Fatalf("healthy add: %+v, %v", res, err)
	}
}

// tool returns an exposed tool by name.
func (e *env) tool(name string) *manager.Tool {
	e.T.Helper()
	var names []string
	for _, tl := range e.Manager.Tools() {
		if tl.Name == name {
			return tl
		}
		names = append(names, tl.Name)
	}
	e.T.Fatalf("no tool %s among %v", name, names)
	return nil
}

func wantPrefix(t *testing.T, what, s, prefix string) {
	t.Helper()
	if !strings.HasPrefix(s, prefix) {
		t.Fatalf("%s = %q, want prefix %q", what, s, prefix)
	}
}

func wantContains(t *testing.T, what, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Fatalf("%s = %q, want it to contain %q", what, s, sub)
	}
}

func wantTypes(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s events = %v, want %v", what, got, want)
	}
}
