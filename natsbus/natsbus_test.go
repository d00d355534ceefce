package natsbus_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/natsbus"
	"github.com/mcplife/mcplife/natsbus/natstest"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
)

func open(t *testing.T, url string) *natsbus.Bus {
	t.Helper()
	// No periodic look at the store: what the tests see the bus brought,
	// or a reconnect's look.
	b, err := natsbus.Open(url, &natsbus.Options{CheckEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// dropStream deletes topic's stream from the shared server when the test
// ends.
func dropStream(t *testing.T, url, topic string) {
	t.Cleanup(func() {
		nc, err := nats.Connect(url)
		if err != nil {
			return
		}
		defer nc.Close()
		if js, err := nc.JetStream(); err == nil {
			js.DeleteStream(natsbus.StreamName(topic))
		}
	})
}

// host is one host of a fleet: a journal on the shared store with a bus
// connection of its own.
func host(t *testing.T, st store.Store, url, topic, id string) *journal.Journal {
	t.Helper()
	b := open(t, url)
	j, err := journal.New(st, &journal.Options{Publisher: b, Subscriber: b, Topic: topic, Host: id})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// receive reads n envelopes from sub and checks they are consecutive from
// first on.
func receive(t *testing.T, sub *journal.Subscription, first uint64, n int) []events.Envelope {
	t.Helper()
	var got []events.Envelope
	timeout := time.After(30 * time.Second)
	for len(got) < n {
		select {
		case env, ok := <-sub.C():
			if !ok {
				t.Fatalf("subscription ended after %d envelopes: %v", len(got), sub.Err())
			}
			if want := first + uint64(len(got)); env.Seq != want {
				t.Fatalf("envelope %d: seq %d, want %d", len(got), env.Seq, want)
			}
			got = append(got, env)
		case <-timeout:
			t.Fatalf("received %d of %d envelopes in 30s", len(got), n)
		}
	}
	return got
}

func toolsListed(i int) events.Event {
	return &events.ToolsListed{Server: fmt.Sprintf("s%d", i), Tools: []events.ToolDef{}, Cause: events.CauseInitial}
}

// Each event goes out on the subject of its type; the stream stores a
// message id once, however often it is published.
func TestSubjectPerTypeAndMessageIDDeduplicates(t *testing.T) {
	url := natstest.URL(t)
	topic := natstest.Topic()
	dropStream(t, url, topic)
	b := open(t, url)
	if err := b.Publish(topic); err != nil { // creates the stream
		t.Fatal(err)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	listed, err := nc.SubscribeSync(topic + ".ToolsListed")
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	msg := func(id, typ string) *message.Message {
		m := message.NewMessage(id, []byte(`{}`))
		m.Metadata.Set(journal.MetaType, typ)
		return m
	}
	if err := b.Publish(topic, msg("7", "ToolsListed"), msg("7", "ToolsListed"), msg("8", "ToolCallFinished")); err != nil {
		t.Fatal(err)
	}
	first, err := listed.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if first.Header.Get(journal.MetaType) != "ToolsListed" {
		t.Errorf("message on %s has type %q", first.Subject, first.Header.Get(journal.MetaType))
	}
	js, _ := nc.JetStream()
	info, err := js.StreamInfo(natsbus.StreamName(topic))
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 2 {
		t.Errorf("stream holds %d messages, want 2 (id 7 once, id 8)", info.State.Msgs)
	}
	if got := info.Config.Subjects; len(got) != 1 || got[0] != topic+".>" {
		t.Errorf("stream subjects %v", got)
	}
}

// Two hosts share a store and a bus: each one's subscribers get every
// event of both, in order, with the host that recorded it.
func TestHostsFollowEachOther(t *testing.T) {
	url := natstest.URL(t)
	topic := natstest.Topic()
	dropStream(t, url, topic)
	st := memory.New()
	defer st.Close()
	a, b := host(t, st, url, topic, "h-a"), host(t, st, url, topic, "h-b")
	var subs []*journal.Subscription
	for _, j := range []*journal.Journal{a, b, b} {
		sub, err := j.Subscribe(t.Context(), journal.SubscribeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		subs = append(subs, sub)
	}
	const n = 100
	var wg sync.WaitGroup
	for _, j := range []*journal.Journal{a, b} {
		wg.Go(func() {
			for i := range n {
				if _, err := j.Append(t.Context(), "s", toolsListed(i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for i, sub := range subs {
		hosts := map[string]int{}
		for _, env := range receive(t, sub, 1, 2*n) {
			hosts[env.Host]++
		}
		if hosts["h-a"] != n || hosts["h-b"] != n {
			t.Errorf("subscriber %d: events by host %v, want %d of each", i, hosts, n)
		}
	}
}

// A NATS server that restarts leaves no gap: what was appended while it
// was down reaches the subscriber, from the store, in order, once the bus
// is back (the periodic look at the store is off here), and so does what
// is appended after.
func TestBusRestartLeavesNoGap(t *testing.T) {
	srv := natstest.Start(t)
	topic := natstest.Topic()
	st := memory.New()
	defer st.Close()
	a, b := host(t, st, srv.URL(), topic, "h-a"), host(t, st, srv.URL(), topic, "h-b")
	sub, err := b.Subscribe(t.Context(), journal.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	appendN := func(from, n int) {
		for i := range n {
			if _, err := a.Append(t.Context(), "s", toolsListed(from+i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendN(0, 20)
	receive(t, sub, 1, 20)
	srv.Stop()
	appendN(20, 20) // stored; the bus is down
	srv.Restart()
	// Nothing more is appended: the reconnect (and the bus announcing the
	// publishes that failed) brings what was stored meanwhile.
	receive(t, sub, 21, 20)
	// What follows arrives too: through the bus, or, for a publish that
	// failed while JetStream restored its streams, through the store once
	// the bus announces the loss.
	appendN(40, 20)
	receive(t, sub, 41, 20)
}
