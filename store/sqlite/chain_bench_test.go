package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/internal/groupcommit"
)

// BenchmarkChainCost measures what the hash chain costs an append: each
// iteration appends to two stores in files side by side, one as the
// package writes them and one through the append path as it was before
// the chain (no chain value computed, bound or read back, no chain head
// written), alternating which goes first, so both see the same disk and
// load. It reports each side's median and p99 per append and the ratio
// of their total times (chain/nochain; the goal is at most 1.05), and the
// ratio of the process's CPU time over each side's appends, which counts
// work moved off the append's own goroutine too (cpu-chain/nochain).
func BenchmarkChainCost(b *testing.B) {
	batch := make([]events.Event, 1000)
	for i := range batch {
		batch[i] = &events.ToolCallFinished{Server: "git", Tool: "status"}
	}
	one := []events.Event{&events.ToolCallFinished{Server: "git", Tool: "status"}}
	journalOp := func(evs []events.Event) func(b *testing.B, db *DB) func(int) {
		return func(b *testing.B, db *DB) func(int) {
			j := benchJournal(b, db, false)
			return func(int) {
				if _, err := j.Append(context.Background(), "bench", evs...); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	storeSingle := func(b *testing.B, db *DB) func(int) {
		return func(i int) {
			if _, err := db.Append(context.Background(), "bench", store.AnyVersion, []events.Envelope{benchEnvelope(i)}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("journal-batch1000", func(b *testing.B) { benchChainCost(b, journalOp(batch)) })
	b.Run("journal-single", func(b *testing.B) { benchChainCost(b, journalOp(one)) })
	b.Run("store-single", func(b *testing.B) { benchChainCost(b, storeSingle) })
}

// benchChainCost runs the op that setup returns for a chained store and for
// an unchained one, alternately, and reports their timings.
func benchChainCost(b *testing.B, setup func(*testing.B, *DB) func(i int)) {
	chained := setup(b, benchOpen(b))
	plain := setup(b, benchOpenUnchained(b))
	var (
		on, off       []time.Duration
		cpuOn, cpuOff time.Duration
	)
	timed := func(op func(int), i int, cpu *time.Duration) time.Duration {
		c0, t0 := cpuTime(), time.Now()
		op(i)
		d := time.Since(t0)
		*cpu += cpuTime() - c0
		return d
	}
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			on = append(on, timed(chained, i, &cpuOn))
			off = append(off, timed(plain, i, &cpuOff))
		} else {
			off = append(off, timed(plain, i, &cpuOff))
			on = append(on, timed(chained, i, &cpuOn))
		}
		i++
	}
	total := func(ds []time.Duration) (t time.Duration) {
		for _, d := range ds {
			t += d
		}
		return t
	}
	b.ReportMetric(float64(total(on))/float64(total(off)), "chain/nochain")
	b.ReportMetric(float64(quantile(on, 0.5))/float64(quantile(off, 0.5)), "chain/nochain-p50")
	if cpuOff > 0 {
		b.ReportMetric(float64(cpuOn)/float64(cpuOff), "cpu-chain/nochain")
	}
	for _, s := range []struct {
		name string
		ds   []time.Duration
	}{{"chain", on}, {"nochain", off}} {
		b.ReportMetric(float64(quantile(s.ds, 0.5).Nanoseconds()), "ns-p50-"+s.name)
		b.ReportMetric(float64(quantile(s.ds, 0.99).Nanoseconds()), "ns-p99-"+s.name)
	}
}

// quantile returns the q-quantile of ds (nearest rank), sorting ds.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}

// benchOpenUnchained opens a store whose appends go through the append path
// as it was before the hash chain: the same queue and transactions, but
// rows written without a chain value (the column stays NULL) and no chain
// head. It is the baseline of BenchmarkChainCost.
func benchOpenUnchained(b *testing.B) *DB {
	db := benchOpen(b)
	ctx := context.Background()
	u := &unchained{db: db}
	qs := map[**sql.Stmt]string{
		&u.positions: `SELECT (SELECT version FROM streams WHERE stream = ?), (SELECT COALESCE(MAX(seq), 0) FROM events)`,
		&u.insertOne: unchainedInsert(1),
		&u.insertSm:  unchainedInsert(smallGroup),
		&u.insertLg:  unchainedInsert(largeGroup),
		&u.upsertStream: `INSERT INTO streams (stream, version, first_seq, last_seq, created, updated)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6)
			ON CONFLICT (stream) DO UPDATE SET version = ?2, last_seq = ?4, updated = ?6`,
	}
	if err := prepare(ctx, db.wconn, qs); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		for _, st := range []*sql.Stmt{u.positions, u.insertOne, u.insertSm, u.insertLg, u.upsertStream} {
			st.Close()
		}
	})
	db.commits = groupcommit.New(groupcommit.Config{
		Store: "sqlite",
		Check: func(stream string, expected int64, envs []events.Envelope) error {
			return store.CheckAppend("sqlite", stream, expected, envs)
		},
		Acquire: func() error { return db.acquire(true) },
		Release: db.release,
		Sem:     db.wsem,
		Write:   u.writeGroup,
	})
	return db
}

func unchainedInsert(n int) string {
	row := "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	return `INSERT INTO events (` + eventColumns + `) VALUES ` + row + strings.Repeat(", "+row, n-1)
}

// unchained is the writer of the store before the chain.
type unchained struct {
	db                                       *DB
	positions, insertOne, insertSm, insertLg *sql.Stmt
	upsertStream                             *sql.Stmt
}

func (u *unchained) writeGroup(live []*groupcommit.Request) {
	db, bg := u.db, context.Background()
	err := db.inTx(bg, func() error {
		if len(live) == 1 {
			r := live[0]
			r.Out, r.Err = u.appendRows(bg, r.Stream, r.Expected, r.Envs)
			return r.Err
		}
		for _, r := range live {
			if _, err := db.wconn.ExecContext(bg, "SAVEPOINT append"); err != nil {
				return err
			}
			out, err := u.appendRows(bg, r.Stream, r.Expected, r.Envs)
			if err != nil {
				r.Err = err
				if _, err := db.wconn.ExecContext(bg, "ROLLBACK TO append"); err != nil {
					return err
				}
			}
			if _, err := db.wconn.ExecContext(bg, "RELEASE append"); err != nil {
				return err
			}
			r.Out = out
		}
		return nil
	})
	if err != nil {
		for _, r := range live {
			if r.Err == nil {
				r.Out, r.Err = nil, err
			}
		}
	}
}

func (u *unchained) appendRows(ctx context.Context, stream string, expected int64, envs []events.Envelope) ([]events.Envelope, error) {
	var cur sql.NullInt64
	var last int64
	if err := u.positions.QueryRowContext(ctx, stream).Scan(&cur, &last); err != nil {
		return nil, mapErr(err)
	}
	if expected != store.AnyVersion && expected != cur.Int64 {
		return nil, fmt.Errorf("expected version %d, stream is at %d: %w", expected, cur.Int64, store.ErrVersionConflict)
	}
	if len(envs) == 0 {
		return nil, nil
	}
	out := make([]events.Envelope, len(envs))
	for i, e := range envs {
		e = e.Clone()
		e.Seq = uint64(last) + uint64(i) + 1
		e.Stream = stream
		e.Version = uint64(cur.Int64) + uint64(i) + 1
		e.Time = e.Time.UTC()
		out[i] = e
	}
	args := make([]any, 0, 10*min(len(out), largeGroup))
	for es := out; len(es) > 0; {
		st, rows := u.insertOne, 1
		switch {
		case len(es) >= largeGroup:
			st, rows = u.insertLg, largeGroup
		case len(es) >= smallGroup:
			st, rows = u.insertSm, smallGroup
		}
		args = args[:0]
		for _, e := range es[:rows] {
			data := []byte(e.Data)
			if data == nil {
				data = []byte{}
			}
			args = append(args, int64(e.Seq), e.Stream, int64(e.Version), e.Type, int64(e.Schema),
				e.Time.UnixNano(), e.SessionID, e.CorrelationID, e.Host, data)
		}
		if err := execRows(ctx, st, rows > 1, args); err != nil {
			return nil, mapErr(err)
		}
		es = es[rows:]
	}
	first, end := out[0], out[len(out)-1]
	if _, err := u.upsertStream.ExecContext(ctx, stream, int64(end.Version),
		int64(first.Seq), int64(end.Seq), first.Time.UnixNano(), end.Time.UnixNano()); err != nil {
		return nil, mapErr(err)
	}
	return out, nil
}

// execRows runs st with args, through QueryContext when viaQuery is set,
// and drives a query to its end: the insert path before the chain.
func execRows(ctx context.Context, st *sql.Stmt, viaQuery bool, args []any) error {
	if !viaQuery {
		_, err := st.ExecContext(ctx, args...)
		return err
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return err
	}
	return rows.Close()
}
