package groupcommit

import (
	"context"
	"fmt"
	"sync"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
)

// Request is one append waiting for, or written by, a group transaction.
type Request struct {
	Stream   string
	Expected int64
	Envs     []events.Envelope

	// Out and Err are the request's result: the stored envelopes, or why
	// it failed. The write function sets them; the committer sets Err for
	// a request it leaves out. Both are set once the request is done.
	Out []events.Envelope
	Err error

	ctx  context.Context // the caller's, set by commit
	done chan struct{}   // closed by the leader once Out and Err are set
}

// Config is what a store gives [New].
type Config struct {
	// Store names the store in errors: "sqlite" makes
	// `sqlite: append "s": …`.
	Store string
	// Check refuses an append the store cannot take, before anything is
	// queued, with an error that already names the store and the stream.
	Check func(stream string, expected int64, envs []events.Envelope) error
	// Acquire holds the store open for a write until Release; its error
	// (the store closed, or read-only) fails the append.
	Acquire func() error
	Release func()
	// Sem is the store's writer token: a channel of capacity one that
	// holds a token while a write is in progress. A leader sends the token
	// before it writes and receives it back afterwards.
	Sem chan struct{}
	// Write writes live, in order, in one transaction (PostgreSQL's
	// writes them again one by one when the server refuses one of them)
	// and sets each request's Out and Err; a request may fail alone (a
	// version conflict) while the others commit. It is called by one
	// leader at a time, with the token held and at least one request.
	Write func(live []*Request)
}

// Committer is a store's append path: it checks appends and holds the
// queue of requests waiting for the next group transaction. It is safe
// for concurrent use.
type Committer struct {
	cfg Config

	// TestHookQueued, when set before the first append, gets the queue's
	// length after each append (or batch) has joined it, before it waits.
	TestHookQueued func(queued int)

	// mu guards queue: the requests waiting for the next group.
	mu    sync.Mutex
	queue []*Request
}

// New returns a Committer that checks appends with cfg.Check and writes
// their groups with cfg.Write while holding the token in cfg.Sem.
func New(cfg Config) *Committer {
	return &Committer{cfg: cfg}
}

// Append checks one append, holds the store open and waits for the group
// transaction that writes it; it returns the stored envelopes. It returns
// Check's error as it is; the others name the store and the stream: ctx's
// error when ctx is done before the append is queued, Acquire's, and the
// append's own (its context's error when it left the queue, a version
// conflict, or its transaction's failure).
func (c *Committer) Append(ctx context.Context, stream string, expected int64, envs []events.Envelope) ([]events.Envelope, error) {
	if err := c.cfg.Check(stream, expected, envs); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, c.appendError(stream, err)
	}
	if err := c.cfg.Acquire(); err != nil {
		return nil, c.appendError(stream, err)
	}
	defer c.cfg.Release()
	r := &Request{Stream: stream, Expected: expected, Envs: envs}
	c.commit(ctx, []*Request{r})
	if r.Err != nil {
		return nil, c.appendError(stream, r.Err)
	}
	return r.Out, nil
}

// AppendBatch is [Committer.Append] for several appends, queued together
// so that they share one transaction (with appends queued at the same
// time). Each result is that append's, as Append would return it; one
// that Check refuses is not queued, and the others go on.
func (c *Committer) AppendBatch(ctx context.Context, reqs []store.AppendRequest) []store.AppendResult {
	res := make([]store.AppendResult, len(reqs))
	if len(reqs) == 0 {
		return res
	}
	failAll := func(err error) []store.AppendResult {
		for i, q := range reqs {
			res[i].Err = c.appendError(q.Stream, err)
		}
		return res
	}
	if err := ctx.Err(); err != nil {
		return failAll(err)
	}
	if err := c.cfg.Acquire(); err != nil {
		return failAll(err)
	}
	defer c.cfg.Release()
	rs := make([]*Request, 0, len(reqs))
	idx := make([]int, 0, len(reqs))
	for i, q := range reqs {
		if err := c.cfg.Check(q.Stream, q.Expected, q.Envs); err != nil {
			res[i].Err = err
			continue
		}
		rs = append(rs, &Request{Stream: q.Stream, Expected: q.Expected, Envs: q.Envs})
		idx = append(idx, i)
	}
	if len(rs) == 0 {
		return res
	}
	c.commit(ctx, rs)
	for k, r := range rs {
		res[idx[k]].Envs = r.Out
		if r.Err != nil {
			res[idx[k]] = store.AppendResult{Err: c.appendError(r.Stream, r.Err)}
		}
	}
	return res
}

func (c *Committer) appendError(stream string, err error) error {
	return fmt.Errorf("%s: append %q: %w", c.cfg.Store, stream, err)
}

// commit queues rs together (one leader takes them all, in order, into one
// transaction), waits for that transaction and leaves each request's result
// in it. When ctx is done before a leader took them, they are removed and
// each fails with ctx's error. rs must not be empty, and its requests must
// not have been committed before.
func (c *Committer) commit(ctx context.Context, rs []*Request) {
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
	case c.cfg.Sem <- struct{}{}:
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
	defer func() { <-c.cfg.Sem }()
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
		c.cfg.Write(live)
	}
	for _, r := range group {
		close(r.done)
	}
}
