package otel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	gotel "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcplife/mcplife/journal"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/mcplife/mcplife/otel"

// Options configure [Observe] and [Replay]. Nil or zero fields mean
// defaults.
type Options struct {
	// TracerProvider makes the spans. Default: the global one
	// (otel.GetTracerProvider).
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metrics of [Observe]. Default: the global
	// one (otel.GetMeterProvider). [Replay] records no metrics: their
	// times would be those of the replay.
	MeterProvider metric.MeterProvider
	// Session, when set, limits the spans to that session's events.
	// Default: every session the journal records.
	Session string
	// FromSeq is the first sequence observed: 0 means the events
	// appended after Observe returns, 1 the whole history (a session
	// already running is then traced from its start).
	FromSeq uint64
}

// Observer turns the events a journal records into spans and metrics, as
// they are stored. Each session is a trace: a span mcplife.session from
// SessionStarted to SessionClosed, and under it one span per connect
// attempt, list, gate and tool call, timed by the events' recorded times;
// see the package documentation for the names and attributes.
//
// An Observer reads its own subscription on its own goroutine: a slow
// exporter never blocks the session, the subscription holds what the
// Observer has not read yet (and re-reads it from the store when its
// buffer is full). A span is handed to the tracer provider when its end
// is recorded; the session span when the session closes. Its methods are
// safe for concurrent use.
type Observer struct {
	j      *journal.Journal
	sub    *journal.Subscription
	cancel context.CancelFunc
	done   chan struct{}
	inst   *instruments
	closed sync.Once

	mu      sync.Mutex
	applied uint64        // highest sequence applied
	moved   chan struct{} // closed (and replaced) when applied moves
	err     error
}

// Observe subscribes to j and starts turning its events into spans and
// metrics. It returns an error when the subscription or an instrument
// cannot be made. Close stops it.
func Observe(ctx context.Context, j *journal.Journal, opts *Options) (*Observer, error) {
	if j == nil {
		return nil, errors.New("otel: nil journal")
	}
	o := fill(opts)
	inst, err := newInstruments(o.MeterProvider.Meter(ScopeName))
	if err != nil {
		return nil, fmt.Errorf("otel: instruments: %w", err)
	}
	// The subscription takes every session's events from a known
	// sequence on, so that the Observer knows how far it has read the
	// store (Flush).
	from := o.FromSeq
	if from == 0 {
		last, err := j.Store().LastSeq(ctx)
		if err != nil {
			inst.close()
			return nil, fmt.Errorf("otel: subscribe: %w", err)
		}
		from = last + 1
	}
	sctx, cancel := context.WithCancel(context.Background())
	sub, err := j.Subscribe(sctx, journal.SubscribeOptions{FromSeq: from})
	if err != nil {
		cancel()
		inst.close()
		return nil, fmt.Errorf("otel: subscribe: %w", err)
	}
	ob := &Observer{j: j, sub: sub, cancel: cancel, done: make(chan struct{}), inst: inst,
		applied: from - 1, moved: make(chan struct{})}
	tr := newTranslator(o.TracerProvider.Tracer(ScopeName), inst, time.Now)
	go ob.run(tr, o.Session)
	return ob, nil
}

// fill returns a copy of opts with the defaults filled in.
func fill(opts *Options) Options {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.TracerProvider == nil {
		o.TracerProvider = gotel.GetTracerProvider()
	}
	if o.MeterProvider == nil {
		o.MeterProvider = gotel.GetMeterProvider()
	}
	return o
}

func (o *Observer) run(tr *translator, session string) {
	defer close(o.done)
	for env := range o.sub.C() {
		if session == "" || env.SessionID == session {
			tr.apply(env)
		}
		o.mu.Lock()
		o.applied = env.Seq
		close(o.moved)
		o.moved = make(chan struct{})
		o.mu.Unlock()
	}
	tr.close()
	o.mu.Lock()
	if err := o.sub.Err(); err != nil && !errors.Is(err, context.Canceled) {
		o.err = err
	}
	o.mu.Unlock()
}

// Flush waits until every event the journal's store held when Flush was
// called has been turned into spans: after a session's Close, a Flush
// and then the tracer provider's ForceFlush export all of it. It returns
// ctx's error when ctx ends first, and the Observer's error when it
// stopped.
func (o *Observer) Flush(ctx context.Context) error {
	if err := o.j.Flush(ctx); err != nil {
		return fmt.Errorf("otel: flush: %w", err)
	}
	target, err := o.j.Store().LastSeq(ctx)
	if err != nil {
		return fmt.Errorf("otel: flush: %w", err)
	}
	for {
		o.mu.Lock()
		applied, moved := o.applied, o.moved
		o.mu.Unlock()
		if applied >= target {
			return nil
		}
		select {
		case <-moved:
		case <-o.done:
			if err := o.Err(); err != nil {
				return err
			}
			return journal.ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Err returns why the Observer stopped on its own (its subscription
// failed), nil while it runs or after Close.
func (o *Observer) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// Close stops the Observer and waits for its goroutine. Spans of
// sessions still open end at their latest event, marked
// mcplife.unfinished. It is idempotent.
func (o *Observer) Close() error {
	o.closed.Do(func() {
		o.cancel()
		o.sub.Close()
		<-o.done
		o.inst.close()
	})
	return nil
}
