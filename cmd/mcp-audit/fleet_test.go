package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/natsbus"
	"github.com/mcplife/mcplife/natsbus/natstest"
	"github.com/mcplife/mcplife/store/postgres"
	"github.com/mcplife/mcplife/store/postgres/pgtest"
)

// A fleet on PostgreSQL and NATS: run records with its host id, sessions
// lists every host's sessions with their host, and replay --follow shows
// another host's session live as it is recorded.
func TestFleetStoreAndBus(t *testing.T) {
	conn, schema := pgtest.Schema(t)
	bus := natstest.URL(t)
	db := conn + "&schema=" + schema
	if !strings.Contains(conn, "?") {
		db = conn + "?schema=" + schema
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("MCPLIFE_HOST", "h-one")
	cfg := writeConfig(t, map[string][]string{"good": {"only=echo"}})
	code, out, errOut := runCmd(t, "--db", db, "--bus", bus, "--json", "run", "--once", "--gate", "1m", "--cwd", t.TempDir(), "--config", cfg)
	if code != 0 {
		t.Fatalf("run: exit %d: %s %s", code, out, errOut)
	}

	// Another host records a session on the same store and bus.
	st, err := postgres.Open(t.Context(), conn, &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	topic := busTopic(st)
	t.Cleanup(func() { dropBusStream(bus, topic) })
	nb, err := natsbus.Open(bus, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	other, err := journal.New(st, &journal.Options{Host: "h-two", Publisher: nb, Subscriber: nb, Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Append(t.Context(), "two", &events.SessionStarted{Cwd: "/elsewhere"}); err != nil {
		t.Fatal(err)
	}

	code, out, errOut = runCmd(t, "--db", db, "--json", "sessions")
	if code != 0 {
		t.Fatalf("sessions: exit %d: %s %s", code, out, errOut)
	}
	var list []struct{ ID, Host, Cwd string }
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(list) != 2 || list[0].Host != "h-one" || list[1].ID != "two" || list[1].Host != "h-two" {
		t.Fatalf("sessions %+v, want run's session on h-one and two on h-two", list)
	}

	// replay --follow of the other host's session prints what it records
	// next, delivered by the bus.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"--db", db, "--bus", bus, "--json", "replay", "two", "--follow"}, pw, io.Discard)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	next := func() map[string]any {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("replay ended: %v", lines.Err())
		}
		var l map[string]any
		if err := json.Unmarshal(lines.Bytes(), &l); err != nil {
			t.Fatalf("%v: %s", err, lines.Text())
		}
		return l
	}
	if l := next(); l["type"] != events.TypeSessionStarted {
		t.Fatalf("first line %v", l)
	}
	// The first event the other host appends reaches the follower from
	// the store or the bus, whichever it reads when; the second, recorded
	// once the first was printed, can only come through the bus: nothing
	// else would wake the follower.
	for _, server := range []string{"first", "second"} {
		if _, err := other.Append(t.Context(), "two", &events.ServerDiscovered{Server: server, Transport: events.TransportStdio}); err != nil {
			t.Fatal(err)
		}
		l := next()
		env, _ := l["envelope"].(map[string]any)
		if l["type"] != events.TypeServerDiscovered || l["server"] != server || env["host"] != "h-two" {
			t.Fatalf("followed line %v, want %s's ServerDiscovered from h-two", l, server)
		}
	}
	cancel()
	go io.Copy(io.Discard, pr)
	if code := <-done; code != 0 {
		t.Errorf("replay --follow exit %d", code)
	}
}

func dropBusStream(url, topic string) {
	b, err := natsbus.Open(url, nil)
	if err != nil {
		return
	}
	defer b.Close()
	if js, err := b.Conn().JetStream(); err == nil {
		js.DeleteStream(natsbus.StreamName(topic))
	}
}
