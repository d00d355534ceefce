package main

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/mcplife/mcplife/natsbus/natstest"
	"github.com/mcplife/mcplife/store/postgres/pgtest"
)

// Stores that share a NATS server publish on topics of their own, whatever
// their schema: two fleets' databases with the default schema, and two
// users of the default SQLite file with MCPLIFE_BUS exported, make four
// streams, not one.
func TestBusTopicPerStore(t *testing.T) {
	srv := natstest.Start(t) // a server of the test's own: it counts streams
	t.Setenv("HOME", t.TempDir())
	cfg := writeConfig(t, map[string][]string{"good": {"only=echo"}})
	stores := []string{
		filepath.Join(t.TempDir(), "events.db"), filepath.Join(t.TempDir(), "events.db"),
		pgtest.Database(t), pgtest.Database(t),
	}
	for _, db := range stores {
		code, out, errOut := runCmd(t, "--db", db, "--bus", srv.URL(), "run", "--once", "--gate", "1m", "--cwd", t.TempDir(), "--config", cfg)
		if code != 0 {
			t.Fatalf("run on %s: exit %d: %s %s", redactURL(db), code, out, errOut)
		}
	}
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	var streams []string
	for name := range js.StreamNames() {
		streams = append(streams, name)
	}
	slices.Sort(streams)
	if len(streams) != len(stores) {
		t.Fatalf("%d stores made the streams %v, want one stream each", len(stores), streams)
	}
}
