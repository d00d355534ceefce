package journal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/mcplife/mcplife/events"
)

// DefaultSubscriptionBuffer is how many envelopes a subscription holds for
// a consumer that is not reading.
const DefaultSubscriptionBuffer = 256

// ErrBusClosed ends a subscription whose bus closed while its journal was
// still open (a bus the caller supplied and closed). When the journal
// closes its own bus, the subscription ends with [ErrClosed] instead.
var ErrBusClosed = errors.New("journal: bus closed")

// errSubscriberClosed is the cause Close cancels the runner's context with,
// telling the subscriber's own Close from its context ending.
var errSubscriberClosed = errors.New("journal: subscription closed by its subscriber")

// SubscribeOptions select what a [Subscription] delivers.
type SubscribeOptions struct {
	// FromSeq is the first sequence to deliver. 0 means only events
	// appended after Subscribe returns; 1 means the whole history.
	FromSeq uint64
	// Session, when set, delivers only that session's events.
	Session string
	// Types, when set, delivers only events of these types.
	Types []string
	// Buffer is how many envelopes are held for a consumer that does not
	// keep up (default DefaultSubscriptionBuffer).
	Buffer int
}

// Subscription delivers envelopes in sequence order with no gaps: messages
// from the bus are used while they arrive in order; when one is missing, or
// the consumer fell behind, the subscription reads the missing range from
// the store. Only a message from the journal's own store (one carrying
// the store's identity) is taken as an event: another store's
// events on the same topic are ignored, and a message that names no store
// only makes the subscription look in the store.
//
// A slow consumer never blocks appends or other subscribers: the bus
// messages are acknowledged at once, and when the buffer is full the
// subscription stops holding envelopes and later re-reads them from the
// store, in order, when the consumer reads again. Nothing is dropped.
//
// A subscription never ends by itself while its journal, bus and store
// work: it ends when the subscriber calls Close or its context ends, or
// with an error (see [Subscription.Err]).
type Subscription struct {
	out    chan events.Envelope
	cancel context.CancelCauseFunc
	done   chan struct{}

	mu  sync.Mutex
	err error
}

// C returns the channel of envelopes. It is closed when the subscription
// ends; then [Subscription.Err] says why.
func (s *Subscription) C() <-chan events.Envelope { return s.out }

// Err returns why the subscription ended, once C is closed:
//
//   - nil when the subscriber called Close;
//   - ctx.Err() of the context passed to Subscribe (context.Canceled or
//     context.DeadlineExceeded) when that ended, whether or not envelopes
//     were still to come;
//   - an error wrapping [ErrClosed] when the journal was closed, after
//     everything stored by then was delivered;
//   - an error wrapping [ErrBusClosed] when the bus closed under an open
//     journal, after everything stored by then was delivered;
//   - an error wrapping the store's error when reading the store failed.
//
// Whichever comes first decides: a Close after the subscription ended for
// another reason leaves that reason. Err returns nil while the
// subscription runs. It is safe to call concurrently.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the subscription and waits for its goroutine. Idempotent.
func (s *Subscription) Close() {
	s.cancel(errSubscriberClosed)
	<-s.done
}

// Subscribe starts a subscription. It runs until the subscriber calls
// Close, ctx ends, or it fails (see [Subscription.Err]).
func (j *Journal) Subscribe(ctx context.Context, opts SubscribeOptions) (*Subscription, error) {
	buf := opts.Buffer
	if buf <= 0 {
		buf = DefaultSubscriptionBuffer
	}
	ctx, cancel := context.WithCancelCause(ctx)
	// Subscribe to the bus (or the writer's feed) before deciding where to
	// start, so nothing appended in between is missed.
	var (
		msgs <-chan *message.Message
		f    *feed
	)
	j.mu.Lock()
	closed := j.closed
	if !closed && j.pub == nil {
		f = newFeed(max(buf, minFeed))
		if j.feeds == nil {
			j.feeds = make(map[*feed]struct{})
		}
		j.feeds[f] = struct{}{}
	}
	j.mu.Unlock()
	if closed {
		cancel(nil)
		return nil, ErrClosed
	}
	if f == nil {
		var err error
		if msgs, err = j.sub.Subscribe(ctx, j.topic); err != nil {
			cancel(nil)
			return nil, fmt.Errorf("journal: subscribe: %w", err)
		}
	}
	next := opts.FromSeq
	if next == 0 {
		last, err := j.st.LastSeq(ctx)
		if err != nil {
			cancel(nil)
			j.dropFeed(f)
			return nil, fmt.Errorf("journal: subscribe: %w", err)
		}
		next = last + 1
	}
	s := &Subscription{
		out:    make(chan events.Envelope),
		cancel: cancel,
		done:   make(chan struct{}),
	}
	r := &runner{j: j, s: s, opts: opts, buf: buf, next: next, high: next - 1, feed: f}
	go r.run(ctx, msgs)
	return s, nil
}

// minFeed is the least number of envelopes a subscription's feed holds, so
// a large batch reaches a subscriber that keeps up without a store read.
const minFeed = 1024

// dropFeed unregisters f (nil is ignored).
func (j *Journal) dropFeed(f *feed) {
	if f == nil {
		return
	}
	j.mu.Lock()
	delete(j.feeds, f)
	j.mu.Unlock()
}

// runner is the goroutine state of one subscription.
type runner struct {
	j    *Journal
	s    *Subscription
	opts SubscribeOptions
	buf  int

	feed *feed // the writer's feed, when the journal has no bus

	next    uint64            // next global sequence to take
	high    uint64            // highest sequence known to exist
	pending []events.Envelope // matching envelopes ready for the consumer
}

