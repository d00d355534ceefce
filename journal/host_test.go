package journal_test

import (
	"testing"

	"github.com/ThreeDotsLabs/watermill"
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
