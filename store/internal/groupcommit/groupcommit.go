package groupcommit

import (
	"context"
	"sync"

	"github.com/mcplife/mcplife/events"
)

// Request is one append waiting for, or written by, a group transaction.
type Request struct {
	Stream   string
	Expected int64
	Envs     []events.Envelope

	// Out and Err are the request's result: the stored envelopes, or why
	// it failed. The write function sets them; the committer sets Err for
	// a request it leaves out. Both are set before [Committer.Commit]
	// returns.
	Out []events.Envelope
	Err error

	ctx  context.Context // the caller's, set by Commit
	done chan struct{}   // closed by the leader once Out and Err are set
}

// Config is what a store gives [New].
type Config struct {
	// Sem is the store's writer token: a channel of capacity one that
	// holds a token while a write is in progress. A leader sends the token
	// before it writes and receives it back afterwards.
	Sem chan struct{}
	// Write writes live, in order, in one transaction and sets each
	// request's Out and Err; a request may fail alone (a version conflict)
	// while the others commit. It is called by one leader at a time, with
	// the token held and at least one request.
	Write func(live []*Request)
}

// Committer is the queue of requests waiting for the next group
// transaction. It is safe for concurrent use.
type Committer struct {
	sem   chan struct{}
	write func(live []*Request)

	// TestHookQueued, when set before the first Commit, gets the queue's
	// length after each Commit has joined it, before it waits.
	TestHookQueued func(queued int)

	// mu guards queue: the requests waiting for the next group.
	mu    sync.Mutex
	queue []*Request
}

// New returns a Committer that writes its groups with cfg.Write while
// holding the token in cfg.Sem.
func New(cfg Config) *Committer {
	return &Committer{sem: cfg.Sem, write: cfg.Write}
}

// Commit queues rs together (one leader takes them all, in order, into one
// transaction), waits for that transaction and leaves each request's result
// in it. When ctx is done before a leader took them, they are removed and
// each fails with ctx's error. rs must not be empty, and its requests must
// not have been committed before.
func (c *Committer) Commit(ctx context.Context, rs []*Request) {
	for _, r := range rs {
		r.ctx, r.done = ctx, make(chan struct{})
	}
	c.mu.Lock()
	c.queue = append(c.queue, rs...)
	queued := len(c.queue)
	c.mu.Unlock()
	if c.TestHookQueued != nil {
		c.TestHookQueued(queued)
	}
	// The requests are closed in queue order by the leader that took them,
	// so the last one's done means all are.
	last := rs[len(rs)-1]
	select {
	case <-last.done:
	case c.sem <- struct{}{}:
		c.lead()
		// Either these requests were in the group, or an earlier leader
		// wrote them and closed done before it gave the token back.
		<-last.done
	case <-ctx.Done():
		if c.dequeue(rs) {
			for _, r := range rs {
				r.Err = ctx.Err()
			}
			return
		}
		<-last.done // a leader has them: committed, or failed with the group
	}
}

// dequeue removes rs from the queue and reports whether they were still
// there, that is, not yet taken by a leader (a leader takes all of them or
// none).
func (c *Committer) dequeue(rs []*Request) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, q := range c.queue {
		if q == rs[0] {
			c.queue = append(c.queue[:i], c.queue[i+len(rs):]...)
			return true
		}
	}
	return false
}

// lead takes every queued request, writes those whose context is still
// live in one transaction and completes each. The caller holds the token;
// lead gives it back after completing the requests.
func (c *Committer) lead() {
	defer func() { <-c.sem }()
	c.mu.Lock()
	group := c.queue
	c.queue = nil
	c.mu.Unlock()
	var live []*Request
	for _, r := range group {
		if err := r.ctx.Err(); err != nil {
			r.Err = err
			continue
		}
		live = append(live, r)
	}
	if len(live) > 0 {
		c.write(live)
	}
	for _, r := range group {
		close(r.done)
	}
}
