package postgres_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/postgres"
	"github.com/mcplife/mcplife/store/postgres/pgtest"
)

// The example needs a PostgreSQL server, so go test only compiles it (it
// has no output comment); TestExample runs it against the test server.
func Example() {
	ctx := context.Background()
	// The fleet's database, e.g. postgres://mcplife@db.internal/fleet, and
	// the schema in it ("" means postgres.DefaultSchema).
	connString := os.Getenv("MCPLIFE_DB")
	schema := os.Getenv("MCPLIFE_DB_SCHEMA")

	db, err := postgres.Open(ctx, connString, &postgres.Options{Schema: schema})
	if err != nil {
		fmt.Println(err)
		return
	}
	at := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	env := events.MustNew("session-1", &events.ConnectStarted{Server: "git", Transport: events.TransportStdio, Attempt: 1}, at)
	env.Host = "host-a"
	if _, err := db.Append(ctx, "session-1", store.NoStream, []events.Envelope{env, env}); err != nil {
		fmt.Println(err)
		return
	}
	db.Close()

	// An inspecting tool, on any host, opens the store read-only.
	ro, err := postgres.Open(ctx, connString, &postgres.Options{Schema: schema, ReadOnly: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ro.Close()
	for info, err := range ro.Streams(ctx) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(info.Stream, info.Version, info.FirstSeq, info.LastSeq)
	}
	for e, err := range ro.ReadAll(ctx, 0) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(e.Seq, e.Type, e.Host)
	}
	// On a new schema it prints:
	//
	//	session-1 2 1 2
	//	1 ConnectStarted host-a
	//	2 ConnectStarted host-a
}

// TestExample runs Example against a new schema of the test server and
// checks what it prints.
func TestExample(t *testing.T) {
	cs, schema := pgtest.Schema(t)
	t.Setenv("MCPLIFE_DB", cs)
	t.Setenv("MCPLIFE_DB_SCHEMA", schema)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	out := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		out <- string(b)
	}()
	func() {
		defer func() { os.Stdout = stdout }()
		Example()
	}()
	w.Close()
	got := <-out
	want := "session-1 2 1 2\n1 ConnectStarted host-a\n2 ConnectStarted host-a\n"
	if got != want {
		t.Fatalf("Example printed:\n%s\nwant:\n%s", got, want)
	}
}
