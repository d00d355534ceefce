package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/sqlite"
)

func Example() {
	dir, err := os.MkdirTemp("", "mcplife-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "events.db")
	ctx := context.Background()

	db, err := sqlite.Open(path, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	at := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	env := events.MustNew("session-1", &events.ConnectStarted{Server: "git", Transport: events.TransportStdio, Attempt: 1}, at)
	if _, err := db.Append(ctx, "session-1", store.NoStream, []events.Envelope{env, env}); err != nil {
		fmt.Println(err)
		return
	}
	db.Close()

	// An inspecting tool opens the file read-only.
	ro, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
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
	// Output:
	// session-1 2 1 2
}
