package journal_test

import (
	"sync"
	"testing"
	"testing/synctest"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/store/memory"
)

// stuckPublisher hands messages to a bus, except while it is stuck: then
// every Publish waits until it is freed, as one to a NATS server that
// takes messages and never answers.
type stuckPublisher struct {
	message.Publisher

	mu   sync.Mutex
	free chan struct{} // closed while publishing passes
}

func newStuckPublisher(p message.Publisher) *stuckPublisher {
	free := make(chan struct{})
	close(free)
	return &stuckPublisher{Publisher: p, free: free}
}

func (p *stuckPublisher) stick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = make(chan struct{})
}

func (p *stuckPublisher) unstick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.free)
}

func (p *stuckPublisher) Publish(topic string, msgs ...*message.Message) error {
	p.mu.Lock()
	free := p.free
	p.mu.Unlock()
	<-free
	return p.Publisher.Publish(topic, msgs...)
}

// A bus that stops answering holds up neither recording nor Close: appends
// go on past the batches the journal queues for the bus, a subscriber gets
// every event once the bus answers again (what was not published, it
// reads from the store), and Close returns while a publish hangs.
func TestStuckBusNeverBlocksRecording(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		st := memory.New()
		defer st.Close()
		bus := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
		defer bus.Close()
		pub := newStuckPublisher(bus)
		j, err := journal.New(st, &journal.Options{Publisher: pub, Subscriber: bus})
		if err != nil {
			t.Fatal(err)
		}
		sub, err := j.Subscribe(ctx, journal.SubscribeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		synctest.Wait() // the subscription waits for the bus

		pub.stick()
		const n = 3000 // more batches than wait for the bus
		for i := range n {
			// A journal whose writer waits for the bus never returns here:
			// synctest then reports every goroutine blocked.
			if _, err := j.Append(ctx, "s", ev(i)); err != nil {
				t.Fatal(err)
			}
		}
		pub.unstick()
		receive(t, sub, n)

		pub.stick()
		if _, err := j.Append(ctx, "s", ev(n)); err != nil {
			t.Fatal(err)
		}
		// Close waits for the publish in flight no longer than its drain
		// timeout (synctest would report a Close that waits for ever).
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		pub.unstick() // the publish in flight ends, and its loop
	})
}
