package journal

import (
	"sync"

	"github.com/mcplife/mcplife/events"
)

// feed is the inbox of one subscription when the journal has no bus of its
// own to use (Options.Publisher unset): the writer hands it each stored
// batch directly, sharing the envelopes, instead of encoding a message per
// envelope and per subscriber. It never blocks the writer: past its limit
// it keeps only the highest sequence it was offered, and the subscription
// reads those envelopes from the store, as it does for a bus message that
// is missing.
type feed struct {
	mu      sync.Mutex
	batches [][]events.Envelope
	held    int    // envelopes in batches
	high    uint64 // highest sequence offered and not held
	closed  bool   // the journal closed: nothing more will come
	limit   int
	wake    chan struct{} // one pending wake-up
}

func newFeed(limit int) *feed {
	return &feed{limit: limit, wake: make(chan struct{}, 1)}
}

// push offers a stored batch (sequence order). The feed keeps a reference
// to it: the writer never modifies a batch once stored.
func (f *feed) push(batch []events.Envelope) {
	f.mu.Lock()
	if f.held+len(batch) <= f.limit {
		f.batches = append(f.batches, batch)
		f.held += len(batch)
	} else {
		f.high = max(f.high, batch[len(batch)-1].Seq)
	}
	f.mu.Unlock()
	f.notify()
}

// close tells the subscription that nothing more will come.
func (f *feed) close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.notify()
}

func (f *feed) notify() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// take empties the feed.
func (f *feed) take() (batches [][]events.Envelope, high uint64, closed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	batches, high, closed = f.batches, f.high, f.closed
	f.batches, f.held, f.high = nil, 0, 0
	return batches, high, closed
}
