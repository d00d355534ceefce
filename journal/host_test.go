package journal_test

import (
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
)

// Every envelope carries the journal's host id: in the store, on the bus,
// and in what subscribers receive. An envelope that names its own host
// keeps it.
func TestHostIsStamped(t *testing.T) {
	ctx := t.Context()
	bus := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
	defer bus.Close()
	j, st := newJournal(t, &journal.Options{Host: "h-test", Publisher: bus, Subscriber: bus})
	sub, err := j.Subscribe(ctx, journal.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := j.Append(ctx, "s", ev(1)); err != nil {
		t.Fatal(err)
	}
	imported, err := events.New("s", ev(2), j.Now())
	if err != nil {
		t.Fatal(err)
	}
	imported.Host = "h-elsewhere"
	if _, err := j.AppendEnvelopes(ctx, "s", []events.Envelope{imported}); err != nil {
		t.Fatal(err)
	}
	want := []string{"h-test", "h-elsewhere"}
	for i, env := range receive(t, sub, 2) {
		if env.Host != want[i] {
			t.Errorf("subscriber: seq %d host %q, want %q", env.Seq, env.Host, want[i])
		}
	}
	i := 0
	for env, err := range st.ReadAll(ctx, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if env.Host != want[i] {
			t.Errorf("store: seq %d host %q, want %q", env.Seq, env.Host, want[i])
		}
		i++
	}
}

func TestDefaultHost(t *testing.T) {
	j, _ := newJournal(t, nil)
	stored, err := j.Append(t.Context(), "s", ev(1))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := stored[0].Host, events.DefaultHost(); got != want || len(want) != len("h-")+12 {
		t.Errorf("host %q, want the default %q (h- and 12 hex digits)", got, want)
	}
}

// A bus that lost the last messages tells a subscription to look in the
// store (MetaCheckStore): what it missed arrives without a later event.
func TestCheckStoreMessageFillsTrailingLoss(t *testing.T) {
	ctx := t.Context()
	bus := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
	defer bus.Close()
	j, _ := newJournal(t, &journal.Options{Publisher: &selectivePublisher{Publisher: bus, keep: func(n int) bool { return n <= 3 }}, Subscriber: bus})
	sub, err := j.Subscribe(ctx, journal.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for i := range 6 {
		if _, err := j.Append(ctx, "s", ev(i)); err != nil {
			t.Fatal(err)
		}
	}
	receive(t, sub, 3) // the bus brought these; 4 to 6 were lost
	check := message.NewMessage(watermill.NewUUID(), nil)
	check.Metadata.Set(journal.MetaCheckStore, "1")
	if err := bus.Publish(journal.DefaultTopic, check); err != nil {
		t.Fatal(err)
	}
	for want := uint64(4); want <= 6; want++ {
		if env := <-sub.C(); env.Seq != want {
			t.Fatalf("seq %d, want %d", env.Seq, want)
		}
	}
}
