package sqlite

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
)

// Benchmarks of the store's rates: an Append of one event against a bare
// single-row INSERT into the same schema over the same writer connection
// (so the same pragmas: WAL, synchronous=NORMAL by default), batched
// appends, concurrent appends at each durability level, and reads.

func benchOpen(b *testing.B) *DB {
	b.Helper()
	db, err := Open(filepath.Join(b.TempDir(), "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

func benchEnvelope(i int) events.Envelope {
	return events.Envelope{
		Type: events.TypeConnectStarted, Schema: 1, SessionID: "session-1", CorrelationID: "corr",
		Time: time.Date(2025, 1, 1, 0, 0, 0, i, time.UTC),
		Data: []byte(`{"server":"git","transport":"stdio","attempt":1}`),
	}
}

// reportRate reports events per second of wall time for a loop of b.N
// operations of perOp events each.
func reportRate(b *testing.B, perOp int) {
	b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "events/s")
}

// rate measures a benchmark loop: call start right before b.Loop and report
// after it. It reports events per second of wall time and the process's CPU
// time per event, which varies less on a machine shared with other work.
type rate struct {
	b     *testing.B
	cpu0  time.Duration
	perOp int
}

func startRate(b *testing.B, perOp int) *rate { return &rate{b: b, cpu0: cpuTime(), perOp: perOp} }

func (r *rate) report() {
	reportRate(r.b, r.perOp)
	events := float64(r.b.N * r.perOp)
	if cpu := cpuTime() - r.cpu0; cpu > 0 {
		r.b.ReportMetric(float64(cpu.Nanoseconds())/events, "cpu-ns/event")
	}
}

// bareInsert returns a function that inserts one row into a table shaped
// like events (same columns and indexes) in its own implicit transaction,
// through db's writer connection (so with the same pragmas). It is a table
// of its own so that the store and the journal never find rows they did
// not write (which a journal reads, as it would another process's).
// Benchmarks use one goroutine, so it needs no lock.
func bareInsert(b *testing.B, db *DB) func(ctx context.Context, e events.Envelope) {
	ctx := context.Background()
	for _, q := range []string{
		`CREATE TABLE bare_events (
			seq INTEGER PRIMARY KEY, stream TEXT NOT NULL, version INTEGER NOT NULL, type TEXT NOT NULL,
			schema INTEGER NOT NULL, time INTEGER NOT NULL, session_id TEXT NOT NULL,
			correlation_id TEXT NOT NULL DEFAULT '', data BLOB NOT NULL, UNIQUE (stream, version))`,
		`CREATE INDEX bare_events_session ON bare_events (session_id, seq)`,
		`CREATE INDEX bare_events_type ON bare_events (type, seq)`,
	} {
		if _, err := db.wconn.ExecContext(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	st, err := db.wconn.PrepareContext(ctx, `INSERT INTO bare_events (`+eventColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	var version int64
	return func(ctx context.Context, e events.Envelope) {
		version++
		// A NULL seq lets SQLite assign the next rowid.
		if _, err := st.ExecContext(ctx, nil, "bare", version, e.Type, e.Schema, e.Time.UnixNano(), e.SessionID, e.CorrelationID, []byte(e.Data)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendSingle(b *testing.B) {
	db := benchOpen(b)
	ctx := context.Background()
	i := 0
	r := startRate(b, 1)
	for b.Loop() {
		if _, err := db.Append(ctx, "bench", store.AnyVersion, []events.Envelope{benchEnvelope(i)}); err != nil {
			b.Fatal(err)
		}
		i++
	}
	r.report()
}

func BenchmarkBareInsert(b *testing.B) {
	db := benchOpen(b)
	insert := bareInsert(b, db)
	ctx := context.Background()
	i := 0
	r := startRate(b, 1)
	for b.Loop() {
		insert(ctx, benchEnvelope(i))
		i++
	}
	r.report()
}

// BenchmarkAppendVsBareInsert interleaves the two in one file and reports
// the rate of Append as a fraction of the bare insert rate; the target is
// at least 0.7, publishing and projecting included.
func BenchmarkAppendVsBareInsert(b *testing.B) {
	db := benchOpen(b)
	insert := bareInsert(b, db)
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
	db := benchOpen(b)
	ctx := context.Background()
	batch := make([]events.Envelope, 1000)
	for i := range batch {
		batch[i] = benchEnvelope(i)
	}
	r := startRate(b, len(batch))
	for b.Loop() {
		if _, err := db.Append(ctx, "bench", store.AnyVersion, batch); err != nil {
			b.Fatal(err)
		}
	}
	r.report()
}

func BenchmarkReadAll(b *testing.B) {
	const total = 100_000
	db := benchOpen(b)
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
	r := startRate(b, total)
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
	r.report()
}

// BenchmarkAppendConcurrent20 runs 20 goroutines that append one event each
// at a time, as concurrent sessions recording into one store do, at each
// durability level; ns/append is wall time per acknowledged append.
func BenchmarkAppendConcurrent20(b *testing.B) {
	for _, level := range []Durability{Full, Normal} {
		b.Run(string(level), func(b *testing.B) {
			db, err := Open(filepath.Join(b.TempDir(), "bench.db"), &Options{Durability: level})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
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
		})
	}
}
