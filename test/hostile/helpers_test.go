package hostile

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/store/memory"
	"github.com/mcplife/mcplife/verify"
)

func TestMain(m *testing.M) {
	fixture.RunIfChild()
	os.Exit(m.Run())
}

const session = "hostile"

// env is one test's store, journal and manager. When the test ends the
// manager is closed, the session closed, and its history checked against
// the ordering invariants.
type env struct {
	t  *testing.T
	st *memory.Store
	j  *journal.Journal
	m  *manager.Manager
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st := memory.New()
	j, err := journal.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := manager.New(j, session, &manager.Options{
		Cwd: t.TempDir(),
		// Long enough that every outcome is known when the gate returns.
		Gate:   time.Minute,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, st: st, j: j, m: m}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		if _, err := j.Append(ctx, session, &events.SessionClosed{Reason: "test finished"}); err != nil {
			t.Error(err)
		}
		for _, v := range verify.Session(session, e.history()) {
			t.Errorf("invariant broken: %s", v)
		}
		j.Close()
	})
	return e
}

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// stdio returns the config of a stdio fixture server.
func stdio(t *testing.T, name string, behaviours ...string) events.ServerConfig {
	t.Helper()
	cmd, args := fixture.Command(t, behaviours...)
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
	e.t.Helper()
	res, err := e.m.ConnectServers(ctx, append([]events.ServerConfig{healthy(e.t)}, cfgs...), nil)
	if err != nil {
		e.t.Fatalf("ConnectServers: %v", err)
	}
	return res
}

// checkHealthy fails the test unless the healthy server is connected with
// both its tools, and they answer.
func (e *env) checkHealthy(ctx context.Context) {
	e.t.Helper()
	if st := e.m.Status("healthy"); st != projector.StatusConnected {
		e.t.Fatalf("healthy server is %s", st)
	}
	var names []string
	for _, tl := range e.m.Tools() {
		if tl.Server == "healthy" {
			names = append(names, tl.Name)
		}
	}
	if !slices.Equal(names, []string{"mcp_healthy_add", "mcp_healthy_echo"}) {
		e.t.Fatalf("healthy tools = %v", names)
	}
	res, err := e.tool("mcp_healthy_echo").Call(ctx, map[string]any{"text": "still fine"})
	if err != nil || res.IsError || res.Text() != "still fine" {
		e.t.Fatalf("healthy echo: %+v, %v", res, err)
	}
	res, err = e.tool("mcp_healthy_add").Call(ctx, map[string]any{"a": 2, "b": 3})
	if err != nil || res.IsError || res.Text() != "5" {
		e.t.Fatalf("healthy add: %+v, %v", res, err)
	}
}

// tool returns an exposed tool by name.
func (e *env) tool(name string) *manager.Tool {
	e.t.Helper()
	var names []string
	for _, tl := range e.m.Tools() {
		if tl.Name == name {
			return tl
		}
		names = append(names, tl.Name)
	}
	e.t.Fatalf("no tool %s among %v", name, names)
	return nil
}

func (e *env) history() []events.Envelope {
	var out []events.Envelope
	for env, err := range e.st.ReadStream(context.Background(), session, 1) {
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, env)
	}
	return out
}

// events returns the decoded events about server, in order.
func (e *env) events(server string) []events.Event {
	e.t.Helper()
	var out []events.Event
	for _, env := range e.history() {
		ev, err := events.Decode(env)
		if err != nil {
			e.t.Fatal(err)
		}
		if events.ServerOf(ev) == server {
			out = append(out, ev)
		}
	}
	return out
}

// types returns the types of the events about server.
func (e *env) types(server string) []string {
	var out []string
	for _, ev := range e.events(server) {
		out = append(out, ev.Type())
	}
	return out
}

// lastOf returns the last event of type T about server.
func lastOf[T events.Event](e *env, server string) T {
	e.t.Helper()
	var found T
	ok := false
	for _, ev := range e.events(server) {
		if v, is := ev.(T); is {
			found, ok = v, true
		}
	}
	if !ok {
		e.t.Fatalf("no %T for %s; events: %v", found, server, e.types(server))
	}
	return found
}

// waitFor waits, through Manager.Watch, until cond holds.
func (e *env) waitFor(ctx context.Context, what string, cond func() bool) {
	e.t.Helper()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	updates, err := e.m.Watch(wctx)
	if err != nil {
		e.t.Fatal(err)
	}
	for !cond() {
		select {
		case <-updates:
		case <-ctx.Done():
			e.t.Fatalf("%s: %v; events: %v", what, ctx.Err(), e.typesAll())
		}
	}
}

func (e *env) typesAll() []string {
	var out []string
	for _, env := range e.history() {
		out = append(out, env.Type)
	}
	return out
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
