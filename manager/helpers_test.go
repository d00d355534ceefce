package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
	"github.com/mcplife/mcplife/verify"
)

func TestMain(m *testing.M) {
	fixture.RunIfChild()
	// Teardown of servers that ignore a closed stdin should not slow the
	// tests down; the escalation itself is tested with these values.
	stdinGrace = 200 * time.Millisecond
	termGrace = 500 * time.Millisecond
	// The lifecycle tests of this package (drops, reconnects, reloads,
	// server requests, pings, logs) describe the handshake of the legacy
	// era, and their expected streams have no era record; the tests of
	// the modern era pin its version themselves (era, health, cache
	// hints, rounds, transcripts), and the golden streams, the hostile
	// and the session tests run at the real default.
	defaultProtocol = legacyProtocol
	os.Exit(m.Run())
}

// env is one test's journal, store and manager.
type env struct {
	t       *testing.T
	st      store.Store
	j       *journal.Journal
	m       *Manager
	session string
}

// newEnv returns a manager on a fresh memory store. It is closed, and the
// session's history verified against the ordering invariants, when the
// test ends.
func newEnv(t *testing.T, opts *Options) *env {
	t.Helper()
	st := memory.New()
	j, err := journal.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, st: st, j: j, session: "s1"}
	e.m = e.manager("s1", opts)
	t.Cleanup(func() { j.Close() })
	return e
}

// manager starts another manager on the same journal.
func (e *env) manager(session string, opts *Options) *Manager {
	e.t.Helper()
	o := Options{}
	if opts != nil {
		o = *opts
	}
	opts = &o
	if opts.Gate == 0 {
		// Tests that expect a server's tools once ConnectServers returns
		// must not depend on it connecting within the 250 ms default,
		// which a loaded machine misses; tests of the gate set their own.
		opts.Gate = time.Minute
	}
	if opts.Cwd == "" {
		opts.Cwd = e.t.TempDir()
	}
	m, err := New(e.j, session, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		if err := m.Close(context.Background()); err != nil {
			e.t.Errorf("close: %v", err)
		}
		if vs := verify.Session(session, e.events(session)); len(vs) > 0 {
			for _, v := range vs {
				e.t.Errorf("invariant: %s", v)
			}
		}
	})
	return m
}

// events returns the stored events of session, once the journal has
// stored what was recorded without waiting (tool calls' events).
func (e *env) events(session string) []events.Envelope {
	e.t.Helper()
	if err := e.j.Flush(context.Background()); err != nil && !errors.Is(err, journal.ErrClosed) {
		e.t.Fatal(err)
	}
	var out []events.Envelope
	for env, err := range e.st.ReadStream(context.Background(), session, 1) {
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, env)
	}
	return out
}

// decoded returns the stored events of session, decoded.
func (e *env) decoded(session string) []events.Event {
	e.t.Helper()
	var out []events.Event
	for _, env := range e.events(session) {
		ev, err := events.Decode(env)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// serverTypes returns the types of the stored events about server, in
// order, with the list cause appended to ToolsListed ("ToolsListed/late")
// and the reason to Disconnected.
func (e *env) serverTypes(session, server string) []string {
	e.t.Helper()
	var out []string
	for _, ev := range e.decoded(session) {
		se, ok := ev.(events.ServerEvent)
		if !ok || se.ServerName() != server {
			continue
		}
		name := ev.Type()
		switch ev := ev.(type) {
		case *events.ToolsListed:
			name += "/" + string(ev.Cause)
		case *events.Disconnected:
			name += "/" + string(ev.Reason)
		}
		out = append(out, name)
	}
	return out
}

// ofType returns the stored events of session of type T.
func ofType[T events.Event](e *env, session string) []T {
	var out []T
	for _, ev := range e.decoded(session) {
		if v, ok := ev.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// stdio returns the config of a stdio fixture server.
func stdio(t *testing.T, name string, behaviours ...string) events.ServerConfig {
	t.Helper()
	cmd, args := fixturetest.Command(t, behaviours...)
	return events.ServerConfig{Name: name, Command: cmd, Args: args}
}

func ms(n int64) *int64 { return &n }

// ctx returns a context bounded by the test's deadline (or a minute).
func testCtx(t *testing.T) context.Context {
	d := time.Now().Add(time.Minute)
	if dl, ok := t.Deadline(); ok && dl.Before(d) {
		d = dl
	}
	ctx, cancel := context.WithDeadline(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// toolNames returns the names of tools.
func toolNames(tools []*Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

// tool returns the named tool of the manager, failing the test when absent.
func tool(t *testing.T, m *Manager, name string) *Tool {
	t.Helper()
	for _, tl := range m.Tools() {
		if tl.Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s in %v", name, toolNames(m.Tools()))
	return nil
}

// waitFor reads updates until cond holds.
func waitFor(t *testing.T, ctx context.Context, updates <-chan Update, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case _, ok := <-updates:
			if !ok {
				t.Fatal("updates closed")
			}
		case <-ctx.Done():
			t.Fatalf("condition not met: %v", ctx.Err())
		}
	}
}

func equal[T comparable](t *testing.T, what string, got, want []T) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}

func contains(t *testing.T, what, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Fatalf("%s %q does not contain %q", what, s, sub)
	}
}

// lastIndex returns the index of the last s in list, or -1.
func lastIndex(list []string, s string) int {
	for i := len(list) - 1; i >= 0; i-- {
		if list[i] == s {
			return i
		}
	}
	return -1
}

// checkReplay checks that the manager's live view equals a fresh fold of
// the session's stored events up to the last one the view applied: the
// same statuses, server states and tools.
func checkReplay(t *testing.T, e *env) {
	t.Helper()
	live := e.m.View()
	replay := projector.NewToolView(e.session)
	for _, env := range e.events(e.session) {
		if env.Seq <= live.LastSeq() {
			replay.Apply(env)
		}
	}
	if diff := cmp.Diff(replay.Servers(), live.Servers()); diff != "" {
		t.Errorf("server states differ from a replay of the session (-replay +live):\n%s", diff)
	}
	if diff := cmp.Diff(replay.Tools(), live.Tools()); diff != "" {
		t.Errorf("tools differ from a replay of the session (-replay +live):\n%s", diff)
	}
}

// noReconnect is the options of a test about what a drop does when no
// reconnect follows.
var noReconnect = &Options{Reconnect: ReconnectPolicy{Disabled: true}}

// structuredJSON returns r's structuredContent as JSON (nil when none).
func structuredJSON(r *CallResult) []byte {
	if r == nil || r.Result == nil || r.Result.StructuredContent == nil {
		return nil
	}
	b, err := json.Marshal(r.Result.StructuredContent)
	if err != nil {
		return []byte(err.Error())
	}
	return b
}

// textOf returns the text of a text item ("" for other kinds).
func textOf(c mcp.Content) string {
	if t, ok := c.(*mcp.TextContent); ok {
		return t.Text
	}
	return ""
}

// resolverFunc adapts a function to [Resolver].
type resolverFunc func(ctx context.Context, value string) (string, error)

func (f resolverFunc) Resolve(ctx context.Context, value string) (string, error) {
	return f(ctx, value)
}
