package postgres

import (
	"context"
	"fmt"
	"iter"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/internal/paging"
)

var _ store.ChainReader = (*DB)(nil)

// chainVersion is the schema version that added the hash chain: the hash
// columns of events and seq_counter.
const chainVersion = 3

// The hash chain (see package store for its definition). The process
// computes each event's content digest before it sends the append; the
// append statement, run under the counter lock that numbers every append
// of every host, completes each chain value from the value the counter
// row holds, with PostgreSQL's sha256, and leaves the last one in the
// counter row (see appendSQL). So the chain follows the gapless sequence
// however many hosts write.

// chainHistory chains the events stored before the hash chain existed, in
// seq order from a zero value, and records the last value in the counter
// row: the Go half of the migration to chainVersion. It runs in the
// migration's transaction, under the migration lock; appenders of this
// version wait for the schema to be current before they write.
func (db *DB) chainHistory(ctx context.Context, tx pgx.Tx) error {
	var (
		prev [store.ChainHashSize]byte
		last int64
		n    int
	)
	// The counter lock keeps appenders of an older version out meanwhile.
	if _, err := tx.Exec(ctx, db.q.lock); err != nil {
		return fmt.Errorf("lock sequence counter: %w", err)
	}
	read := `SELECT ` + eventColumns + ` FROM ` + db.q.schema + `.events WHERE seq > $1 ORDER BY seq LIMIT $2`
	update := `UPDATE ` + db.q.schema + `.events SET hash = $1 WHERE seq = $2`
	for {
		rows, err := tx.Query(ctx, read, last, pageSize)
		if err != nil {
			return fmt.Errorf("read events after seq %d: %w", last, err)
		}
		page, err := scanEvents(rows)
		if err != nil {
			return fmt.Errorf("read events after seq %d: %w", last, err)
		}
		b := &pgx.Batch{}
		for _, e := range page {
			prev = store.ChainHash(prev, e)
			b.Queue(update, append([]byte(nil), prev[:]...), int64(e.Seq))
			last = int64(e.Seq)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("chain events after seq %d: %w", last, err)
		}
		n += len(page)
		if len(page) < pageSize {
			break
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE `+db.q.schema+`.seq_counter SET hash = $1`, prev[:]); err != nil {
		return fmt.Errorf("record chain head: %w", err)
	}
	db.log.Info("postgres: chained the stored events", "schema", db.schema, "events", n)
	return nil
}

// scanEvents reads the rows of a query of eventColumns.
func scanEvents(rows pgx.Rows) ([]events.Envelope, error) {
	var (
		page            []events.Envelope
		e               events.Envelope
		seq, ver, nanos int64
		data            []byte
	)
	_, err := pgx.ForEachRow(rows, []any{&seq, &e.Stream, &ver, &e.Type, &e.Schema, &nanos, &e.SessionID, &e.CorrelationID, &e.Host, &data}, func() error {
		e.Seq, e.Version, e.Time, e.Data = uint64(seq), uint64(ver), time.Unix(0, nanos).UTC(), data
		page = append(page, e)
		return nil
	})
	return page, err
}

// errNoChain is returned by the chain reads of a schema that predates the
// chain (one opened read-only, so never migrated).
func (db *DB) errNoChain(op string) error {
	return fmt.Errorf("postgres: %s: schema %s predates the hash chain (version %d, the chain came with %d): open it read-write once to migrate it",
		op, db.schema, db.onDisk, chainVersion)
}

// ReadChain implements [store.ChainReader]: the rows of events as they
// are, each with its stored hash (nil when the row has none). It returns
// an error for a schema that predates the chain (opened read-only).
func (db *DB) ReadChain(ctx context.Context, fromSeq uint64) iter.Seq2[store.ChainedEvent, error] {
	const op = "read chain"
	if db.onDisk < chainVersion {
		return func(yield func(store.ChainedEvent, error) bool) { yield(store.ChainedEvent{}, db.errNoChain(op)) }
	}
	return paging.Read(ctx, "postgres: "+op, pageSize, max(fromSeq, 1),
		func(from uint64) ([]store.ChainedEvent, error) { return db.chainPage(ctx, from) },
		func(last store.ChainedEvent) (uint64, bool) { return last.Env.Seq + 1, true })
}

func (db *DB) chainPage(ctx context.Context, from uint64) ([]store.ChainedEvent, error) {
	const op = "read chain"
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", op, err)
	}
	if err := db.acquire(false); err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", op, err)
	}
	defer db.release()
	if from > math.MaxInt64 {
		return nil, nil
	}
	rows, err := db.pool.Query(ctx, db.q.readChain, int64(from), pageSize)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", op, mapErr(err))
	}
	page := make([]store.ChainedEvent, 0, pageSize)
	var (
		e               events.Envelope
		seq, ver, nanos int64
		data, hash      []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&seq, &e.Stream, &ver, &e.Type, &e.Schema, &nanos, &e.SessionID, &e.CorrelationID, &e.Host, &data, &hash}, func() error {
		e.Seq, e.Version, e.Time, e.Data = uint64(seq), uint64(ver), time.Unix(0, nanos).UTC(), data
		page = append(page, store.ChainedEvent{Env: e, Hash: hash})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", op, mapErr(err))
	}
	return page, nil
}

// ChainHead implements [store.ChainReader]: the counter and the chain
// value the counter row holds. It returns an error for a schema that
// predates the chain (opened read-only).
func (db *DB) ChainHead(ctx context.Context) (store.ChainHead, error) {
	const op = "read chain head"
	if db.onDisk < chainVersion {
		return store.ChainHead{}, db.errNoChain(op)
	}
	if err := db.acquire(false); err != nil {
		return store.ChainHead{}, fmt.Errorf("postgres: %s: %w", op, err)
	}
	defer db.release()
	var (
		h   store.ChainHead
		seq int64
	)
	if err := db.pool.QueryRow(ctx, db.q.chainHead).Scan(&seq, &h.Hash); err != nil {
		return store.ChainHead{}, fmt.Errorf("postgres: %s: %w", op, mapErr(err))
	}
	h.Seq = uint64(seq)
	if seq == 0 {
		h.Hash = nil
	}
	return h, nil
}
