package proc

import (
	"sync"
	"time"
)

// gatherWait bounds how long a search for descendants made by the
// termination of a process torn down with others ([Together]) waits for
// the searches of the others before its pass over /proc starts. Processes
// torn down at once reach each search within a few milliseconds of one
// another; one that takes longer (it ignores its closed stdin, or its
// connection waits for a request to be answered) holds the others back
// this long at most, each time.
var gatherWait = 50 * time.Millisecond

// descQuery is one search for the descendants of root, waiting for a
// pass over /proc. base, if set, is the snapshot of an earlier search
// for root made before root exited and was waited for (see
// [answerSince]); snap is the snapshot of the pass that answered, for a
// later search to start from.
type descQuery struct {
	root       Identity
	marker     string
	base, snap *procSnapshot
	out        []Identity
	done       chan struct{}
}

// teardown is a set of processes torn down at once, whose searches for
// descendants share passes over /proc: a search starts its pass once
// every member whose termination has not finished is searching too, or
// once gatherWait passed since the first of them began to wait.
type teardown struct {
	mu       sync.Mutex
	pending  int // members whose termination has not finished
	queued   []*descQuery
	gen      int // counts the gatherings, so that a late timer flushes none but its own
	timer    *time.Timer
	released bool
}

// Together makes ps terminate together until release is called: while
// [Process.Terminate] runs for several of them at once, their searches for
// descendants that left their process groups wait for one another, so
// that one pass over /proc, rather than one or two for each, answers
// them before their stdin is closed and one more once they exited. Each
// search still starts after the termination asked for it, so it finds
// what a search of its own would. A process whose termination has
// finished, or that terminates together with others already, is left
// out. Call release once the teardown is over (it is idempotent);
// terminations that run on afterwards search on their own.
//
// Elsewhere than on Linux there is nothing to search for, and it does
// nothing.
func Together(ps []*Process) (release func()) {
	if !searchesProc {
		return func() {}
	}
	t := &teardown{}
	for _, p := range ps {
		if p == nil {
			continue
		}
		p.mu.Lock()
		if !p.terminated && p.together == nil {
			p.together = t
			t.pending++
		}
		p.mu.Unlock()
	}
	return t.release
}

// search returns the descendants of p as [findDescendants] finds them,
// sharing a pass with the other members of p's teardown, if any, and the
// snapshot of that pass. With base, the snapshot of an earlier search,
// it looks at what changed since only: p must have exited and been
// waited for since that search.
func (p *Process) search(base *procSnapshot) ([]Identity, *procSnapshot) {
	q := &descQuery{root: p.id, marker: p.marker, base: base, done: make(chan struct{})}
	p.mu.Lock()
	t := p.together
	p.mu.Unlock()
	if t == nil {
		enqueue(q)
		<-q.done
	} else {
		t.find(q)
	}
	return q.out, q.snap
}

// finished records that p's termination is over: the other members of its
// teardown no longer wait for its searches.
func (p *Process) finished() {
	p.mu.Lock()
	p.terminated = true
	t := p.together
	p.mu.Unlock()
	if t != nil {
		t.leave()
	}
}

// find queues q with the other members' searches and waits for its answer.
func (t *teardown) find(q *descQuery) {
	t.mu.Lock()
	if t.released {
		t.mu.Unlock()
		enqueue(q)
	} else {
		t.queued = append(t.queued, q)
		switch {
		case len(t.queued) >= t.pending:
			t.flush()
		case len(t.queued) == 1:
			gen := t.gen
			t.timer = time.AfterFunc(gatherWait, func() {
				t.mu.Lock()
				defer t.mu.Unlock()
				if t.gen == gen {
					t.flush()
				}
			})
		}
		t.mu.Unlock()
	}
	<-q.done
}

// leave drops one member whose termination finished, and starts the
// queued searches if they wait for it alone.
func (t *teardown) leave() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending--
	if len(t.queued) > 0 && len(t.queued) >= t.pending {
		t.flush()
	}
}

// release ends the teardown: what is queued is searched for now, and
// later searches of its members go on their own.
func (t *teardown) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.released = true
	t.flush()
}

// flush hands the queued searches to one pass. Requires t.mu.
func (t *teardown) flush() {
	t.gen++
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	if len(t.queued) > 0 {
		enqueue(t.queued...)
		t.queued = nil
	}
}
