package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
)

// Group commit. Every Append queues a request and then waits for the first
// of three things: its request is done, its context is done, or the writer
// connection is free. The one that gets the writer leads: it takes every
// request queued so far and writes them in one transaction, each inside its
// own savepoint, then commits once. So appends that arrive while a commit is
// in flight share the next commit and its flush of the log, and one flush
// acknowledges them all.
//
// A request fails on its own (a version conflict, say) by rolling back to its
// savepoint; the others in the transaction go on. A request whose context is
// done before a leader takes it is removed from the queue and writes nothing;
// once taken, it is committed with the rest or fails with the transaction.
// The leader's statements run without its context's cancellation, like every
// write.

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
		// wrote them and closed done before it freed the writer.
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
// completes each. The caller holds the writer (a token in wsem); lead frees
// it after completing the requests.
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

// writeGroup writes group in one transaction and sets each request's result.
// Requests whose context is done are left out with the context's error.
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
	bg := context.Background()
	db.groupTxs.Add(1)
	err := db.inTx(bg, func() error {
		if len(live) == 1 {
			// Alone in the transaction: its failure rolls back nothing but
			// itself, so it needs no savepoint.
			r := live[0]
			if r.out, r.err = db.appendRows(bg, r.stream, r.expected, r.envs); r.err != nil {
				return r.err
			}
		} else {
			for _, r := range live {
				if err := db.appendInSavepoint(bg, r); err != nil {
					return err
				}
			}
		}
		if db.testHookInTx != nil {
			return db.testHookInTx()
		}
		return nil
	})
	if err == nil {
		return
	}
	for _, r := range live {
		if r.err == nil {
			r.out, r.err = nil, err
		}
	}
}

// appendInSavepoint writes r inside a savepoint of the open transaction. If
// r fails, the savepoint is rolled back and r gets the error; the returned
// error is one that breaks the whole transaction.
func (db *DB) appendInSavepoint(ctx context.Context, r *appendRequest) error {
	if _, err := db.wconn.ExecContext(ctx, "SAVEPOINT append"); err != nil {
		return fmt.Errorf("savepoint: %w", mapErr(err))
	}
	out, err := db.appendRows(ctx, r.stream, r.expected, r.envs)
	if err != nil {
		r.err = err
		if _, err := db.wconn.ExecContext(ctx, "ROLLBACK TO append"); err != nil {
			return fmt.Errorf("rollback to savepoint: %w", mapErr(err))
		}
	}
	if _, err := db.wconn.ExecContext(ctx, "RELEASE append"); err != nil {
		return fmt.Errorf("release savepoint: %w", mapErr(err))
	}
	r.out = out
	return nil
}

// appendRows writes envs to stream after checking expected, in the open
// transaction, and returns the stored envelopes.
func (db *DB) appendRows(ctx context.Context, stream string, expected int64, envs []events.Envelope) ([]events.Envelope, error) {
	var (
		cur  sql.NullInt64
		last int64
	)
	if err := db.stmts.positions.QueryRowContext(ctx, stream).Scan(&cur, &last); err != nil {
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
	if err := db.insert(ctx, out); err != nil {
		return nil, err
	}
	first, end := out[0], out[len(out)-1]
	if _, err := db.stmts.upsertStream.ExecContext(ctx, stream, int64(end.Version),
		int64(first.Seq), int64(end.Seq), first.Time.UnixNano(), end.Time.UnixNano()); err != nil {
		return nil, fmt.Errorf("update stream: %w", mapErr(err))
	}
	return out, nil
}
