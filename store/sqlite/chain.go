package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"math"
	"runtime"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/internal/paging"
)

var _ store.ChainReader = (*DB)(nil)

// chainVersion is the schema version that added the hash chain: the hash
// column of events and the chain_head table.
const chainVersion = 5

// headVersion is the schema version that moved the chain head from
// chain_head into streams (last_hash).
const headVersion = 7

// The hash chain (see package store for its definition). Each append
// computes its events' chain values in the writer, under the write lock
// that numbers them: the value it follows is that of the event at the
// highest seq, read in the same transaction as that seq. The writer keeps
// the seq and value of the last event it committed (DB.tail), so it reads
// the stored value back only when the log no longer ends there, another
// process having appended since. Each append records its last event's
// value in its stream's row with its seq (last_hash beside last_seq), in
// the statement that updates that row anyway: the chain head is the row
// with the highest last_seq.

// chainTail is an event's seq and chain value; the zero value stands for
// the empty log, whose next event follows a zero value.
type chainTail struct {
	seq  uint64
	hash [store.ChainHashSize]byte
}

// rowChain is the chain values of an append's rows, for insert. An append
// of more rows than one statement binds has them computed in a goroutine
// of its own, statement by statement, ahead of the insert, so that the
// hashing (about an eighth of a 1,000-row append's time in the writer)
// overlaps SQLite's work on the statements before; a smaller one has them
// computed in place. The rows must not change until done has returned.
//
// The writer keeps one rowChain (DB.chain) from one append to the next:
// the values go into the same buffer each time, each already boxed as the
// driver argument insert binds, so that an append allocates nothing per
// row for its chain values.
type rowChain struct {
	vals  []any    // vals[i] is row i's chain value, a []byte into buf
	buf   []byte   // the values, ChainHashSize bytes each
	ready chan int // rows computed so far, after each statement's
	n     int      // rows known to be computed
	total int      // rows of the append
	last  [store.ChainHashSize]byte
}

// keptChainRows is the most rows whose buffer the writer keeps for the
// next append; a larger append has buffers of its own.
const keptChainRows = 4 * largeGroup

// start starts computing the chain values of out, stored envelopes with
// consecutive seqs following the event whose chain value is prev. The
// previous append's values must be done.
func (c *rowChain) start(prev [store.ChainHashSize]byte, out []events.Envelope) *rowChain {
	if len(out) > keptChainRows {
		c = &rowChain{}
	}
	if len(c.vals) < len(out) {
		c.buf = make([]byte, store.ChainHashSize*len(out))
		c.vals = make([]any, len(out))
		for i := range c.vals {
			c.vals[i] = c.buf[i*store.ChainHashSize : (i+1)*store.ChainHashSize : (i+1)*store.ChainHashSize]
		}
	}
	c.n, c.total = 0, len(out)
	buf := c.buf
	compute := func(from, to int) {
		for i := from; i < to; i++ {
			prev = store.ChainHash(prev, out[i])
			copy(buf[i*store.ChainHashSize:], prev[:])
		}
	}
	if len(out) <= largeGroup || runtime.GOMAXPROCS(0) < 2 {
		compute(0, len(out))
		c.n, c.last = len(out), prev
		return c
	}
	if c.ready == nil {
		// Sends block once it is full, until insert has taken the
		// values: the goroutine never runs more than that ahead.
		c.ready = make(chan int, 2*largeGroup/smallGroup)
	}
	go func() {
		for i := 0; i < len(out); {
			next := i + statementRows(len(out)-i)
			compute(i, next)
			if next == len(out) {
				c.last = prev
			}
			c.ready <- next
			i = next
		}
	}()
	return c
}

// wait returns once the first n rows' values are computed.
func (c *rowChain) wait(n int) {
	for c.n < n {
		c.n = <-c.ready
	}
}

// done waits until every value is computed and returns the last.
func (c *rowChain) done() [store.ChainHashSize]byte {
	c.wait(c.total)
	return c.last
}

// toHash returns b as a chain value: zero when b is not one (no event, or
// a row without a hash).
func toHash(b []byte) (h [store.ChainHashSize]byte) {
	copy(h[:], b)
	return h
}