func (r *runner) run(ctx context.Context, msgs <-chan *message.Message) {
	defer close(r.s.done)
	defer close(r.s.out)
	defer r.s.cancel(nil)
	defer r.j.dropFeed(r.feed)
	var wake chan struct{}
	if r.feed != nil {
		wake = r.feed.wake
	}
	// First catch up with history when the subscription starts in the past.
	last, err := r.j.st.LastSeq(ctx)
	if err != nil {
		r.end(ctx, err)
		return
	}
	r.high = max(r.high, last)
	for {
		if len(r.pending) == 0 && r.high >= r.next {
			before := r.next
			if err := r.fill(ctx); err != nil {
				r.end(ctx, err)
				return
			}
			if r.next == before {
				// The store does not hold what the bus announced (another
				// store behind the same bus): wait for the next message.
				r.high = r.next - 1
			}
		}
		var out chan events.Envelope
		var head events.Envelope
		if len(r.pending) > 0 {
			out, head = r.s.out, r.pending[0]
		}
		select {
		case <-ctx.Done():
			r.end(ctx, nil)
			return
		case msg, ok := <-msgs:
			if !ok {
				// The bus closed: deliver what is stored, then end.
				r.end(ctx, r.drain(ctx))
				return
			}
			r.take(ctx, msg)
		case <-wake:
			batches, high, closed := r.feed.take()
			for _, b := range batches {
				for _, env := range b {
					if r.ready(env.Seq) {
						r.accept(env)
					} else {
						r.missed(env.Seq)
					}
				}
			}
			r.high = max(r.high, high)
			if closed {
				// The journal closed: deliver what is stored, then end.
				r.end(ctx, r.drain(ctx))
				return
			}
		case out <- head:
			r.pending[0] = events.Envelope{}
			r.pending = r.pending[1:]
		}
	}
}

// take handles one bus message.
func (r *runner) take(ctx context.Context, msg *message.Message) {
	msg.Ack()
	if msg.Metadata.Get(MetaCheckStore) != "" {
		// The bus may have lost messages (it reconnected): whatever the
		// store holds beyond what was delivered is read from it.
		if last, err := r.j.st.LastSeq(ctx); err == nil {
			r.missed(last)
		}
		return
	}
	switch from := msg.Metadata.Get(MetaStore); {
	case r.j.storeID == "" || from == "":
		// The store has no identity (an old file opened read-only), or
		// the message does not say which store it is from (an older
		// publisher): it is not taken as an event, but it says there may
		// be more in the store.
		if last, err := r.j.st.LastSeq(ctx); err == nil {
			r.missed(last)
		}
		return
	case from != r.j.storeID:
		return // another store's event on the same topic
	}
	seq, err := strconv.ParseUint(msg.Metadata.Get(MetaSeq), 10, 64)
	if err != nil {
		return // not ours to order
	}
	if r.ready(seq) {
		if env, err := envelopeOf(msg); err == nil {
			r.accept(env)
			return
		}
	}
	// A gap, a full buffer or an undecodable payload: read it from the
	// store later.
	r.missed(seq)
}

// ready reports whether the envelope of sequence seq, from the bus or the
// feed, can be taken now: it is the next one and there is room.
func (r *runner) ready(seq uint64) bool {
	return seq == r.next && r.high < r.next && len(r.pending) < r.buf
}

// accept takes env, which was ready.
func (r *runner) accept(env events.Envelope) {
	r.next++
	r.high = env.Seq
	if r.match(env) {
		r.pending = append(r.pending, env)
	}
}

// missed notes that sequence seq exists but was not taken, so the store
// supplies it later (nothing for one already delivered).
func (r *runner) missed(seq uint64) {
	if seq >= r.next {
		r.high = max(r.high, seq)
	}
}

// fill reads up to buf matching envelopes from the store, starting at next.
func (r *runner) fill(ctx context.Context) error {
	for env, err := range r.j.st.ReadAll(ctx, r.next) {
		if err != nil {
			return err
		}
		r.next = env.Seq + 1
		r.high = max(r.high, env.Seq)
		if r.match(env) {
			r.pending = append(r.pending, env)
			if len(r.pending) >= r.buf {
				break
			}
		}
	}
	return nil
}

// drain delivers everything stored up to the end, for a bus that closed,
// and returns why the subscription ends: the bus closing, or that and the
// store read that failed.
func (r *runner) drain(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err // the bus ended the subscription because ctx did
	}
	closed := ErrBusClosed
	r.j.mu.Lock()
	if r.j.closed {
		closed = ErrClosed
	}
	r.j.mu.Unlock()
	for {
		for _, env := range r.pending {
			select {
			case r.s.out <- env:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		r.pending = r.pending[:0]
		last, err := r.j.st.LastSeq(ctx)
		if err == nil && last < r.next {
			return closed
		}
		if err == nil {
			err = r.fill(ctx)
		}
		if err != nil {
			return fmt.Errorf("%w, and reading the store failed: %w", closed, err)
		}
	}
}

func (r *runner) match(env events.Envelope) bool {
	if r.opts.Session != "" && env.SessionID != r.opts.Session {
		return false
	}
	return len(r.opts.Types) == 0 || slices.Contains(r.opts.Types, env.Type)
}

// end records why the subscription ends: nothing when the subscriber
// called Close, ctx.Err() when the subscriber's context ended (whatever
// err says: a read that failed then is that end's echo), else err, which
// is never nil then.
func (r *runner) end(ctx context.Context, err error) {
	switch {
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), errSubscriberClosed):
		err = nil
	case ctx.Err() != nil:
		err = ctx.Err()
	default:
		err = fmt.Errorf("journal: subscription: %w", err)
	}
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	r.s.err = err
}
