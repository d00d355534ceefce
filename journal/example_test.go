package journal_test

import (
	"context"
	"fmt"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/store/memory"
)

// Append a session's events and receive them from a subscription, then
// read them back from the store.
func Example() {
	ctx := context.Background()
	st := memory.New() // or sqlite.Open(path, nil) to keep the history
	defer st.Close()
	j, err := journal.New(st, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer j.Close()

	id := journal.NewSessionID()
	sub, err := j.Subscribe(ctx, journal.SubscribeOptions{Session: id})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sub.Close()
	if _, err := j.Append(ctx, id,
		&events.SessionStarted{Cwd: "/work/project"},
		&events.ServerDiscovered{Server: "git", Transport: events.TransportStdio},
	); err != nil {
		fmt.Println(err)
		return
	}
	for range 2 {
		env := <-sub.C() // persisted first, then published
		fmt.Println("live:", env.Seq, env.Type)
	}
	for env, err := range st.ReadStream(ctx, id, 1) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("stored:", env.Version, env.Type)
	}
	// Output:
	// live: 1 SessionStarted
	// live: 2 ServerDiscovered
	// stored: 1 SessionStarted
	// stored: 2 ServerDiscovered
}
