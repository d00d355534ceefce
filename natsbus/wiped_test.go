package natsbus_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/natsbus"
	"github.com/mcplife/mcplife/natsbus/natstest"
	"github.com/mcplife/mcplife/store/memory"
)

// A NATS server that comes back without its JetStream data (a wiped
// volume, a container without persistence) gets the stream back: the host
// records on, more events than the journal queues for the bus, its
// follower gets every event once and in order, and Close returns.
func TestBusBackWithoutItsData(t *testing.T) {
	srv := natstest.Start(t)
	topic := natstest.Topic()
	st := memory.New()
	defer st.Close()
	hostBus := open(t, srv.URL())
	a, err := journal.New(st, &journal.Options{Publisher: hostBus, Subscriber: hostBus, Topic: topic, Host: "h-a"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := host(t, st, srv.URL(), topic, "h-b")
	sub, err := b.Subscribe(t.Context(), journal.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	appendN := func(from, n int) {
		t.Helper()
		// A generous deadline: a journal whose publishing blocks its
		// writer stops recording for good.
		done := make(chan error, 1)
		go func() {
			for i := range n {
				if _, err := a.Append(t.Context(), "s", toolsListed(from+i)); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("appending %d events from %d: still not done after 2 minutes (recording stalled)", n, from)
		}
	}
	// The host's bus has used the stream before the server goes away
	// (the journal publishes in the background: this says when).
	if err := hostBus.Publish(topic); err != nil {
		t.Fatal(err)
	}
	appendN(0, 20)
	receive(t, sub, 1, 20)

	reconnected := hostBus.Conn().StatusChanged(nats.CONNECTED)
	srv.Stop()
	appendN(20, 20) // stored; the bus is down
	srv.RestartEmpty()
	// The host records on once its bus is connected again (before, each
	// publish fails at once).
	select {
	case <-reconnected:
	case <-time.After(time.Minute):
		t.Fatal("the host's bus did not reconnect in a minute")
	}
	const n = 3000 // more batches than the journal's publish queue holds
	appendN(40, n)
	receive(t, sub, 21, 20+n)

	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := nc.JetStream()
	if _, err := js.StreamInfo(natsbus.StreamName(topic)); err != nil {
		t.Fatalf("stream of %s after the restart: %v", topic, err)
	}
	closed := make(chan struct{})
	go func() {
		a.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("Close did not return in a minute")
	}
}
