package bench

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/projector"
)

// BenchmarkPostgresJournalAppend: one event through the journal on the
// PostgreSQL store (persist, project into the session's view and the tool
// cache, publish on NATS), interleaved with a bare single-row pgx INSERT of
// the same row shape into the same database. Goal: append/bare ≥ 0.7 (the
// rate of the journal's append as a fraction of the bare insert's).
func BenchmarkPostgresJournalAppend(b *testing.B) {
	f := openFleet(b)
	conn, schema, j := f.conn, f.schema, f.j
	ctx := context.Background()
	for _, p := range []journal.Projection{projector.NewToolView("bench"), projector.NewToolCache()} {
		if err := j.Attach(ctx, p); err != nil {
			b.Fatal(err)
		}
	}

	bare, err := pgx.Connect(ctx, conn)
	if err != nil {
		b.Fatal(err)
	}
	defer bare.Close(ctx)
	table := pgx.Identifier{schema, "bare_events"}.Sanitize()
	if _, err := bare.Exec(ctx, `CREATE TABLE `+table+` (
		seq bigint PRIMARY KEY, stream text NOT NULL, version bigint NOT NULL, type text NOT NULL,
		schema integer NOT NULL, time bigint NOT NULL, session_id text NOT NULL,
		correlation_id text NOT NULL DEFAULT '', host text NOT NULL DEFAULT '', data bytea NOT NULL,
		UNIQUE (stream, version))`); err != nil {
		b.Fatal(err)
	}
	insert := `INSERT INTO ` + table + ` (seq, stream, version, type, schema, time, session_id, correlation_id, host, data)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`

	ev := &events.ToolListChanged{Server: "srv"}
	var journalTime, bareTime time.Duration
	seq := int64(0)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		stored, err := j.Append(ctx, "bench", ev)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		e := stored[0]
		seq++
		if _, err := bare.Exec(ctx, insert, seq, "bare", seq, e.Type, int32(e.Schema), e.Time.UnixNano(), e.SessionID, e.CorrelationID, e.Host, []byte(e.Data)); err != nil {
			b.Fatal(err)
		}
		bareTime += time.Since(t1)
		journalTime += t1.Sub(t0)
	}
	b.StopTimer()
	b.ReportMetric(float64(bareTime)/float64(journalTime), "append/bare")
	b.ReportMetric(float64(journalTime.Nanoseconds())/float64(b.N), "ns/append")
	b.ReportMetric(float64(bareTime.Nanoseconds())/float64(b.N), "ns/insert")
}
