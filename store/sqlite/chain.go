package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
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

// rowChain is the chain values of an append's rows, for insert. A row's
// value is two SHA-256: the digest of its content, which needs nothing
// but the row, and the chain step over the value before it, its seq and
// version and that digest, which follows the rows in order.
//
// An append of more rows than one statement binds has its values
// computed by a goroutine of its own ahead of the insert, chunk by chunk
// in row order, so that on a free core the hashing overlaps SQLite's work
// instead of adding to the writer's time. The writer never waits for that
// goroutine (on a loaded machine it may not have run yet): the rows it
// needs that the goroutine has not reached, it computes itself, into
// values of its own, and the goroutine, once it runs, soon gets ahead of
// the insert again. The content digests are computed once, by whichever
// of the two takes a chunk first; one that finds a chunk taken and not
// finished computes it again on the side. Only done waits, for a chunk
// in progress, so that no goroutine reads the append's events or writes
// its buffers once the append has returned. A smaller append has its
// values computed by the writer.
//
// The writer keeps one rowChain (DB.chain) from one append to the next:
// the values go into the same buffers each time, each already boxed as
// the driver argument insert binds, so that an append allocates nothing
// per row for its chain values.
type rowChain struct {
	// The values, ChainHashSize bytes a row, and each boxed as the []byte
	// insert binds: those the goroutine computed (ahead) and those the
	// writer did (own, for the rows where mine is set).
	ahead, own         []byte
	aheadVals, ownVals []any
	mine               []bool

	n     int                       // rows whose values insert may bind
	total int                       // rows of the append
	prev  [store.ChainHashSize]byte // the value of row n-1

	// What the goroutine reads: the rows as the caller gave them, their
	// stream, the first seq and version, and the value the first row
	// follows.
	envs         []events.Envelope
	stream       string
	seq, version uint64
	first        [store.ChainHashSize]byte

	helped bool // the goroutine was started
	// stepped is how many rows' values the goroutine has written to
	// ahead, a chunk at a time.
	stepped atomic.Int64

	// The content digests, by chunk of digestChunk rows: a chunk is
	// taken by moving next past it, and ready once its digests are in
	// sums.
	sums  []byte
	next  atomic.Int64
	ready []atomic.Bool
	// The writer's digests of the chunk that starts at row sideFrom, one
	// the goroutine had taken and not finished when the writer needed it.
	side     []byte
	sideFrom int

	// The goroutine's: mu, held while it computes a chunk and while reset
	// readies the next append; gen, the append it works for (reset moves
	// it on, done too); chunk, the next chunk it computes; and its side
	// digests of a chunk the writer had taken and not finished.
	mu       sync.Mutex
	gen      uint64
	chunk    int
	helpSide []byte
}

// digestChunk is how many rows the goroutine computes, and either takes
// the digests of, at a time.
const digestChunk = 16

// keptChainRows is the most rows whose buffers the writer keeps for the
// next append; a larger append has buffers of its own.
const keptChainRows = 4 * largeGroup

// start starts computing the chain values of envs, to be stored in
// stream as the events with consecutive seqs and versions from seq and
// version, following the event whose chain value is prev. envs must not
// change until done has returned, which must be called whatever happens
// in between. The previous append must be done.
func (c *rowChain) start(prev [store.ChainHashSize]byte, stream string, envs []events.Envelope, seq, version uint64) *rowChain {
	c = c.reset(prev, stream, envs, seq, version, len(envs) > largeGroup && runtime.GOMAXPROCS(0) > 1)
	if c.helped {
		go c.help(c.gen)
	}
	return c
}

// reset readies c, or a rowChain of its own for a large append, for the
// append start starts, to be computed with the goroutine when helped.
func (c *rowChain) reset(prev [store.ChainHashSize]byte, stream string, envs []events.Envelope, seq, version uint64, helped bool) *rowChain {
	n := len(envs)
	if n > keptChainRows {
		c = &rowChain{}
	}
	// A goroutine of an earlier append that has not yet seen it is done
	// reads gen under mu, and stops.
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if len(c.ownVals) < n {
		c.ahead, c.aheadVals = boxedValues(n)
		c.own, c.ownVals = boxedValues(n)
		c.mine = make([]bool, n)
		c.sums = make([]byte, store.ChainHashSize*n)
		c.ready = make([]atomic.Bool, (n+digestChunk-1)/digestChunk)
	}
	c.envs, c.stream, c.seq, c.version = envs, stream, seq, version
	c.first, c.prev = prev, prev
	c.n, c.total, c.sideFrom, c.chunk = 0, n, -1, 0
	for k := range c.chunks() {
		c.ready[k].Store(false)
	}
	clear(c.mine[:n])
	c.next.Store(0)
	c.stepped.Store(0)
	c.helped = helped
	return c
}

