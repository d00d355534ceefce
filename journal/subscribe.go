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
// the store.
//
// A slow consumer never blocks appends or other subscribers: the bus
// messages are acknowledged at once, and when the buffer is full the
// subscription stops holding envelopes and later re-reads them from the
// store, in order, when the consumer reads again. Nothing is dropped.
type Subscription struct {
	out    chan events.Envelope
	cancel context.CancelFunc
	done   chan struct{}

	mu  sync.Mutex
	err error
}

// C returns the channel of envelopes. It is closed when the subscription
// ends (Close, the context's end, the journal's bus closing, or a store
// error — see Err).
func (s *Subscription) C() <-chan events.Envelope { return s.out }

// Err returns why the subscription ended, or nil while it runs or after a
// plain Close.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the subscription and waits for its goroutine. Idempotent.
func (s *Subscription) Close() {
	s.cancel()
	<-s.done
}

// Subscribe starts a subscription. It ends when ctx is done or Close is
// called.
func (j *Journal) Subscribe(ctx context.Context, opts SubscribeOptions) (*Subscription, error) {
	j.mu.Lock()
	closed := j.closed
	j.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	ctx, cancel := context.WithCancel(ctx)
	// Subscribe to the bus before deciding where to start, so nothing
	// appended in between is missed.
	msgs, err := j.sub.Subscribe(ctx, j.topic)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("journal: subscribe: %w", err)
	}
	next := opts.FromSeq
	if next == 0 {
		last, err := j.st.LastSeq(ctx)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("journal: subscribe: %w", err)
		}
		next = last + 1
	}
	buf := opts.Buffer
	if buf <= 0 {
		buf = DefaultSubscriptionBuffer
	}
	s := &Subscription{
		out:    make(chan events.Envelope),
		cancel: cancel,
		done:   make(chan struct{}),
	}
	r := &runner{j: j, s: s, opts: opts, buf: buf, next: next, high: next - 1}
	go r.run(ctx, msgs)
	return s, nil
}

// runner is the goroutine state of one subscription.
type runner struct {
	j    *Journal
	s    *Subscription
	opts SubscribeOptions
	buf  int

	next    uint64            // next global sequence to take
	high    uint64            // highest sequence known to exist
	pending []events.Envelope // matching envelopes ready for the consumer
}

func (r *runner) run(ctx context.Context, msgs <-chan *message.Message) {
	defer close(r.s.done)
	defer close(r.s.out)
	defer r.s.cancel()
	// First catch up with history when the subscription starts in the past.
	if last, err := r.j.st.LastSeq(ctx); err == nil && last > r.high {
		r.high = last
	}
	for {
		if len(r.pending) == 0 && r.high >= r.next {
			before := r.next
			if err := r.fill(ctx); err != nil {
				if ctx.Err() == nil {
					r.fail(err)
				}
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
			return
		case msg, ok := <-msgs:
			if !ok {
				// The bus closed: deliver what is known, then end.
				r.drain(ctx)
				return
			}
			r.take(msg)
		case out <- head:
			r.pending[0] = events.Envelope{}
			r.pending = r.pending[1:]
		}
	}
}

// take handles one bus message.
func (r *runner) take(msg *message.Message) {
	msg.Ack()
	seq, err := strconv.ParseUint(msg.Metadata.Get(MetaSeq), 10, 64)
	if err != nil || seq < r.next {
		return // not ours to order, or already delivered
	}
	if seq == r.next && r.high < r.next && len(r.pending) < r.buf {
		if env, err := envelopeOf(msg); err == nil {
			r.next++
			r.high = seq
			if r.match(env) {
				r.pending = append(r.pending, env)
			}
			return
		}
	}
	// A gap, a full buffer or an undecodable payload: read it from the
	// store later.
	r.high = max(r.high, seq)
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

// drain delivers everything stored up to the end, for a bus that closed.
func (r *runner) drain(ctx context.Context) {
	for {
		for _, env := range r.pending {
			select {
			case r.s.out <- env:
			case <-ctx.Done():
				return
			}
		}
		r.pending = r.pending[:0]
		last, err := r.j.st.LastSeq(ctx)
		if err != nil || last < r.next {
			return
		}
		if err := r.fill(ctx); err != nil {
			return
		}
	}
}

func (r *runner) match(env events.Envelope) bool {
	if r.opts.Session != "" && env.SessionID != r.opts.Session {
		return false
	}
	return len(r.opts.Types) == 0 || slices.Contains(r.opts.Types, env.Type)
}

func (r *runner) fail(err error) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if r.s.err == nil && !errors.Is(err, context.Canceled) {
		r.s.err = fmt.Errorf("journal: subscription: %w", err)
	}
}
