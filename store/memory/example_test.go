package memory_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
)

func Example() {
	ctx := context.Background()
	s := memory.New()
	defer s.Close()

	at := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	started := events.MustNew("session-1", &events.ConnectStarted{Server: "git", Transport: events.TransportStdio, Attempt: 1}, at)
	if _, err := s.Append(ctx, "session-1", store.NoStream, []events.Envelope{started}); err != nil {
		fmt.Println(err)
		return
	}
	// A second writer that expected an empty stream loses.
	_, err := s.Append(ctx, "session-1", store.NoStream, []events.Envelope{started})
	fmt.Println("conflict:", errors.Is(err, store.ErrVersionConflict))

	for env, err := range s.ReadAll(ctx, 0) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(env.Seq, env.Stream, env.Version, env.Type)
	}
	// Output:
	// conflict: true
	// 1 session-1 1 ConnectStarted
}
