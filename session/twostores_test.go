package session_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/natsbus"
	"github.com/mcplife/mcplife/natsbus/natstest"
	"github.com/mcplife/mcplife/session"
	"github.com/mcplife/mcplife/store/memory"
)

// busJournal returns a journal on a store of its own, on the NATS topic.
func busJournal(t *testing.T, url, topic string) *journal.Journal {
	t.Helper()
	st := memory.New()
	// No periodic look at the store: the view follows what the bus brings.
	bus, err := natsbus.Open(url, &natsbus.Options{CheckEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	j, err := journal.New(st, &journal.Options{Publisher: bus, Subscriber: bus, Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close(); bus.Close(); st.Close() })
	return j
}

// A session whose bus topic another store publishes on too (their
// sequence numbers collide) sees every change of its tool list: its live
// view takes only its own store's events off the bus.
func TestLiveViewWithAnotherStoreOnTheBus(t *testing.T) {
	url := natstest.URL(t)
	topic := natstest.Topic()
	t.Cleanup(func() {
		if nc, err := nats.Connect(url); err == nil {
			if js, err := nc.JetStream(); err == nil {
				js.DeleteStream(natsbus.StreamName(topic))
			}
			nc.Close()
		}
	})
	ja, jb := busJournal(t, url, topic), busJournal(t, url, topic)
	// The other store records first, so the bus has seen every sequence
	// number the session will take, and goes on recording while it runs.
	for range 300 {
		if _, err := jb.Append(t.Context(), "other", &events.ToolListChanged{Server: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	wg.Go(func() {
		for range 2000 {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := jb.Append(context.Background(), "other", &events.ToolListChanged{Server: "x"}); err != nil {
				t.Error(err)
				return
			}
		}
	})

	cwd, _ := project(t, map[string]events.ServerConfig{"a": fixtureConfig(t, "only=echo,change_tools")})
	s, err := session.Start(t.Context(), ja, &session.Options{Loader: loader.Options{Cwd: cwd}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	// A generous deadline: a view that missed an event would wait for
	// ever.
	deadline := time.After(time.Minute)
	waitTool := func(name string) {
		t.Helper()
		for !slices.Contains(names(s.Tools()), name) {
			select {
			case <-s.Changes():
			case <-deadline:
				t.Fatalf("the session's tools never included %s: %v", name, names(s.Tools()))
			}
		}
	}
	waitTool("mcp_a_echo")
	for _, added := range []string{"one", "two", "three"} {
		callJSON(t, s, "mcp_a_change_tools", `{"add":"`+added+`"}`, nil)
		waitTool("mcp_a_" + added)
	}
}