// chainHistory chains the events stored before the hash chain existed, in
// seq order from a zero value, and records the head: the Go half of the
// migration to chainVersion. It runs in the migration's transaction, with
// the writer held.
func (db *DB) chainHistory(ctx context.Context) error {
	const (
		read   = `SELECT ` + eventColumns + ` FROM events WHERE seq > ? ORDER BY seq LIMIT ?`
		update = `UPDATE events SET hash = ? WHERE seq = ?`
	)
	upd, err := db.wconn.PrepareContext(ctx, update)
	if err != nil {
		return err
	}
	defer upd.Close()
	var (
		prev [store.ChainHashSize]byte
		last uint64
		n    int
	)
	for {
		page, err := scanEvents(db.wconn.QueryContext(ctx, read, int64(last), pageSize))
		if err != nil {
			return fmt.Errorf("read events after seq %d: %w", last, err)
		}
		for _, e := range page {
			prev = store.ChainHash(prev, e)
			if _, err := upd.ExecContext(ctx, prev[:], int64(e.Seq)); err != nil {
				return fmt.Errorf("chain seq %d: %w", e.Seq, err)
			}
			last = e.Seq
		}
		n += len(page)
		if len(page) < pageSize {
			break
		}
	}
	if _, err := db.wconn.ExecContext(ctx, `INSERT INTO chain_head (one, seq, hash) VALUES (1, ?, ?)`, int64(last), prev[:]); err != nil {
		return fmt.Errorf("write chain head: %w", err)
	}
	db.log.Info("sqlite: chained the stored events", "file", db.path, "events", n)
	return nil
}

// scanEvents reads the rows of a query of eventColumns.
func scanEvents(rows *sql.Rows, err error) ([]events.Envelope, error) {
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var page []events.Envelope
	for rows.Next() {
		var (
			e               events.Envelope
			seq, ver, nanos int64
			data            []byte
		)
		if err := rows.Scan(&seq, &e.Stream, &ver, &e.Type, &e.Schema, &nanos, &e.SessionID, &e.CorrelationID, &e.Host, &data); err != nil {
			return nil, err
		}
		e.Seq, e.Version, e.Time, e.Data = uint64(seq), uint64(ver), time.Unix(0, nanos).UTC(), data
		page = append(page, e)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err)
	}
	return page, nil
}

// errNoChain is returned by the chain reads of a file whose schema
// predates the chain (one opened read-only, so never migrated).
func (db *DB) errNoChain(op string) error {
	return fmt.Errorf("sqlite: %s: %s predates the hash chain (schema version %d, the chain came with %d): open it read-write once to migrate it",
		op, db.path, db.onDisk, chainVersion)
}

// ReadChain implements [store.ChainReader]: the rows of events as they
// are, each with its stored hash (nil when the row has none). It returns
// an error for a file whose schema predates the chain (opened read-only).
func (db *DB) ReadChain(ctx context.Context, fromSeq uint64) iter.Seq2[store.ChainedEvent, error] {
	const op = "read chain"
	if db.onDisk < chainVersion {
		return func(yield func(store.ChainedEvent, error) bool) { yield(store.ChainedEvent{}, db.errNoChain(op)) }
	}
	return paging.Read(ctx, "sqlite: "+op, pageSize, max(fromSeq, 1),
		func(from uint64) ([]store.ChainedEvent, error) { return db.chainPage(ctx, from) },
		func(last store.ChainedEvent) (uint64, bool) { return last.Env.Seq + 1, true })
}

func (db *DB) chainPage(ctx context.Context, from uint64) ([]store.ChainedEvent, error) {
	const op = "read chain"
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	if err := db.acquire(false); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	defer db.release()
	if from > math.MaxInt64 {
		return nil, nil
	}
	rows, err := db.stmts.readChain.QueryContext(ctx, int64(from), pageSize)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, mapErr(err))
	}
	defer rows.Close()
	page := make([]store.ChainedEvent, 0, pageSize)
	for rows.Next() {
		var (
			c               store.ChainedEvent
			seq, ver, nanos int64
			data            []byte
		)
		e := &c.Env
		if err := rows.Scan(&seq, &e.Stream, &ver, &e.Type, &e.Schema, &nanos, &e.SessionID, &e.CorrelationID, &e.Host, &data, &c.Hash); err != nil {
			return nil, fmt.Errorf("sqlite: %s: %w", op, err)
		}
		e.Seq, e.Version, e.Time, e.Data = uint64(seq), uint64(ver), time.Unix(0, nanos).UTC(), data
		page = append(page, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, mapErr(err))
	}
	return page, nil
}

// ChainHead implements [store.ChainReader]: the seq and chain value that
// the last append recorded, in its stream's row (in chain_head before
// headVersion). It returns an error for a file whose schema predates the
// chain (opened read-only).
func (db *DB) ChainHead(ctx context.Context) (store.ChainHead, error) {
	const op = "read chain head"
	if db.onDisk < chainVersion {
		return store.ChainHead{}, db.errNoChain(op)
	}
	if err := db.acquire(false); err != nil {
		return store.ChainHead{}, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	defer db.release()
	var (
		h   store.ChainHead
		seq int64
	)
	err := db.stmts.chainHead.QueryRowContext(ctx).Scan(&seq, &h.Hash)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ChainHead{}, nil
	}
	if err != nil {
		return store.ChainHead{}, fmt.Errorf("sqlite: %s: %w", op, mapErr(err))
	}
	h.Seq = uint64(seq)
	if seq == 0 {
		h.Hash = nil
	}
	return h, nil
}
