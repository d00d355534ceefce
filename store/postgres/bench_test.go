package postgres_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/postgres"
	"github.com/mcplife/mcplife/store/postgres/pgtest"
)

// Benchmarks of the store's rates against the server of pgtest: an Append
// of one event against a bare single-row pgx INSERT into a table shaped
// like events in the same database (the target is at least 0.7 of its
// rate), batched appends (target at least 50,000 events/s), concurrent
// appends and reads. Each benchmark has a schema of its own.

func benchOpen(b *testing.B) (*postgres.DB, string, string) {
	b.Helper()
	cs, schema := pgtest.Schema(b)
	db, err := postgres.Open(context.Background(), cs, &postgres.Options{Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db, cs, schema
}

func benchEnvelope(i int) events.Envelope {
	return events.Envelope{
		Type: events.TypeConnectStarted, Schema: 1, SessionID: "session-1", CorrelationID: "corr", Host: "host-1",
		Time: time.Date(2025, 1, 1, 0, 0, 0, i, time.UTC),
		Data: []byte(`{"server":"git","transport":"stdio","attempt":1}`),
	}
}

// reportRate reports events per second of wall time for a loop of b.N
// operations of perOp events each.
func reportRate(b *testing.B, perOp int) {
	b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "events/s")
}

// bareInsert returns a function that inserts one row, in its own implicit
// transaction, into a table shaped like events (same columns, types and
// indexes) in schema, through a connection of its own. It is a table of its
// own so that the store never finds rows it did not write. Benchmarks use
// one goroutine, so it needs no lock.
func bareInsert(b *testing.B, connString, schema string) func(ctx context.Context, e events.Envelope) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close(context.Background()) })
	s := pgx.Identifier{schema}.Sanitize()
	for _, q := range []string{
		`CREATE TABLE ` + s + `.bare_events (
			seq bigint PRIMARY KEY, stream text NOT NULL, version bigint NOT NULL, type text NOT NULL,
			schema integer NOT NULL, time bigint NOT NULL, session_id text NOT NULL,
			correlation_id text NOT NULL DEFAULT '', host text NOT NULL DEFAULT '', data bytea NOT NULL,
			UNIQUE (stream, version))`,
		`CREATE INDEX ON ` + s + `.bare_events (session_id, seq)`,
		`CREATE INDEX ON ` + s + `.bare_events (type, seq)`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	insert := `INSERT INTO ` + s + `.bare_events (seq, stream, version, type, schema, time, session_id, correlation_id, host, data)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`
	var seq int64
	return func(ctx context.Context, e events.Envelope) {
		seq++
		if _, err := conn.Exec(ctx, insert, seq, "bare", seq, e.Type, int32(e.Schema), e.Time.UnixNano(), e.SessionID, e.CorrelationID, e.Host, []byte(e.Data)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendSingle(b *testing.B) {
	db, _, _ := benchOpen(b)
	ctx := context.Background()
	i := 0
	for b.Loop() {
		if _, err := db.Append(ctx, "bench", store.AnyVersion, []events.Envelope{benchEnvelope(i)}); err != nil {
			b.Fatal(err)
		}
		i++
	}
	reportRate(b, 1)
}

func BenchmarkBareInsert(b *testing.B) {
	_, cs, schema := benchOpen(b)
	insert := bareInsert(b, cs, schema)
	ctx := context.Background()
	i := 0
	for b.Loop() {
		insert(ctx, benchEnvelope(i))
		i++
	}
	reportRate(b, 1)
}

// BenchmarkAppendVsBareInsert interleaves the two in one schema, so both
// meet the same load on the server and its disk, and reports the rate of
// Append as a fraction of the bare insert rate; the target is at least 0.7.
func BenchmarkAppendVsBareInsert(b *testing.B) {
	db, cs, schema := benchOpen(b)
	insert := bareInsert(b, cs, schema)
	ctx := context.Background()
	var appendTime, bareTime time.Duration
	i := 0
	for b.Loop() {
		e := benchEnvelope(i)
		t0 := time.Now()
		if _, err := db.Append(ctx, "bench", store.AnyVersion, []events.Envelope{e}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		insert(ctx, e)
		bareTime += time.Since(t1)
		appendTime += t1.Sub(t0)
		i++
	}
	b.ReportMetric(float64(bareTime)/float64(appendTime), "append/bare")
	b.ReportMetric(float64(appendTime.Nanoseconds())/float64(b.N), "ns/append")
	b.ReportMetric(float64(bareTime.Nanoseconds())/float64(b.N), "ns/insert")
}

func BenchmarkAppendBatch1000(b *testing.B) {
	db, _, _ := benchOpen(b)
	ctx := context.Background()
	batch := make([]events.Envelope, 1000)
	for i := range batch {
		batch[i] = benchEnvelope(i)
	}
	for b.Loop() {
		if _, err := db.Append(ctx, "bench", store.AnyVersion, batch); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, len(batch))
}

// BenchmarkAppendConcurrent20 runs 20 goroutines that append one event each
// at a time, as concurrent sessions recording into one store do; group
// commit shares each commit among them. ns/append is wall time per
// acknowledged append.
func BenchmarkAppendConcurrent20(b *testing.B) {
	db, _, _ := benchOpen(b)
	ctx := context.Background()
	var next atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if _, err := db.Append(ctx, "bench", store.AnyVersion, []events.Envelope{benchEnvelope(int(i))}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/append")
	reportRate(b, 1)
}

func BenchmarkReadAll(b *testing.B) {
	const total = 20_000
	db, _, _ := benchOpen(b)
	ctx := context.Background()
	batch := make([]events.Envelope, 1000)
	for i := range batch {
		batch[i] = benchEnvelope(i)
	}
	for range total / len(batch) {
		if _, err := db.Append(ctx, "bench", store.AnyVersion, batch); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		n := 0
		for _, err := range db.ReadAll(ctx, 0) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != total {
			b.Fatalf("read %d events, want %d", n, total)
		}
	}
	reportRate(b, total)
}
