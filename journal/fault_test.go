package journal_test

import (
	"context"
	"errors"
	"iter"
	"sync"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
)

// errInjected is the fault faultyStore injects.
var errInjected = errors.New("injected read fault")

// faultyStore is a store whose reads (ReadAll and LastSeq) fail on demand;
// everything else is the wrapped store's, snapshots included.
type faultyStore struct {
	snapshotStore

	mu      sync.Mutex
	readErr error
}

// snapshotStore is what faultyStore wraps: the memory store, for one.
type snapshotStore interface {
	store.Store
	store.Snapshotter
	store.Identifier
}

// failReads makes later reads fail with err; nil makes them work again.
func (s *faultyStore) failReads(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readErr = err
}

func (s *faultyStore) fault() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readErr
}

func (s *faultyStore) ReadAll(ctx context.Context, fromSeq uint64) iter.Seq2[events.Envelope, error] {
	if err := s.fault(); err != nil {
		return func(yield func(events.Envelope, error) bool) { yield(events.Envelope{}, err) }
	}
	return s.snapshotStore.ReadAll(ctx, fromSeq)
}

func (s *faultyStore) LastSeq(ctx context.Context) (uint64, error) {
	if err := s.fault(); err != nil {
		return 0, err
	}
	return s.snapshotStore.LastSeq(ctx)
}

// selectivePublisher publishes only the messages keep accepts (counted from
// 1 in publishing order), as a bus that loses messages might.
type selectivePublisher struct {
	message.Publisher
	keep func(n int) bool

	mu sync.Mutex
	n  int
}

func (p *selectivePublisher) Publish(topic string, msgs ...*message.Message) error {
	p.mu.Lock()
	var kept []*message.Message
	for _, m := range msgs {
		p.n++
		if p.keep(p.n) {
			kept = append(kept, m)
		}
	}
	p.mu.Unlock()
	return p.Publisher.Publish(topic, kept...)
}
