package golden

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
)

// lastSeq returns the store's last sequence (the subscription may lag).
func (r *runner) lastSeq() uint64 {
	seq, err := r.st.LastSeq(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	return seq
}

// history returns the session's stored events.
func (r *runner) history() []events.Envelope {
	var out []events.Envelope
	for env, err := range r.st.ReadStream(context.Background(), sessionID, 1) {
		if err != nil {
			r.t.Fatal(err)
		}
		out = append(out, env)
	}
	return out
}

// clock is the injected clock: every reading is one millisecond after the
// previous one, from a fixed epoch, so times and durations in the store do
// not depend on the machine.
type clock struct {
	mu    sync.Mutex
	ticks int64
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ticks++
	return epoch.Add(time.Duration(c.ticks) * time.Millisecond)
}

// gateLog counts the startup gates that decided their outcomes
// (manager.Options.OnGate). A script that waits for the gate of its
// latest connect ("wait-gate") and only then releases a blocked server
// forces the outcome "awaited": the manager records nothing observable
// at that moment.
type gateLog struct {
	mu      sync.Mutex
	n       int64
	changed chan struct{}
}

func newGateLog() *gateLog { return &gateLog{changed: make(chan struct{})} }

// add is the manager's OnGate hook; it does not block.
func (g *gateLog) add(manager.GateOutcome) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	close(g.changed)
	g.changed = make(chan struct{})
}

func (g *gateLog) count() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// wait waits until more than after gates decided in total.
func (g *gateLog) wait(ctx context.Context, after int64) error {
	for {
		g.mu.Lock()
		n, changed := g.n, g.changed
		g.mu.Unlock()
		if n > after {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("the startup gate did not decide: %w", ctx.Err())
		}
	}
}

// recorder follows the session through a journal subscription, so script
// steps can wait for events without polling.
type recorder struct {
	mu      sync.Mutex
	envs    []events.Envelope
	changed chan struct{}
	err     error
}

func newRecorder(t *testing.T, ctx context.Context, j *journal.Journal) *recorder {
	t.Helper()
	return newSessionRecorder(t, ctx, j, sessionID)
}

// newSessionRecorder follows the session id.
func newSessionRecorder(t *testing.T, ctx context.Context, j *journal.Journal, id string) *recorder {
	t.Helper()
	sub, err := j.Subscribe(ctx, journal.SubscribeOptions{Session: id, FromSeq: 1})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{changed: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for env := range sub.C() {
			rec.mu.Lock()
			rec.envs = append(rec.envs, env)
			close(rec.changed)
			rec.changed = make(chan struct{})
			rec.mu.Unlock()
		}
		rec.mu.Lock()
		rec.err = fmt.Errorf("subscription ended: %v", sub.Err())
		close(rec.changed)
		rec.changed = make(chan struct{})
		rec.mu.Unlock()
	}()
	t.Cleanup(func() {
		sub.Close()
		<-done
	})
	return rec
}

func (rec *recorder) snapshot() []events.Envelope {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.envs)
}

// waitFor blocks until cond holds for the events received so far.
func (rec *recorder) waitFor(ctx context.Context, cond func([]events.Envelope) bool) error {
	for {
		rec.mu.Lock()
		envs, changed, err := rec.envs, rec.changed, rec.err
		rec.mu.Unlock()
		if cond(envs) {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("event not recorded: %w", ctx.Err())
		}
	}
}

// logRecorder is a slog.Handler that keeps warnings and errors. Handlers
// derived with WithAttrs share its records.
type logRecorder struct {
	shared *logRecords
	attrs  []slog.Attr
}

type logRecords struct {
	mu      sync.Mutex
	records []string
}

func newLogRecorder() *logRecorder { return &logRecorder{shared: &logRecords{}} }

func (l *logRecorder) Enabled(_ context.Context, level slog.Level) bool {
	return level >= slog.LevelWarn
}

// Handle keeps the level, the message and the server and reason
// attributes (errors are in the events already).
func (l *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	line := rec.Level.String() + " " + rec.Message
	add := func(a slog.Attr) bool {
		if a.Key == "server" || a.Key == "reason" {
			line += " " + a.Key + "=" + a.Value.String()
		}
		return true
	}
	for _, a := range l.attrs {
		add(a)
	}
	rec.Attrs(add)
	l.shared.mu.Lock()
	l.shared.records = append(l.shared.records, line)
	l.shared.mu.Unlock()
	return nil
}

func (l *logRecorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logRecorder{shared: l.shared, attrs: append(slices.Clip(l.attrs), attrs...)}
}

func (l *logRecorder) WithGroup(string) slog.Handler { return l }

// lines returns the records, sorted: servers log concurrently.
func (l *logRecorder) lines(n *normalizer) []string {
	l.shared.mu.Lock()
	defer l.shared.mu.Unlock()
	out := make([]string, len(l.shared.records))
	for i, s := range l.shared.records {
		out[i] = n.text(s)
	}
	slices.Sort(out)
	return out
}
