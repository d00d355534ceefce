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
// iteration appends to three stores in files side by side, rotating which
// goes first, so all see the same disk and load: one as the package writes
// them; one through the append path as it was before the chain (no chain
// value computed, bound or read back, no chain head written, the rows
// bound through database/sql), the baseline of the goal; and one through
// the package's own append path, statements and binding with the chain
// left out (the chain values and the chain head bound NULL, none
// computed), which shows what the chain alone costs. It reports each
// side's median and p99 per append, the ratios of the total times
// (chain/nochain, the goal being at most 1.05; chain/bare) and of the
// medians, and the ratios of the process's CPU time over each side's
// appends, which count work moved off the append's own goroutine too
// (cpu-chain/nochain, cpu-chain/bare).
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

// benchChainCost runs the op that setup returns for a chained store, an
// unchained one and a bare one, in turn, and reports their timings.
func benchChainCost(b *testing.B, setup func(*testing.B, *DB) func(i int)) {
	type side struct {
		name string
		op   func(int)
		ds   []time.Duration
		cpu  time.Duration
	}
	sides := []*side{
		{name: "chain", op: setup(b, benchOpen(b))},
		{name: "nochain", op: setup(b, benchOpenUnchained(b))},
		{name: "bare", op: setup(b, benchOpenBare(b))},
	}
	i := 0
	for b.Loop() {
		for k := range sides {
			s := sides[(i+k)%len(sides)]
			c0, t0 := cpuTime(), time.Now()
			s.op(i)
			s.ds = append(s.ds, time.Since(t0))
			s.cpu += cpuTime() - c0
		}
		i++
	}
	total := func(ds []time.Duration) (t time.Duration) {
		for _, d := range ds {
			t += d
		}
		return t
	}
	on := sides[0]
	for _, s := range sides {
		// Medians before the quantiles sort the samples.
		p50, p99 := quantile(s.ds, 0.5), quantile(s.ds, 0.99)
		b.ReportMetric(float64(p50.Nanoseconds()), "ns-p50-"+s.name)
		b.ReportMetric(float64(p99.Nanoseconds()), "ns-p99-"+s.name)
	}
	for _, off := range sides[1:] {
		b.ReportMetric(float64(total(on.ds))/float64(total(off.ds)), "chain/"+off.name)
		b.ReportMetric(float64(quantile(on.ds, 0.5))/float64(quantile(off.ds, 0.5)), "chain/"+off.name+"-p50")
		if off.cpu > 0 {
			b.ReportMetric(float64(on.cpu)/float64(off.cpu), "cpu-chain/"+off.name)
		}
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
	u.rows = u.appendRows
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

// unchained is the writer of the store before the chain, and with rows
// set to bare's, the writer of a bare store.
type unchained struct {
	db                                       *DB
	positions, insertOne, insertSm, insertLg *sql.Stmt
	upsertStream                             *sql.Stmt
	rows                                     func(ctx context.Context, stream string, expected int64, envs []events.Envelope) ([]events.Envelope, error)
}

func (u *unchained) writeGroup(live []*groupcommit.Request) {
	db, bg := u.db, context.Background()
	err := db.inTx(bg, func() error {
		if len(live) == 1 {
			r := live[0]
			r.Out, r.Err = u.rows(bg, r.Stream, r.Expected, r.Envs)
			return r.Err
		}
		for _, r := range live {
			if _, err := db.wconn.ExecContext(bg, "SAVEPOINT append"); err != nil {
				return err
			}
			out, err := u.rows(bg, r.Stream, r.Expected, r.Envs)
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

// benchOpenBare opens a store whose appends go through the package's own
// append path with the chain left out: the same queue, transactions,
// statements and binding, the chain values and the chain head bound NULL,
// none computed. BenchmarkChainCost compares with it
// what the chain alone costs.
func benchOpenBare(b *testing.B) *DB {
	db := benchOpen(b)
	u := &unchained{db: db}
	var nulls rowChain // the chain values bound: NULL
	u.rows = func(ctx context.Context, stream string, expected int64, envs []events.Envelope) ([]events.Envelope, error) {
		if len(nulls.ownVals) < len(envs) {
			nulls.ownVals, nulls.mine = make([]any, len(envs)), make([]bool, len(envs))
			for i := range nulls.mine {
				nulls.mine[i] = true
			}
		}
		nulls.n, nulls.total = len(envs), len(envs)
		return bareAppendRows(ctx, db, stream, expected, envs, &nulls)
	}
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

// bareAppendRows is DB.appendRows without the chain.
func bareAppendRows(ctx context.Context, db *DB, stream string, expected int64, envs []events.Envelope, nulls *rowChain) ([]events.Envelope, error) {
	cur, last, err := db.positions(ctx, stream)
	if err != nil {
		return nil, mapErr(err)
	}
	if expected != store.AnyVersion && expected != cur {
		return nil, fmt.Errorf("expected version %d, stream is at %d: %w", expected, cur, store.ErrVersionConflict)
	}
	if len(envs) == 0 {
		return nil, nil
	}
	out := make([]events.Envelope, len(envs))
	for i, e := range envs {
		e = e.Clone()
		e.Seq = uint64(last) + uint64(i) + 1
		e.Stream = stream
		e.Version = uint64(cur) + uint64(i) + 1
		e.Time = e.Time.UTC()
		out[i] = e
	}
	if err := db.insert(ctx, out, nulls); err != nil {
		return nil, err
	}
	first, end := out[0], out[len(out)-1]
	if err := db.exec(ctx, db.wstmts.upsertStream, stream, int64(end.Version),
		int64(first.Seq), int64(end.Seq), first.Time.UnixNano(), end.Time.UnixNano(), nil); err != nil {
		return nil, fmt.Errorf("update stream: %w", mapErr(err))
	}
	return out, nil
}
