package journal

import (
	"context"
	"errors"
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
// append costs its caller no more than building its envelopes. While the
// store is unavailable the writer holds what it could not store
// (held.go), and stores it first once the store is back.

// request is one append in the queue. done is nil for a deferred append,
// whose failure goes to failed instead.
type request struct {
	ctx     context.Context
	session string
	envs    []events.Envelope
	// evs are the events envs encode, so the projections fold them
	// without decoding what was just encoded.
	evs []events.Event
	// encode is set for a deferred append whose envelopes the writer
	// builds (under correlation) before it stores them; envs is nil until
	// then.
	encode      bool
	correlation string
	// linger is how long the writer may gather before storing this
	// deferred append, when longer than Options.DeferredDelay (see
	// [Deferred.Linger]).
	linger time.Duration
	// until is when the linger of a request queued with it ends, and
	// nudge the timer that wakes the writer then.
	until time.Time
	nudge *time.Timer

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
	// A gathering writer takes a deferred append when its delay ends:
	// waking it for each would cost a goroutine switch per append. One
	// that lingers wakes it only when its linger ends, unless something
	// else does first: the caller expects to wake it sooner.
	wake := !(j.gathering || j.lingering) || r.done != nil || j.gathered+len(j.wq) >= maxGather
	if wake && r.done == nil && r.linger > 0 && j.deferredDelay > 0 && !j.gathering {
		r.until = time.Now().Add(r.linger)
		r.nudge = time.AfterFunc(r.linger, j.nudge)
		j.lingering, wake = true, false
	}
	if wake {
		select {
		case j.wake <- struct{}{}:
		default: // the writer is already due to look
		}
	}
	j.wmu.Unlock()
	return nil
}

// nudge wakes the writer for a lingering append whose linger ended.
func (j *Journal) nudge() {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	if j.wclosed {
		return // Close woke it for good
	}
	select {
	case j.wake <- struct{}{}:
	default:
	}
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
// delay rather than one per event. While it holds events for a store that
// is unavailable, it also tries the store again from time to time. Close
// closes wake once no append can queue any more; the loop then writes what
// is left and ends.
func (j *Journal) writeLoop() {
	defer close(j.writerDone)
	var timer, retry *time.Timer
	retryC := j.armRetry(&retry)
	for {
		var open bool
		select {
		case _, open = <-j.wake:
		case <-retryC:
			j.write(nil, true)
			retryC = j.armRetry(&retry)
			continue
		}
		batch := j.takeQueued()
		// A lingering append extends the gathering to the end of its
		// linger; one whose linger ended is stored at once.
		delay, due := j.deferredDelay, false
		for _, r := range batch {
			if !r.until.IsZero() {
				left := time.Until(r.until)
				due = due || left <= 0
				delay = max(delay, left)
			}
		}
		if open && j.deferredDelay > 0 && deferredOnly(batch) && !due {
			if timer == nil {
				timer = time.NewTimer(delay)
			} else {
				timer.Reset(delay)
			}
			j.setGathering(true, len(batch))
		gather:
			for len(batch) < maxGather {
				select {
				case _, open = <-j.wake:
					more := j.takeQueued()
					batch = append(batch, more...)
					if !open || !deferredOnly(more) {
						break gather
					}
					j.setGathering(true, len(batch))
				case <-timer.C:
					break gather
				}
			}
			timer.Stop()
			// What was queued without waking the writer goes with the batch.
			batch = append(batch, j.setGathering(false, 0)...)
		}
		if len(batch) > 0 {
			j.write(batch, false)
		}
		if !open {
			if rest := j.takeQueued(); len(rest) > 0 {
				j.write(rest, false)
			}
			if retry != nil {
				retry.Stop()
			}
			j.write(nil, true) // a last attempt at what is held
			j.closeHeld()
			return
		}
		retryC = j.armRetry(&retry)
	}
}

// armRetry returns the channel of a timer due when the held events should
// be tried again, or nil when nothing is held.
func (j *Journal) armRetry(t **time.Timer) <-chan time.Time {
	j.mu.Lock()
	pending, next := j.held.pending(), j.held.next
	j.mu.Unlock()
	if !pending {
		return nil
	}
	d := time.Until(next)
	if *t == nil {
		*t = time.NewTimer(d)
	} else {
		(*t).Reset(d)
	}
	return (*t).C
}

// setGathering sets whether the writer is gathering deferred appends and
// how many it holds; when it stops, it takes what is queued.
func (j *Journal) setGathering(on bool, held int) []*request {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	j.gathering, j.gathered = on, held
	if on {
		return nil
	}
	batch := j.wq
	j.wq, j.lingering = nil, false
	return batch
}

// maxGather bounds how many deferred appends the writer gathers before it
// writes without waiting out the delay.
const maxGather = 1024

// takeQueued takes everything queued.
func (j *Journal) takeQueued() []*request {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	batch := j.wq
	j.wq, j.lingering = nil, false
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
// then completes each request. While events are held for an unavailable
// store (held.go), it first stores those, when retry is set or batch has a
// waited-for request; what is still held keeps the deferred requests of
// batch behind it, and fails the waited-for ones.
func (j *Journal) write(batch []*request, retry bool) {
	for _, r := range batch {
		if r.nudge != nil {
			r.nudge.Stop()
		}
		if r.encode {
			// Before taking j.mu: readers of the journal need not wait
			// for the encoding.
			r.encode = false
			r.envs, r.err = envelopes(r.session, r.correlation, r.evs)
		}
	}
	j.mu.Lock()
	now := j.now().UTC()
	var live []*request
	for _, r := range batch {
		if r.err != nil {
			continue // its envelopes could not be built
		}
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
		// A call whose start was not stored records nothing more.
		if kept := j.held.dropLostCalls(r.session, r.envs); len(kept) != len(r.envs) {
			r.envs, r.evs = kept, nil
			if len(kept) == 0 {
				continue
			}
		}
		live = append(live, r)
	}
	var out storedBatch
	if j.held.pending() && (retry || !deferredOnly(batch)) {
		j.drain(&out)
	}
	if j.held.pending() {
		for _, r := range live {
			j.holdOrLose(r)
		}
	} else {
		j.persist(live, &out)
		if j.held.single {
			// The store answers but refused the commit: find the request
			// it refuses now rather than at the next attempt.
			j.drain(&out)
		}
	}
	stored, typed := out.envs, out.typed
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
	for _, f := range out.refused {
		f.failed(f.err)
	}
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

// storedBatch collects what one write stored, in sequence order, and the
// failures of held appends to report once j.mu is released.
type storedBatch struct {
	envs    []events.Envelope
	typed   []events.Event
	refused []refusal
}

type refusal struct {
	failed func(error)
	err    error
}

func (b *storedBatch) add(envs []events.Envelope, evs []events.Event) {
	b.envs = append(b.envs, envs...)
	if len(evs) == len(envs) {
		b.typed = append(b.typed, evs...)
	} else {
		b.typed = append(b.typed, make([]events.Event, len(envs))...)
	}
}

// persist stores live (see commit) and sets each request's result. When
// the store turns out to be unavailable, the requests it did not take are
// held (deferred) or fail (waited-for), in order. Requires j.mu.
func (j *Journal) persist(live []*request, out *storedBatch) {
	if len(live) == 0 {
		return
	}
	res := j.commitLive(live)
	if f, rest := failedFrom(res); f < len(res) && rest {
		// Nothing was stored from live[f] on: held or failed in order,
		// when the store is unavailable. One by one, live[f] failed
		// alone: a waited-for append the store answers about is refused.
		hold := live[f].done == nil || (j.batches(len(live)) && len(live)-f > 1)
		if j.unavailable(res[f].Err, hold) {
			for i, r := range live[:f] {
				r.out = res[i].Envs
				out.add(r.out, r.evs)
			}
			for _, r := range live[f:] {
				j.holdOrLose(r)
			}
			return
		}
	}
	for i, r := range live {
		if res[i].Err == nil {
			r.out = res[i].Envs
			out.add(r.out, r.evs)
			continue
		}
		r.err = fmt.Errorf("journal: append to %q: %w", r.session, res[i].Err)
		j.held.forget(r.session, r.envs)
		if !j.batches(len(live)) {
			// One by one, those after it were not tried.
			j.persist(live[i+1:], out)
			return
		}
	}
}

// commitLive commits the envelopes of live (see commit). When they all go
// to one session's stream, as they do in a host, they are stored as one
// append, which costs the store one set of statements rather than one per
// request, and its result is split back by request; its failure fails
// them all, as a commit that failed as a whole does, and what follows
// (holding them, or trying them one at a time to find one the store
// refuses) is what follows such a commit. Requires j.mu.
func (j *Journal) commitLive(live []*request) []store.AppendResult {
	session, n := live[0].session, 0
	for _, r := range live {
		if r.session != session {
			n = -1
			break
		}
		n += len(r.envs)
	}
	if len(live) == 1 || n < 0 {
		reqs := make([]store.AppendRequest, len(live))
		for i, r := range live {
			reqs[i] = store.AppendRequest{Stream: r.session, Expected: store.AnyVersion, Envs: r.envs}
		}
		return j.commit(reqs)
	}
	envs := make([]events.Envelope, 0, n)
	for _, r := range live {
		envs = append(envs, r.envs...)
	}
	one := j.commit([]store.AppendRequest{{Stream: session, Expected: store.AnyVersion, Envs: envs}})[0]
	res := make([]store.AppendResult, len(live))
	off := 0
	for i, r := range live {
		if one.Err != nil {
			res[i].Err = one.Err
			continue
		}
		res[i].Envs = one.Envs[off : off+len(r.envs) : off+len(r.envs)]
		off += len(r.envs)
	}
	return res
}

// batches reports whether commit stores n requests in one commit.
func (j *Journal) batches(n int) bool {
	_, ok := j.st.(store.BatchAppender)
	return ok && n > 1
}

// commit appends reqs in one commit when the store can, else one by one,
// in order; one by one, it stops at the first failure, and the requests
// after it get the same error without being tried, so nothing is stored
// out of order. Requires j.mu.
func (j *Journal) commit(reqs []store.AppendRequest) []store.AppendResult {
	// A caller that stops waiting once its request is taken still gets it
	// stored: the writer does not depend on callers' contexts, only on
	// its own bound.
	ctx, cancel := j.storeContext()
	defer cancel()
	if j.batches(len(reqs)) {
		return j.st.(store.BatchAppender).AppendBatch(ctx, reqs)
	}
	res := make([]store.AppendResult, len(reqs))
	for i, r := range reqs {
		res[i].Envs, res[i].Err = j.st.Append(ctx, r.Stream, r.Expected, r.Envs)
		if res[i].Err != nil {
			for k := i + 1; k < len(res); k++ {
				res[k].Err = res[i].Err
			}
			break
		}
	}
	return res
}

// AppendDeferred records evs in session's stream like [Journal.AppendCorrelated]
// but does not wait for them to be stored: it returns once they are queued,
// after every append called before it and before every append called after
// it, and the journal's writer stores, projects and publishes them in that
// order. At most Options.DeferredQueue deferred appends wait at once; past
// that AppendDeferred blocks until the writer catches up or ctx ends.
//
// A store that refuses the append (read-only, closed, an envelope it cannot
// hold) sends its error to failed (when not nil), called from the writer's
// goroutine: it must not call the journal. A store that is unavailable
// (its appends and reads fail: a database server that stopped) fails
// nothing: the writer holds the deferred appends, in order, and stores them
// once the store answers again, before anything appended after them. It
// tries again after 50 ms, then twice as long each time up to a second, and
// at every waited-for append. It holds up to Options.HeldBytes in memory,
// then in Options.Spool; past those bounds the events are lost, counted,
// and recorded as an [events.RecordingGap] in each session that lost some,
// where they would have been. The later events of a tool call whose
// ToolCallStarted was not stored are dropped, so a ToolCallFinished is
// never stored without its start.
//
// The writer gathers deferred appends for up to Options.DeferredDelay
// before it stores them in one commit. [Journal.Flush] waits until
// everything queued before it is stored (or held), and Close stores
// everything queued; what it still holds then goes to the spool for the
// next journal on it (without a spool it is lost, and logged). A process
// that is killed loses the deferred events not yet committed (those of
// about the last DeferredDelay plus one commit) and those held in memory;
// those in the spool are stored by the next journal on it. Order is kept
// either way: what is stored is a prefix of what was appended, but for the
// gaps a RecordingGap marks.
func (j *Journal) AppendDeferred(ctx context.Context, session, correlation string, failed func(error), evs ...events.Event) error {
	if len(evs) == 0 {
		return nil
	}
	d, err := j.PrepareDeferred(session, correlation, failed, evs...)
	if err != nil {
		return err
	}
	return j.QueueDeferred(ctx, d)
}

// Deferred is a deferred append whose envelopes are built, ready to be
// queued: a caller that must queue under a lock of its own (to keep its
// appends in order) builds it before taking the lock.
type Deferred struct{ r *request }

// PrepareDeferred builds the envelopes of a deferred append of evs (see
// [Journal.AppendDeferred]) without queueing it.
func (j *Journal) PrepareDeferred(session, correlation string, failed func(error), evs ...events.Event) (*Deferred, error) {
	envs, err := envelopes(session, correlation, evs)
	if err != nil {
		return nil, err
	}
	return &Deferred{&request{session: session, envs: envs, evs: evs, failed: failed}}, nil
}

// PrepareDeferredEncoded is [Journal.PrepareDeferred] that leaves building
// the envelopes to the writer, off the caller's path: the caller hands evs
// over and must not change them afterwards. An event that cannot be
// encoded fails the append (through failed, like a store's refusal) when
// the writer takes it.
func (j *Journal) PrepareDeferredEncoded(session, correlation string, failed func(error), evs ...events.Event) (*Deferred, error) {
	if session == "" {
		return nil, fmt.Errorf("journal: append: empty session id")
	}
	return &Deferred{&request{session: session, evs: evs, failed: failed, encode: true, correlation: correlation}}, nil
}

// Linger lets the writer wait up to t after d is queued, rather than
// Options.DeferredDelay, before it stores d and the deferred appends
// queued after it: for a caller that knows a waited-for append follows
// soon, so that all share that append's commit and the writer is not
// woken before. A waited-for append, Flush or Close still ends the wait
// at once, and order is kept. It has no effect on a journal whose
// DeferredDelay is negative (no wait), nor while the writer is already
// gathering (d then goes with that batch). A killed process may lose up
// to t of deferred appends instead of DeferredDelay. Call it before d is
// queued.
func (d *Deferred) Linger(t time.Duration) { d.r.linger = t }

// QueueDeferred queues d as [Journal.AppendDeferred] does, waiting for
// room while Options.DeferredQueue deferred appends wait, or until ctx
// ends.
func (j *Journal) QueueDeferred(ctx context.Context, d *Deferred) error {
	select {
	case j.slots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("journal: append to %q: %w", d.r.session, ctx.Err())
	}
	return j.queueTaken(d)
}

// ErrQueueFull is returned by [Journal.TryQueueDeferred] when
// Options.DeferredQueue deferred appends are waiting already.
var ErrQueueFull = errors.New("journal: deferred queue full")

// TryQueueDeferred is [Journal.QueueDeferred] that never waits: when the
// queue is full it queues nothing and returns ErrQueueFull.
func (j *Journal) TryQueueDeferred(d *Deferred) error {
	select {
	case j.slots <- struct{}{}:
	default:
		return ErrQueueFull
	}
	return j.queueTaken(d)
}

// queueTaken queues d, whose slot is taken.
func (j *Journal) queueTaken(d *Deferred) error {
	if len(d.r.envs) == 0 && len(d.r.evs) == 0 {
		<-j.slots
		return nil
	}
	if err := j.enqueue(d.r); err != nil {
		<-j.slots
		return err
	}
	return nil
}

// Pending is an append queued by [Journal.AppendAsync].
type Pending struct{ r *request }

// Done is closed once the append was stored or failed.
func (p *Pending) Done() <-chan struct{} { return p.r.done }

// Result returns what the append stored, or why it failed; it waits for
// Done.
func (p *Pending) Result() ([]events.Envelope, error) {
	<-p.r.done
	return p.r.out, p.r.err
}

// AppendAsync queues evs like [Journal.AppendCorrelated], in the same
// order with every other append, and returns without waiting: the result
// is the returned Pending's. A caller that queues its appends from one
// goroutine this way keeps their order without waiting for each commit.
// Like a waited-for append, it fails (rather than being held) while the
// store is unavailable, and when ctx ends before the writer takes it.
func (j *Journal) AppendAsync(ctx context.Context, session, correlation string, evs ...events.Event) (*Pending, error) {
	envs, err := envelopes(session, correlation, evs)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("journal: append to %q: %w", session, err)
	}
	r := &request{ctx: ctx, session: session, envs: envs, evs: evs, done: make(chan struct{})}
	if err := j.enqueue(r); err != nil {
		return nil, err
	}
	return &Pending{r: r}, nil
}

// Flush waits until every append called before it, deferred ones included,
// has been stored (or has failed), projected and queued for publishing.
// While the store is unavailable, Flush tries it once more and returns
// with the deferred appends it does not take held (see
// [Journal.AppendDeferred]).
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

// Backlog returns how many deferred appends are queued and not yet stored
// (or held): what a journal closed now would still have to store.
func (j *Journal) Backlog() int { return len(j.slots) }

// storeContext bounds one commit or check of the store by
// Options.StoreTimeout.
func (j *Journal) storeContext() (context.Context, context.CancelFunc) {
	if j.storeTimeout > 0 {
		return context.WithTimeout(context.Background(), j.storeTimeout)
	}
	return context.Background(), func() {}
}
