package journal

import (
	"context"
	"fmt"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
)

// DefaultDeferredQueue is how many deferred appends may wait for the
// journal's writer before AppendDeferred blocks.
const DefaultDeferredQueue = 4096

// DefaultDeferredDelay is how long the writer gathers deferred appends
// before it stores them (see Options.DeferredDelay).
const DefaultDeferredDelay = 2 * time.Millisecond

// The write path. Every append, waited for or deferred, joins one queue in
// call order. The journal's writer goroutine takes everything queued, stores
// it in one commit when the store is a [store.BatchAppender] (else one
// append per request, in order), applies the stored envelopes to the
// projections, queues them for publishing, and then acknowledges the
// appends that wait. So order is the order of the calls, appends that
// arrive while a commit is in flight share the next one, and a deferred
// append costs its caller no more than building its envelopes.

// request is one append in the queue. done is nil for a deferred append,
// whose failure goes to failed instead.
type request struct {
	ctx     context.Context
	session string
	envs    []events.Envelope
	// evs are the events envs encode, so the projections fold them
	// without decoding what was just encoded.
	evs []events.Event

	done   chan struct{}
	failed func(error)
	out    []events.Envelope
	err    error
}

// enqueue adds r to the queue and wakes the writer. It fails with
// ErrClosed once Close has begun.
func (j *Journal) enqueue(r *request) error {
	j.wmu.Lock()
	if j.wclosed {
		j.wmu.Unlock()
		return ErrClosed
	}
	j.wq = append(j.wq, r)
	select {
	case j.wake <- struct{}{}:
	default: // the writer is already due to look
	}
	j.wmu.Unlock()
	return nil
}

// dequeue removes r if the writer has not taken it yet.
func (j *Journal) dequeue(r *request) bool {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	for i, q := range j.wq {
		if q == r {
			j.wq = append(j.wq[:i], j.wq[i+1:]...)
			return true
		}
	}
	return false
}

// writeLoop is the journal's writer: it writes what is queued each time it
// is woken. When everything queued is deferred, it first gathers what
// arrives within Options.DeferredDelay (or until a waited-for append,
// Flush or Close arrives), so a stream of tool calls costs one commit per
// delay rather than one per event. Close closes wake once no append can
// queue any more; the loop then writes what is left and ends.
func (j *Journal) writeLoop() {
	defer close(j.writerDone)
	var timer *time.Timer
	for {
		_, open := <-j.wake
		batch := j.takeQueued()
		if open && j.deferredDelay > 0 && deferredOnly(batch) {
			if timer == nil {
				timer = time.NewTimer(j.deferredDelay)
			} else {
				timer.Reset(j.deferredDelay)
			}
		gather:
			for len(batch) < maxGather {
				select {
				case _, open = <-j.wake:
					more := j.takeQueued()
					batch = append(batch, more...)
					if !open || !deferredOnly(more) {
						break gather
					}
				case <-timer.C:
					break gather
				}
			}
			timer.Stop()
		}
		if len(batch) > 0 {
			j.write(batch)
		}
		if !open {
			if rest := j.takeQueued(); len(rest) > 0 {
				j.write(rest)
			}
			return
		}
	}
}

// maxGather bounds how many deferred appends the writer gathers before it
// writes without waiting out the delay.
const maxGather = 1024

// takeQueued takes everything queued.
func (j *Journal) takeQueued() []*request {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	batch := j.wq
	j.wq = nil
	return batch
}

// deferredOnly reports whether no request of batch waits for its result.
func deferredOnly(batch []*request) bool {
	for _, r := range batch {
		if r.done != nil {
			return false
		}
	}
	return true
}

