package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/internal/groupcommit"
)

// Group commit (see package groupcommit for the queue, its order and its
// cancellation). Here the writer token is held while a group is being
// written, so one group of this process is written at a time.
//
// A group's transaction is one pipeline of statements, sent in a single
// round trip and run by the server as one implicit transaction that
// commits at its end: the counter lock, then one append statement per
// request (see appendSQL). A version conflict is not an error to the
// server: that request's statement writes nothing and reports the stream's
// version, and the others go on. The statements run without the leader's
// context's cancellation: cancelling a query would close the connection
// and leave the commit's outcome unknown.

// writeGroup writes live in one transaction and sets each request's
// result. It is the committer's write function: one group at a time.
func (db *DB) writeGroup(live []*groupcommit.Request) {
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
			if err := db.writeTx(ctx, []*groupcommit.Request{r}); err != nil {
				r.Out, r.Err = nil, err
			}
		}
		return
	}
	for _, r := range live {
		r.Out, r.Err = nil, err
	}
}

// writeTx writes rs in one transaction: one pipeline, one round trip, one
// commit. It sets each request's result, a version conflict included, and
// returns an error when the transaction did not commit (or, the connection
// lost, may not have); the results are then void.
func (db *DB) writeTx(ctx context.Context, rs []*groupcommit.Request) error {
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
		r.Out, r.Err = nil, nil
		db.queueAppend(b, r)
	}
	br := conn.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return fmt.Errorf("lock sequence counter: %w", mapErr(err))
	}
	for _, r := range rs {
		if err := scanAppend(r, br.QueryRow()); err != nil {
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
func (db *DB) queueAppend(b *pgx.Batch, r *groupcommit.Request) {
	n := len(r.Envs)
	var first, last int64
	if n > 0 {
		first, last = r.Envs[0].Time.UnixNano(), r.Envs[n-1].Time.UnixNano()
	}
	// The content digests of the chain: the server completes each chain
	// value under the counter lock, once it knows the seqs and versions.
	digests := make([]byte, 0, n*store.ChainHashSize)
	for _, e := range r.Envs {
		e.Stream = r.Stream
		d := store.ContentDigest(e)
		digests = append(digests, d[:]...)
	}
	if n == 1 {
		e := r.Envs[0]
		b.Queue(db.q.appendOne, r.Stream, r.Expected, int64(1), e.Type, int32(e.Schema), first,
			e.SessionID, e.CorrelationID, e.Host, notNil(e.Data), first, last, digests)
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
	for i, e := range r.Envs {
		types[i], schemas[i], times[i] = e.Type, int32(e.Schema), e.Time.UnixNano()
		sessions[i], corrs[i], hosts[i] = e.SessionID, e.CorrelationID, e.Host
		data[i] = notNil(e.Data)
	}
	b.Queue(db.q.appendMany, r.Stream, r.Expected, int64(n), types, schemas, times, sessions, corrs, hosts, data, first, last, digests)
}

// notNil returns data, or an empty slice for nil: the column is NOT NULL,
// and an empty bytea reads back empty.
func notNil(data []byte) []byte {
	if data == nil {
		return []byte{}
	}
	return data
}

// scanAppend reads the result of r's append statement and sets r's result:
// the stored envelopes, or a version conflict.
func scanAppend(r *groupcommit.Request, row pgx.Row) error {
	var (
		cur  int64
		base *int64
	)
	if err := row.Scan(&cur, &base); err != nil {
		return err
	}
	if r.Expected != store.AnyVersion && r.Expected != cur {
		r.Err = fmt.Errorf("expected version %d, stream is at %d: %w", r.Expected, cur, store.ErrVersionConflict)
		return nil
	}
	if len(r.Envs) == 0 {
		return nil
	}
	if base == nil {
		return fmt.Errorf("append to %q wrote nothing at version %d", r.Stream, cur)
	}
	out := make([]events.Envelope, len(r.Envs))
	for i, e := range r.Envs {
		e = e.Clone()
		e.Seq = uint64(*base) + uint64(i) + 1
		e.Stream = r.Stream
		e.Version = uint64(cur) + uint64(i) + 1
		e.Time = e.Time.UTC()
		out[i] = e
	}
	r.Out = out
	return nil
}
