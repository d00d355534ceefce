// Package lifecycletest is the test environment shared by the integration
// suites (test/hostile, test/peers): a memory store, a journal and a
// manager for one session, torn down when the test ends with the session's
// history checked against the ordering invariants.
package lifecycletest

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/store/memory"
	"github.com/mcplife/mcplife/verify"
)

// Env is one test's store, journal and manager.
type Env struct {
	T       *testing.T
	Session string
	Cwd     string
	Store   *memory.Store
	Journal *journal.Journal
	Manager *manager.Manager
}

// New returns an environment whose manager records session, works in a
// fresh temporary directory and uses a one-minute gate (long enough that
// every outcome is known when the gate returns). When the test ends the
// manager is closed, SessionClosed recorded, and every invariant violation
// of the session's history reported as a test error.
func New(t *testing.T, session string) *Env {
	t.Helper()
	return NewWith(t, session, nil)
}

// NewWith is [New] with more manager options (callbacks, say); Cwd, Gate
// and Logger are set as New sets them unless opts sets them.
func NewWith(t *testing.T, session string, opts *manager.Options) *Env {
	t.Helper()
	var o manager.Options
	if opts != nil {
		o = *opts
	}
	st := memory.New()
	j, err := journal.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.Cwd == "" {
		o.Cwd = t.TempDir()
	}
	if o.Gate == 0 {
		o.Gate = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	cwd := o.Cwd
	m, err := manager.New(j, session, &o)
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{T: t, Session: session, Cwd: cwd, Store: st, Journal: j, Manager: m}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		if _, err := j.Append(ctx, session, &events.SessionClosed{Reason: "test finished"}); err != nil {
			t.Error(err)
		}
		for _, v := range verify.Session(session, e.History()) {
			t.Errorf("invariant broken: %s", v)
		}
		j.Close()
	})
	return e
}

// Connect connects cfgs in one round of Manager.ConnectServers and returns
// the result, which holds each server's own error. It fails the test when
// the round fails as a whole.
func (e *Env) Connect(ctx context.Context, cfgs ...events.ServerConfig) *manager.ConnectResult {
	e.T.Helper()
	res, err := e.Manager.ConnectServers(ctx, cfgs, nil)
	if err != nil {
		e.T.Fatalf("ConnectServers: %v", err)
	}
	return res
}

// Context returns a context bounded to two minutes and the test.
func Context(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// History returns the session's envelopes in order, once the journal has
// stored what was recorded without waiting (tool calls' events).
func (e *Env) History() []events.Envelope {
	if err := e.Journal.Flush(context.Background()); err != nil && !errors.Is(err, journal.ErrClosed) {
		e.T.Fatal(err)
	}
	var out []events.Envelope
	for env, err := range e.Store.ReadStream(context.Background(), e.Session, 1) {
		if err != nil {
			e.T.Fatal(err)
		}
		out = append(out, env)
	}
	return out
}

// Events returns the decoded events about server, in order.
func (e *Env) Events(server string) []events.Event {
	e.T.Helper()
	var out []events.Event
	for _, env := range e.History() {
		ev, err := events.Decode(env)
		if err != nil {
			e.T.Fatal(err)
		}
		if events.ServerOf(ev) == server {
			out = append(out, ev)
		}
	}
	return out
}

// Types returns the types of the events about server.
func (e *Env) Types(server string) []string {
	var out []string
	for _, ev := range e.Events(server) {
		out = append(out, ev.Type())
	}
	return out
}

// AllTypes returns the types of every event of the session.
func (e *Env) AllTypes() []string {
	var out []string
	for _, env := range e.History() {
		out = append(out, env.Type)
	}
	return out
}

// Tools returns the sorted original names of server's exposed tools.
func (e *Env) Tools(server string) []string {
	var names []string
	for _, tl := range e.Manager.Tools() {
		if tl.Server == server {
			names = append(names, tl.Original)
		}
	}
	slices.Sort(names)
	return names
}

// Tool returns server's exposed tool with the original name, failing the
// test when there is none.
func (e *Env) Tool(server, original string) *manager.Tool {
	e.T.Helper()
	for _, tl := range e.Manager.Tools() {
		if tl.Server == server && tl.Original == original {
			return tl
		}
	}
	e.T.Fatalf("%s has no tool %s; it has %v", server, original, e.Tools(server))
	return nil
}

// WaitFor waits, through Manager.Watch, until cond holds.
func (e *Env) WaitFor(ctx context.Context, what string, cond func() bool) {
	e.T.Helper()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	updates, err := e.Manager.Watch(wctx)
	if err != nil {
		e.T.Fatal(err)
	}
	for !cond() {
		select {
		case <-updates:
		case <-ctx.Done():
			e.T.Fatalf("%s: %v; events: %v", what, ctx.Err(), e.AllTypes())
		}
	}
}

// LastOf returns the last event of type T about server.
func LastOf[T events.Event](e *Env, server string) T {
	e.T.Helper()
	var found T
	ok := false
	for _, ev := range e.Events(server) {
		if v, is := ev.(T); is {
			found, ok = v, true
		}
	}
	if !ok {
		e.T.Fatalf("no %T for %s; events: %v", found, server, e.Types(server))
	}
	return found
}
