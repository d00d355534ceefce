package journal_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/google/go-cmp/cmp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
)

func newJournal(t *testing.T, opts *journal.Options) (*journal.Journal, store.Store) {
	t.Helper()
	st := memory.New()
	j, err := journal.New(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close(); st.Close() })
	return j, st
}

func ev(i int) events.Event { return &events.ToolListChanged{Server: fmt.Sprintf("s%d", i)} }

// receive reads n envelopes from sub and checks they are consecutive.
func receive(t *testing.T, sub *journal.Subscription, n int) []events.Envelope {
	t.Helper()
	var got []events.Envelope
	for len(got) < n {
		env, ok := <-sub.C()
		if !ok {
			t.Fatalf("subscription ended after %d envelopes: %v", len(got), sub.Err())
		}
		if len(got) > 0 && env.Seq <= got[len(got)-1].Seq {
			t.Fatalf("out of order: %d after %d", env.Seq, got[len(got)-1].Seq)
		}
		got = append(got, env)
	}
	return got
}

func TestPersistThenPublish(t *testing.T) {
	ctx := t.Context()
	j, st := newJournal(t, nil)
	sub, err := j.Subscribe(ctx, journal.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	stored, err := j.Append(ctx, "s1", ev(1), ev(2))
	if err != nil {
		t.Fatal(err)
	}
	if stored[0].Seq != 1 || stored[1].Seq != 2 || stored[1].Version != 2 || stored[0].SessionID != "s1" {
		t.Fatalf("stored = %+v", stored)
	}
	got := receive(t, sub, 2)
	for _, env := range got {
		// Everything received is already in the store.
		found := false
		for e, err := range st.ReadStream(ctx, "s1", env.Version) {
			if err != nil {
				t.Fatal(err)
			}
			found = e.Seq == env.Seq
			break
		}
		if !found {
			t.Errorf("seq %d published but not stored", env.Seq)
		}
	}
}

func TestSubscriptionFromHistoryAndFilters(t *testing.T) {
	ctx := t.Context()
	j, _ := newJournal(t, nil)
	for i := range 10 {
		session := "a"
		if i%2 == 1 {
			session = "b"
		}
		if _, err := j.Append(ctx, session, ev(i)); err != nil {
			t.Fatal(err)
		}
	}
	sub, err := j.Subscribe(ctx, journal.SubscribeOptions{FromSeq: 1, Session: "b"})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := j.Append(ctx, "b", &events.SessionClosed{}); err != nil {
		t.Fatal(err)
	}
	got := receive(t, sub, 6)
	for _, env := range got {
		if env.SessionID != "b" {
			t.Errorf("session filter let %s through", env.SessionID)
		}
	}
	if got[5].Type != events.TypeSessionClosed {
		t.Errorf("last = %s", got[5].Type)
	}

	typed, err := j.Subscribe(ctx, journal.SubscribeOptions{FromSeq: 1, Types: []string{events.TypeSessionClosed}})
	if err != nil {
		t.Fatal(err)
	}
	defer typed.Close()
	if env := receive(t, typed, 1)[0]; env.Seq != 11 {
		t.Errorf("type filter: got seq %d", env.Seq)
	}
}

// A consumer that does not read never blocks appends or other subscribers,
// and later receives everything in order from the store.
func TestSlowSubscriberDoesNotBlock(t *testing.T) {
	ctx := t.Context()
	j, _ := newJournal(t, nil)
	slow, err := j.Subscribe(ctx, journal.SubscribeOptions{Buffer: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fast, err := j.Subscribe(ctx, journal.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()
	const n = 2000
	done := make(chan struct{})
	go func() {
		defer close(done)
		receive(t, fast, n)
	}()
	for i := range n {
		if _, err := j.Append(ctx, "s", ev(i)); err != nil {
			t.Fatal(err)
		}
	}
	<-done // the fast subscriber got everything while the slow one read nothing
	got := receive(t, slow, n)
	for i, env := range got {
		if env.Seq != uint64(i+1) {
			t.Fatalf("slow subscriber: position %d has seq %d", i, env.Seq)
		}
	}
}

func TestGapsAreFilledFromStore(t *testing.T) {
	ctx := t.Context()
	bus := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
	defer bus.Close()
	j, _ := newJournal(t, &journal.Options{Publisher: &selectivePublisher{Publisher: bus, keep: func(n int) bool { return n%3 != 0 }} /* drops every third message */, Subscriber: bus})
	sub, err := j.Subscribe(ctx, journal.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	const n = 300
	for i := range n {
		if _, err := j.Append(ctx, "s", ev(i)); err != nil {
			t.Fatal(err)
		}
	}
	got := receive(t, sub, n)
	for i, env := range got {
		if env.Seq != uint64(i+1) {
			t.Fatalf("position %d has seq %d", i, env.Seq)
		}
	}
}

func TestConcurrentAppendsDeliverInOrder(t *testing.T) {
	ctx := t.Context()
	j, _ := newJournal(t, nil)
	sub, err := j.Subscribe(ctx, journal.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 50 {
				if _, err := j.Append(ctx, fmt.Sprintf("w%d", w), ev(i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	got := receive(t, sub, 400)
	wg.Wait()
	for i, env := range got {
		if env.Seq != uint64(i+1) {
			t.Fatalf("position %d has seq %d", i, env.Seq)
		}
	}
}

// counter is a checkpointed projection counting events.
type counter struct {
	mu   sync.Mutex
	n    int
	last uint64
}

func (c *counter) Apply(env events.Envelope) { c.mu.Lock(); c.n++; c.last = env.Seq; c.mu.Unlock() }
func (c *counter) LastSeq() uint64           { c.mu.Lock(); defer c.mu.Unlock(); return c.last }
func (c *counter) Name() string              { return "counter/v1" }
func (c *counter) MarshalSnapshot() ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Appendf(nil, "%d %d", c.n, c.last), nil
}
func (c *counter) UnmarshalSnapshot(b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := fmt.Sscanf(string(b), "%d %d", &c.n, &c.last)
	return err
}

func TestAttachRestoresCheckpointAndCatchesUp(t *testing.T) {
	ctx := t.Context()
	st := memory.New()
	defer st.Close()
	j1, err := journal.New(st, &journal.Options{CheckpointEvery: 10})
	if err != nil {
		t.Fatal(err)
	}
	c1 := &counter{}
	if err := j1.Attach(ctx, c1); err != nil {
		t.Fatal(err)
	}
	for i := range 25 {
		if _, err := j1.Append(ctx, "s", ev(i)); err != nil {
			t.Fatal(err)
		}
	}
	if c1.n != 25 {
		t.Fatalf("live projection saw %d events", c1.n)
	}
	j1.Checkpoint(ctx)
	for i := range 3 {
		if _, err := j1.Append(ctx, "s", ev(i)); err != nil {
			t.Fatal(err)
		}
	}
	// A new journal restores the checkpoint (25) and catches up (3 more),
	// applying only the events after the checkpoint.
	j2, err := journal.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	c2 := &counter{}
	if err := j2.Attach(ctx, c2); err != nil {
		t.Fatal(err)
	}
	if c2.n != 28 || c2.last != 28 {
		t.Fatalf("restored counter = %d up to %d, want 28 up to 28", c2.n, c2.last)
	}
}

func TestClosed(t *testing.T) {
	j, _ := newJournal(t, nil)
	sub, err := j.Subscribe(t.Context(), journal.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if _, err := j.Append(t.Context(), "s", ev(1)); err != journal.ErrClosed {
		t.Fatalf("Append after Close = %v", err)
	}
	select {
	case _, ok := <-sub.C():
		if ok {
			t.Fatal("unexpected envelope")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("subscription did not end when the bus closed")
	}
	if err := sub.Err(); !errors.Is(err, journal.ErrClosed) {
		t.Errorf("Err() after the journal closed = %v, want it to wrap ErrClosed", err)
	}
}

// Every envelope field survives the trip over the bus, whatever the
// session and correlation ids hold.
func TestBusCarriesWholeEnvelope(t *testing.T) {
	ctx := t.Context()
	j, _ := newJournal(t, &journal.Options{Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC) }})
	sub, err := j.Subscribe(ctx, journal.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	stored, err := j.AppendCorrelated(ctx, "a session 12", "call 7 x", ev(1), ev(2))
	if err != nil {
		t.Fatal(err)
	}
	got := receive(t, sub, 2)
	for i := range stored {
		if diff := cmp.Diff(stored[i], got[i]); diff != "" {
			t.Errorf("envelope %d (-stored +received):\n%s", i, diff)
		}
	}
}
