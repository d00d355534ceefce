package sqlite

import (
	"context"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/projector"
)

// BenchmarkJournalAppend measures the whole append path of SPEC §11 —
// persist in SQLite, apply the attached tool-cache projection, publish on
// the default gochannel bus to a live subscriber — one event per append.
// Compare with BenchmarkBareInsert in the same run (target: at least 0.7×
// its rate).
func BenchmarkJournalAppend(b *testing.B) {
	db := benchOpen(b)
	j, err := journal.New(db, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	if err := j.Attach(ctx, projector.NewToolCache()); err != nil {
		b.Fatal(err)
	}
	sub, err := j.Subscribe(ctx, journal.SubscribeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	drained := make(chan int)
	go func() {
		n := 0
		for range sub.C() {
			n++
		}
		drained <- n
	}()
	ev := &events.ConnectStarted{Server: "git", Transport: "stdio", Attempt: 1}
	for b.Loop() {
		if _, err := j.Append(ctx, "bench", ev); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, 1)
	b.StopTimer()
	sub.Close()
	<-drained
}

// BenchmarkJournalAppendBatch1000 appends 1,000 events per call through
// the journal (target: at least 200k events/s).
func BenchmarkJournalAppendBatch1000(b *testing.B) {
	db := benchOpen(b)
	j, err := journal.New(db, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	if err := j.Attach(ctx, projector.NewToolCache()); err != nil {
		b.Fatal(err)
	}
	batch := make([]events.Event, 1000)
	for i := range batch {
		batch[i] = &events.ToolCallFinished{Server: "git", Tool: "status"}
	}
	for b.Loop() {
		if _, err := j.Append(ctx, "bench", batch...); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, len(batch))
}
