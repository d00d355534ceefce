package conn

import (
	"context"
	"sync"
	"sync/atomic"
)

// Kick is a coalesced command to a server's owner: reconnect now (cut a
// backoff delay short), check now (a health check at once). A send never
// blocks, and the sends made before the owner took one are one: the
// owner selects on the channel.
type Kick chan struct{}

// NewKick returns a Kick with nothing pending.
func NewKick() Kick { return make(Kick, 1) }

// Send asks the owner; it reports false when a request was pending
// already.
func (k Kick) Send() bool {
	select {
	case k <- struct{}{}:
		return true
	default:
		return false
	}
}

// Inbox carries the commands that end a server's current work (a
// disconnect, with its reason and the caller's reply) to its owner. A
// send never blocks: it queues the command and cancels the inbox's
// context, under which the owner runs every step that may wait (a
// connect, a list, a backoff delay, its select), so wherever the owner
// waits, the command reaches it at once; a connect in flight is
// cancelled by it. The owner takes the commands ([Inbox.Take]) and, when
// the server's record ends, closes the inbox ([Inbox.Close]), taking
// those left; a send after that reports false.
//
// The zero Inbox is not usable: see [NewInbox]. A nil *Inbox has nothing
// asked.
type Inbox[C any] struct {
	ctx    context.Context
	cancel context.CancelFunc
	asked  atomic.Bool

	mu     sync.Mutex
	q      []C  // (mu) sent, not yet taken
	closed bool // (mu)
}

// NewInbox returns an empty inbox whose context is a child of parent.
func NewInbox[C any](parent context.Context) *Inbox[C] {
	b := &Inbox[C]{}
	b.ctx, b.cancel = context.WithCancel(parent)
	return b
}

// Context is the owner's: it ends at the first command sent (or with
// its parent).
func (b *Inbox[C]) Context() context.Context { return b.ctx }

// Send queues c for the owner and interrupts what the owner waits for.
// It reports false, queueing nothing, once the inbox is closed.
func (b *Inbox[C]) Send(c C) bool {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return false
	}
	b.q = append(b.q, c)
	b.asked.Store(true)
	b.mu.Unlock()
	b.cancel()
	return true
}

// Asked reports whether a command was ever sent: the server's record
// is about to end. It takes no lock.
func (b *Inbox[C]) Asked() bool { return b != nil && b.asked.Load() }

// Take returns the commands sent since the last Take, in the order they
// were sent.
func (b *Inbox[C]) Take() []C {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.q
	b.q = nil
	return q
}

// Close ends the inbox: later sends report false. It returns the
// commands not taken yet, which the owner still answers.
func (b *Inbox[C]) Close() []C {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	q := b.q
	b.q = nil
	b.cancel()
	return q
}