// write stores batch, projects and queues for publishing what was stored,
// then completes each request.
func (j *Journal) write(batch []*request) {
	j.mu.Lock()
	now := j.now().UTC()
	var live []*request
	for _, r := range batch {
		if r.ctx != nil {
			if err := r.ctx.Err(); err != nil {
				r.err = fmt.Errorf("journal: append to %q: %w", r.session, err)
				continue
			}
		}
		if len(r.envs) == 0 {
			continue
		}
		for i := range r.envs {
			if r.envs[i].Time.IsZero() {
				r.envs[i].Time = now
			}
			r.envs[i].SessionID = r.session
			if r.envs[i].Host == "" {
				r.envs[i].Host = j.host
			}
		}
		live = append(live, r)
	}
	j.persist(live)
	var (
		stored []events.Envelope
		typed  []events.Event
	)
	for _, r := range live {
		if r.err == nil {
			stored = append(stored, r.out...)
			if len(r.evs) == len(r.out) {
				typed = append(typed, r.evs...)
			} else {
				typed = append(typed, make([]events.Event, len(r.out))...)
			}
		}
	}
	if len(stored) > 0 {
		// The events are stored: keeping the projections current does not
		// depend on any caller's context.
		j.project(context.Background(), stored, typed)
		// Under j.mu, so batches go out in sequence order.
		for f := range j.feeds {
			f.push(stored)
		}
		if j.pub != nil {
			j.queuePublish(stored)
		}
	}
	j.mu.Unlock()
	for _, r := range batch {
		if r.done != nil {
			close(r.done)
			continue
		}
		<-j.slots
		if r.err != nil && r.failed != nil {
			r.failed(r.err)
		}
	}
}

// persist appends live in one batch when the store can, else one by one, and
// sets each request's result. Requires j.mu.
func (j *Journal) persist(live []*request) {
	if len(live) == 0 {
		return
	}
	// A caller that stops waiting once its request is taken still gets it
	// stored: the writer does not depend on callers' contexts.
	ctx := context.Background()
	ba, ok := j.st.(store.BatchAppender)
	if !ok || len(live) == 1 {
		for _, r := range live {
			r.out, r.err = j.st.Append(ctx, r.session, store.AnyVersion, r.envs)
			if r.err != nil {
				r.err = fmt.Errorf("journal: append to %q: %w", r.session, r.err)
			}
		}
		return
	}
	reqs := make([]store.AppendRequest, len(live))
	for i, r := range live {
		reqs[i] = store.AppendRequest{Stream: r.session, Expected: store.AnyVersion, Envs: r.envs}
	}
	for i, res := range ba.AppendBatch(ctx, reqs) {
		r := live[i]
		r.out, r.err = res.Envs, res.Err
		if r.err != nil {
			r.err = fmt.Errorf("journal: append to %q: %w", r.session, r.err)
		}
	}
}

// AppendDeferred records evs in session's stream like [Journal.AppendCorrelated]
// but does not wait for them to be stored: it returns once they are queued,
// after every append called before it and before every append called after
// it, and the journal's writer stores, projects and publishes them in that
// order. At most Options.DeferredQueue deferred appends wait at once; past
// that AppendDeferred blocks until the writer catches up or ctx ends.
//
// A store failure goes to failed (when not nil), called from the writer's
// goroutine: it must not call the journal. The writer gathers deferred
// appends for up to Options.DeferredDelay before it stores them in one
// commit. [Journal.Flush] waits until everything queued before it is
// stored, and Close stores everything queued. A process that is killed
// loses the deferred events not yet committed (those of about the last
// DeferredDelay plus one commit); a process that exits through Close loses
// none. Order is kept either way: what survives a kill is a prefix of what
// was appended.
func (j *Journal) AppendDeferred(ctx context.Context, session, correlation string, failed func(error), evs ...events.Event) error {
	if len(evs) == 0 {
		return nil
	}
	envs, err := envelopes(session, correlation, evs)
	if err != nil {
		return err
	}
	select {
	case j.slots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("journal: append to %q: %w", session, ctx.Err())
	}
	if err := j.enqueue(&request{session: session, envs: envs, evs: evs, failed: failed}); err != nil {
		<-j.slots
		return err
	}
	return nil
}

// Flush waits until every append called before it, deferred ones included,
// has been stored (or has failed), projected and queued for publishing.
func (j *Journal) Flush(ctx context.Context) error {
	r := &request{ctx: ctx, done: make(chan struct{})}
	if err := j.enqueue(r); err != nil {
		return err
	}
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		if !j.dequeue(r) {
			<-r.done
		}
		return ctx.Err()
	}
}

// envelopes builds the envelopes of evs for session, under correlation.
func envelopes(session, correlation string, evs []events.Event) ([]events.Envelope, error) {
	if session == "" {
		return nil, fmt.Errorf("journal: append: empty session id")
	}
	envs := make([]events.Envelope, len(evs))
	for i, ev := range evs {
		env, err := events.New(session, ev, time.Time{})
		if err != nil {
			return nil, fmt.Errorf("journal: append to %q: %w", session, err)
		}
		envs[i] = env.WithCorrelation(correlation)
	}
	return envs, nil
}