// boxedValues returns a buffer of n values and each boxed.
func boxedValues(n int) ([]byte, []any) {
	buf, vals := make([]byte, store.ChainHashSize*n), make([]any, n)
	for i := range vals {
		vals[i] = buf[i*store.ChainHashSize : (i+1)*store.ChainHashSize : (i+1)*store.ChainHashSize]
	}
	return buf, vals
}

func (c *rowChain) chunks() int { return (c.total + digestChunk - 1) / digestChunk }

// help computes the values of append gen chunk by chunk while there are
// any left and the append is not done.
func (c *rowChain) help(gen uint64) {
	for c.helpChunk(gen) {
	}
}

// helpChunk computes the goroutine's next chunk of append gen, and
// reports whether there may be more.
func (c *rowChain) helpChunk(gen uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.chunk
	if c.gen != gen || k >= c.chunks() {
		return false
	}
	c.chunk++
	from, to := k*digestChunk, min((k+1)*digestChunk, c.total)
	var sums []byte
	switch {
	case c.next.CompareAndSwap(int64(k), int64(k+1)):
		sums = c.sums[from*store.ChainHashSize : to*store.ChainHashSize]
		c.digests(k, sums)
		c.ready[k].Store(true)
	case c.ready[k].Load():
		sums = c.sums[from*store.ChainHashSize : to*store.ChainHashSize]
	default: // the writer's, in progress
		if c.helpSide == nil {
			c.helpSide = make([]byte, digestChunk*store.ChainHashSize)
		}
		sums = c.helpSide
		c.digests(k, sums)
	}
	prev := c.first
	if from > 0 {
		prev = [store.ChainHashSize]byte(c.ahead[(from-1)*store.ChainHashSize:])
	}
	for i := from; i < to; i++ {
		d := sums[(i-from)*store.ChainHashSize:]
		prev = store.ChainStep(prev, c.seq+uint64(i), c.version+uint64(i), [store.ChainHashSize]byte(d))
		copy(c.ahead[i*store.ChainHashSize:], prev[:])
	}
	c.stepped.Store(int64(to))
	return true
}

// digests writes chunk k's content digests to dst.
func (c *rowChain) digests(k int, dst []byte) {
	from, to := k*digestChunk, min((k+1)*digestChunk, c.total)
	for i := from; i < to; i++ {
		e := c.envs[i]
		e.Stream = c.stream
		sum := store.ContentDigest(e)
		copy(dst[(i-from)*store.ChainHashSize:], sum[:])
	}
}

// digest returns row i's content digest, for the writer, which asks for
// the rows in order.
func (c *rowChain) digest(i int) [store.ChainHashSize]byte {
	k := i / digestChunk
	// Take every chunk up to k not taken yet.
	for t := int(c.next.Load()); t <= k; t = int(c.next.Load()) {
		if c.next.CompareAndSwap(int64(t), int64(t+1)) {
			c.digests(t, c.sums[t*digestChunk*store.ChainHashSize:])
			c.ready[t].Store(true)
		}
	}
	if c.ready[k].Load() {
		return [store.ChainHashSize]byte(c.sums[i*store.ChainHashSize:])
	}
	// Taken by the goroutine, not finished: computed again on the side.
	if c.sideFrom != k*digestChunk {
		if c.side == nil {
			c.side = make([]byte, digestChunk*store.ChainHashSize)
		}
		c.sideFrom = k * digestChunk
		c.digests(k, c.side)
	}
	return [store.ChainHashSize]byte(c.side[(i-c.sideFrom)*store.ChainHashSize:])
}

// wait returns once insert may bind the first n rows' values: those the
// goroutine has computed, and the writer's for the others.
func (c *rowChain) wait(n int) {
	if c.n >= n {
		return
	}
	if c.helped {
		if s := min(int(c.stepped.Load()), n); s > c.n {
			c.n = s
			c.prev = [store.ChainHashSize]byte(c.ahead[(s-1)*store.ChainHashSize:])
		}
	}
	for ; c.n < n; c.n++ {
		i := c.n
		c.prev = store.ChainStep(c.prev, c.seq+uint64(i), c.version+uint64(i), c.digest(i))
		copy(c.own[i*store.ChainHashSize:], c.prev[:])
		c.mine[i] = true
	}
}

// value returns row i's chain value, boxed, once wait has returned for
// it.
func (c *rowChain) value(i int) any {
	if c.mine[i] {
		return c.ownVals[i]
	}
	return c.aheadVals[i]
}

// done computes the values insert has not asked for, waits until the
// goroutine no longer touches the append and returns the last value.
func (c *rowChain) done() [store.ChainHashSize]byte {
	c.wait(c.total)
	c.mu.Lock() // the goroutine's chunk in progress is done
	c.gen++     // and the goroutine stops
	c.envs = nil
	c.mu.Unlock()
	c.helped = false
	return c.prev
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
