package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
)

// Group commit. Every Append queues a request and then waits for the first
// of three things: its request is done, its context is done, or no group
// is being written. The one that finds no group being written leads: it
// takes every request queued so far and writes them in one transaction,
// then completes them all. So appends that arrive while a commit is in
// flight share the next commit.
//
// The transaction is one pipeline of statements, sent in a single round
// trip and run by the server as one implicit transaction that commits at
// its end: the counter lock, then one append statement per request (see
// appendSQL). A version conflict is not an error to the server: that
// request's statement writes nothing and reports the stream's version, and
// the others go on. A request whose context is done before a leader takes
// it is removed from the queue and writes nothing; once taken, it is
// committed with the rest or fails with the transaction. The leader's
// statements run without its context's cancellation: cancelling a query
// would close the connection and leave the commit's outcome unknown.

// appendRequest is one Append waiting for, or written by, a group
// transaction. out and err are set before done is closed.
type appendRequest struct {
	ctx      context.Context
	stream   string
	expected int64
	envs     []events.Envelope

	out  []events.Envelope
	err  error
	done chan struct{}
}

// appendGroup queues rs together (one leader takes them all, in order, into
// one transaction), waits for that transaction and leaves each request's
// result in it. When ctx is done before a leader took them, they are
// removed and each fails with ctx's error.
func (db *DB) appendGroup(ctx context.Context, rs []*appendRequest) {
	db.qmu.Lock()
	db.queue = append(db.queue, rs...)
	queued := len(db.queue)
	db.qmu.Unlock()
	if db.testHookQueued != nil {
		db.testHookQueued(queued)
	}
	// The requests are closed in queue order by the leader that took them,
	// so the last one's done means all are.
	last := rs[len(rs)-1]
	select {
	case <-last.done:
	case db.wsem <- struct{}{}:
		db.lead()
		// Either these requests were in the group, or an earlier leader
		// wrote them and closed done before it let go of wsem.
		<-last.done
	case <-ctx.Done():
		if db.dequeue(rs) {
			for _, r := range rs {
				r.err = ctx.Err()
			}
			return
		}
		<-last.done // a leader has them: committed, or failed with the group
	}
}

// dequeue removes rs from the queue and reports whether they were still
// there, that is, not yet taken by a leader (a leader takes all of them or
// none).
func (db *DB) dequeue(rs []*appendRequest) bool {
	db.qmu.Lock()
	defer db.qmu.Unlock()
	for i, q := range db.queue {
		if q == rs[0] {
			db.queue = append(db.queue[:i], db.queue[i+len(rs):]...)
			return true
		}
	}
	return false
}

// lead takes every queued request, writes them in one transaction and
// completes each. The caller holds a token in wsem; lead returns it after
// completing the requests.
func (db *DB) lead() {
	defer func() { <-db.wsem }()
	db.qmu.Lock()
	group := db.queue
	db.queue = nil
	db.qmu.Unlock()
	db.writeGroup(group)
	for _, r := range group {
		close(r.done)
	}
}

// writeGroup writes group in one transaction and sets each request's
// result. Requests whose context is done are left out with the context's
// error.
func (db *DB) writeGroup(group []*appendRequest) {
	var live []*appendRequest
	for _, r := range group {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	ctx := context.Background()
	err := db.writeTx(ctx, live)
	if err == nil {
		return
	}
	if len(live) > 1 && refusedData(err) {
		// The server refused one of the requests (a row behind the store's
		// back, say) and rolled back the rest with it. Write each on its
		// own, in order, so only the one at fault fails.
		for _, r := range live {
			if err := db.writeTx(ctx, []*appendRequest{r}); err != nil {
				r.out, r.err = nil, err
			}
		}
		return
	}
	for _, r := range live {
		r.out, r.err = nil, err
	}
}

// writeTx writes rs in one transaction: one pipeline, one round trip, one
// commit. It sets each request's result, a version conflict included, and
// returns an error when the transaction did not commit (or, the connection
// lost, may not have); the results are then void.
func (db *DB) writeTx(ctx context.Context, rs []*appendRequest) error {
	db.groupTxs.Add(1)
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return mapErr(err)
	}
	defer conn.Release()
	if db.testHookBeforeSend != nil {
		db.testHookBeforeSend(conn.Conn())
	}
	b := &pgx.Batch{}
	b.Queue(db.q.lock)
	for _, r := range rs {
		r.out, r.err = nil, nil
		db.queueAppend(b, r)
	}
	br := conn.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return fmt.Errorf("lock sequence counter: %w", mapErr(err))
	}
	for _, r := range rs {
		if err := r.scan(br.QueryRow()); err != nil {
			br.Close()
			return mapErr(err)
		}
	}
	// The implicit transaction commits at the end of the pipeline; Close
	// reads the server's answer to it.
	if err := br.Close(); err != nil {
		return fmt.Errorf("commit: %w", mapErr(err))
	}
	return nil
}

// queueAppend queues r's append statement on b: one event as plain
// values, more as arrays, one per column.
func (db *DB) queueAppend(b *pgx.Batch, r *appendRequest) {
	n := len(r.envs)
	var first, last int64
	if n > 0 {
		first, last = r.envs[0].Time.UnixNano(), r.envs[n-1].Time.UnixNano()
	}
	if n == 1 {
		e := r.envs[0]
		b.Queue(db.q.appendOne, r.stream, r.expected, int64(1), e.Type, int32(e.Schema), first,
			e.SessionID, e.CorrelationID, e.Host, notNil(e.Data), first, last)
		return
	}
	var (
		types    = make([]string, n)
		schemas  = make([]int32, n)
		times    = make([]int64, n)
		sessions = make([]string, n)
		corrs    = make([]string, n)
		hosts    = make([]string, n)
		data     = make([][]byte, n)
	)
	for i, e := range r.envs {
		types[i], schemas[i], times[i] = e.Type, int32(e.Schema), e.Time.UnixNano()
		sessions[i], corrs[i], hosts[i] = e.SessionID, e.CorrelationID, e.Host
		data[i] = notNil(e.Data)
	}
	b.Queue(db.q.appendMany, r.stream, r.expected, int64(n), types, schemas, times, sessions, corrs, hosts, data, first, last)
}

// notNil returns data, or an empty slice for nil: the column is NOT NULL,
// and an empty bytea reads back empty.
func notNil(data []byte) []byte {
	if data == nil {
		return []byte{}
	}
	return data
}

// scan reads the result of r's append statement and sets r's result: the
// stored envelopes, or a version conflict.
func (r *appendRequest) scan(row pgx.Row) error {
	var (
		cur  int64
		base *int64
	)
	if err := row.Scan(&cur, &base); err != nil {
		return err
	}
	if r.expected != store.AnyVersion && r.expected != cur {
		r.err = fmt.Errorf("expected version %d, stream is at %d: %w", r.expected, cur, store.ErrVersionConflict)
		return nil
	}
	if len(r.envs) == 0 {
		return nil
	}
	if base == nil {
		return fmt.Errorf("append to %q wrote nothing at version %d", r.stream, cur)
	}
	out := make([]events.Envelope, len(r.envs))
	for i, e := range r.envs {
		e = e.Clone()
		e.Seq = uint64(*base) + uint64(i) + 1
		e.Stream = r.stream
		e.Version = uint64(cur) + uint64(i) + 1
		e.Time = e.Time.UTC()
		out[i] = e
	}
	r.out = out
	return nil
}
