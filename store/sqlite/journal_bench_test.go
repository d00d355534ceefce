package sqlite

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/store"
)

// benchJournal returns a journal on db with the tool cache attached and,
// when subscribed, a live subscriber draining every event, as in a running
// session; everything is closed when the benchmark ends.
func benchJournal(b *testing.B, db *DB, subscribed bool) *journal.Journal {
	b.Helper()
	j, err := journal.New(db, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := j.Attach(ctx, projector.NewToolCache()); err != nil {
		b.Fatal(err)
	}
	if subscribed {
		sub, err := j.Subscribe(ctx, journal.SubscribeOptions{})
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for range sub.C() {
			}
		}()
		b.Cleanup(sub.Close)
	}
	b.Cleanup(func() { j.Close() })
	return j
}

// BenchmarkJournalVsBareInsert alternates one journal append (persist,
// project, publish to a live subscriber) with one bare single-row insert
// into the same file, so both see the same disk and load; it reports the
// rate ratio (journal/bare; target ≥ 0.7).
func BenchmarkJournalVsBareInsert(b *testing.B) {
	db := benchOpen(b)
	insert := bareInsert(b, db)
	j := benchJournal(b, db, true)
	ctx := context.Background()
	ev := &events.ConnectStarted{Server: "git", Transport: "stdio", Attempt: 1}
	var journalTime, bareTime time.Duration
	i := 0
	for b.Loop() {
		t0 := time.Now()
		if _, err := j.Append(ctx, "bench", ev); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		insert(ctx, benchEnvelope(i))
		bareTime += time.Since(t1)
		journalTime += t1.Sub(t0)
		i++
	}
	b.ReportMetric(float64(bareTime)/float64(journalTime), "journal/bare")
	b.ReportMetric(float64(journalTime.Nanoseconds())/float64(b.N), "ns/journal-append")
	b.ReportMetric(float64(bareTime.Nanoseconds())/float64(b.N), "ns/bare-insert")
}

// BenchmarkJournalAppendBatch1000 appends 1,000 events per call through
// the journal (target: at least 200k events/s).
func BenchmarkJournalAppendBatch1000(b *testing.B) {
	j := benchJournal(b, benchOpen(b), false)
	ctx := context.Background()
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

// BenchmarkStartupCacheLookup1M checks that startup cost does not grow
// with history: a store holding 1M events (20 servers' tool lists among
// them) and its tool-cache checkpoint; each iteration is what a new
// session does — open the journal, attach the tool cache (restore the
// checkpoint, catch up) and look up 20 servers. Target: under 5 ms.
// BenchmarkStartupCacheLookupEmpty is the same on an empty store.
func BenchmarkStartupCacheLookup1M(b *testing.B) {
	benchStartup(b, 1_000_000)
}

func BenchmarkStartupCacheLookupEmpty(b *testing.B) {
	benchStartup(b, 0)
}

func benchStartup(b *testing.B, total int) {
	db := benchOpen(b)
	ctx := context.Background()
	j, err := journal.New(db, nil)
	if err != nil {
		b.Fatal(err)
	}
	cache := projector.NewToolCache()
	if err := j.Attach(ctx, cache); err != nil {
		b.Fatal(err)
	}
	tools := make([]events.ToolDef, 30)
	for i := range tools {
		tools[i] = events.ToolDef{Name: "tool_" + strconv.Itoa(i), InputSchema: []byte(`{"type":"object","properties":{"text":{"type":"string"}}}`)}
	}
	for s := range 20 {
		ev := &events.ToolsListed{Server: "server" + strconv.Itoa(s), ConfigHash: "h", Tools: tools, Count: len(tools)}
		if _, err := j.Append(ctx, "history", ev); err != nil {
			b.Fatal(err)
		}
	}
	batch := make([]events.Envelope, 1000)
	for i := range batch {
		batch[i] = events.MustNew("history", &events.ToolCallFinished{Server: "server1", Tool: "tool_1"}, time.Unix(0, 0))
	}
	for n := 20; n < total; n += len(batch) {
		if _, err := j.AppendEnvelopes(ctx, "history", batch); err != nil {
			b.Fatal(err)
		}
	}
	j.Close() // stores the checkpoint
	now := time.Now()
	for b.Loop() {
		j2, err := journal.New(db, nil)
		if err != nil {
			b.Fatal(err)
		}
		c := projector.NewToolCache()
		if err := j2.Attach(ctx, c); err != nil {
			b.Fatal(err)
		}
		for s := range 20 {
			if _, _, ok := c.Lookup("server"+strconv.Itoa(s), "h", now); !ok {
				b.Fatal("cache miss")
			}
		}
		j2.Close()
	}
}

// BenchmarkStartupStaleCheckpoint is a new session's cache setup when
// 200,000 events were written after the tool cache's checkpoint by a
// writer without the cache: "by-type" is the journal's catch-up through
// the index on type, "full-scan" the same cache hidden behind a wrapper
// that does not say which type it folds (the catch-up before the index).
func BenchmarkStartupStaleCheckpoint(b *testing.B) {
	db := benchOpen(b)
	ctx := context.Background()
	j, err := journal.New(db, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := j.Attach(ctx, projector.NewToolCache()); err != nil {
		b.Fatal(err)
	}
	for s := range 20 {
		ev := &events.ToolsListed{Server: "server" + strconv.Itoa(s), ConfigHash: "h", Tools: []events.ToolDef{{Name: "echo"}}, Count: 1}
		if _, err := j.Append(ctx, "history", ev); err != nil {
			b.Fatal(err)
		}
	}
	j.Close() // the checkpoint is current here
	batch := make([]events.Envelope, 1000)
	for i := range batch {
		batch[i] = events.MustNew("other", &events.ToolCallFinished{Server: "server1", Tool: "echo"}, time.Unix(1, 0))
	}
	for range 200 {
		if _, err := db.Append(ctx, "other", store.AnyVersion, batch); err != nil {
			b.Fatal(err)
		}
	}
	now := time.Now()
	for _, mode := range []string{"full-scan", "by-type"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				j2, err := journal.New(db, nil)
				if err != nil {
					b.Fatal(err)
				}
				c := projector.NewToolCache()
				var p journal.Projection = c
				if mode == "full-scan" {
					p = untyped{c}
				}
				if err := j2.Attach(ctx, p); err != nil {
					b.Fatal(err)
				}
				if _, _, ok := c.Lookup("server7", "h", now); !ok {
					b.Fatal("cache miss")
				}
				j2.Close()
			}
		})
	}
}

// untyped hides the tool cache's EventType (and checkpoint) from the
// journal.
type untyped struct{ c *projector.ToolCache }

func (u untyped) Apply(env events.Envelope) { u.c.Apply(env) }
func (u untyped) LastSeq() uint64           { return u.c.LastSeq() }
