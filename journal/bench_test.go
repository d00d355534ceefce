package journal_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/store/memory"
)

// BenchmarkAppendPublish: one append on the memory store with one live
// subscriber, the per-event cost the journal adds to every tool call
// (twice). BenchmarkStoreAppend is the store alone, its baseline.
func BenchmarkAppendPublish(b *testing.B) {
	st := memory.New()
	j, err := journal.New(st, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	sub, err := j.Subscribe(ctx, journal.SubscribeOptions{Session: "s"})
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for range sub.C() {
		}
	}()
	ev := &events.ToolCallFinished{Server: "git", Tool: "status", IsError: false}
	for b.Loop() {
		if _, err := j.AppendCorrelated(ctx, "s", "call-1", ev); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	sub.Close()
}

func BenchmarkStoreAppend(b *testing.B) {
	st := memory.New()
	ctx := context.Background()
	ev := &events.ToolCallFinished{Server: "git", Tool: "status", IsError: false}
	for b.Loop() {
		env, err := events.New("s", ev, timeNow())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := st.Append(ctx, "s", -1, []events.Envelope{env}); err != nil {
			b.Fatal(err)
		}
	}
}

var timeNow = func() (t time.Time) { return time.Now() }
