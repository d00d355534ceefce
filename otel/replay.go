package otel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/metric/noop"

	"github.com/mcplife/mcplife/store"
)

// ErrNoSession is returned by [Replay] for a session the store does not
// hold.
var ErrNoSession = errors.New("otel: no such session")

// Replay makes the spans of a recorded session, read from st, as an
// [Observer] made them while it ran: the same names, attributes and
// times. opts.Session is ignored and no metrics are recorded. Spans of a
// session recorded without its end (the host was killed) end at its
// latest event, marked mcplife.unfinished. The caller flushes or shuts
// down its tracer provider to export them. It returns [ErrNoSession]
// when st holds no event of session, and the store's error when reading
// fails (the spans made until then are ended).
func Replay(ctx context.Context, st store.Store, session string, opts *Options) error {
	o := fill(opts)
	inst, err := newInstruments(noop.NewMeterProvider().Meter(ScopeName))
	if err != nil {
		return fmt.Errorf("otel: instruments: %w", err)
	}
	defer inst.close()
	tr := newTranslator(o.TracerProvider.Tracer(ScopeName), inst, time.Now)
	defer tr.close()
	n := 0
	for env, err := range st.ReadStream(ctx, session, 1) {
		if err != nil {
			return fmt.Errorf("otel: replay %s: %w", session, err)
		}
		tr.apply(env)
		n++
	}
	if n == 0 {
		return fmt.Errorf("%w: %s", ErrNoSession, session)
	}
	return nil
}
