package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/internal/groupcommit"
)

// Group commit (see package groupcommit for the queue, its order and its
// cancellation). Here the writer token is wsem, held while a write uses the
// one writer connection, so a snapshot or a migration holds the queue back
// like a group in flight. A leader writes its group in one transaction,
// each request inside its own savepoint, then commits once: one flush of
// the log acknowledges them all. A request fails on its own (a version
// conflict, say) by rolling back to its savepoint; the others in the
// transaction go on. The statements run without the leader's context's
// cancellation, like every write.

// writeGroup writes live in one transaction and sets each request's result.
// It is the committer's write function: it runs with the writer held.
func (db *DB) writeGroup(live []*groupcommit.Request) {
	bg := context.Background()
	db.groupTxs.Add(1)
	// The log's last event as the transaction goes; db.tail once it commits.
	tail := db.tail
	err := db.inTx(bg, func() error {
		if len(live) == 1 {
			// Alone in the transaction: its failure rolls back nothing but
			// itself, so it needs no savepoint.
			r := live[0]
			if r.Out, r.Err = db.appendRows(bg, r.Stream, r.Expected, r.Envs, &tail); r.Err != nil {
				return r.Err
			}
		} else {
			for _, r := range live {
				if err := db.appendInSavepoint(bg, r, &tail); err != nil {
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
		db.tail = tail
		return
	}
	for _, r := range live {
		if r.Err == nil {
			r.Out, r.Err = nil, err
		}
	}
}

// appendInSavepoint writes r inside a savepoint of the open transaction,
// after the event in tail, which it moves to r's last event. If r fails,
// the savepoint is rolled back and r gets the error; the returned error is
// one that breaks the whole transaction.
func (db *DB) appendInSavepoint(ctx context.Context, r *groupcommit.Request, tail *chainTail) error {
	if _, err := db.wconn.ExecContext(ctx, "SAVEPOINT append"); err != nil {
		return fmt.Errorf("savepoint: %w", mapErr(err))
	}
	out, err := db.appendRows(ctx, r.Stream, r.Expected, r.Envs, tail)
	if err != nil {
		r.Err = err
		if _, err := db.wconn.ExecContext(ctx, "ROLLBACK TO append"); err != nil {
			return fmt.Errorf("rollback to savepoint: %w", mapErr(err))
		}
	}
	if _, err := db.wconn.ExecContext(ctx, "RELEASE append"); err != nil {
		return fmt.Errorf("release savepoint: %w", mapErr(err))
	}
	r.Out = out
	return nil
}

// appendRows writes envs to stream after checking expected, in the open
// transaction, and returns the stored envelopes. tail is the last event
// this writer knows of: the new events chain on its value when the log
// still ends with it, and on the value stored with the log's last event
// otherwise (another process appended). On success tail moves to the last
// event written; on failure it is left as it was.
func (db *DB) appendRows(ctx context.Context, stream string, expected int64, envs []events.Envelope, tail *chainTail) ([]events.Envelope, error) {
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
	prev := tail.hash
	if uint64(last) != tail.seq {
		var stored []byte
		if err := db.stmts.chainValue.QueryRowContext(ctx, last).Scan(&stored); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("read the chain value of seq %d: %w", last, mapErr(err))
		}
		prev = toHash(stored)
	}
	chain := db.chain.start(prev, stream, envs, uint64(last)+1, uint64(cur)+1)
	out := make([]events.Envelope, len(envs))
	for i, e := range envs {
		e = e.Clone()
		e.Seq = uint64(last) + uint64(i) + 1
		e.Stream = stream
		e.Version = uint64(cur) + uint64(i) + 1
		e.Time = e.Time.UTC()
		out[i] = e
	}
	err = db.insert(ctx, out, chain)
	lastHash := chain.done()
	if err != nil {
		return nil, err
	}
	// The stream's row, with the chain head: this append's last event.
	first, end := out[0], out[len(out)-1]
	if err := db.exec(ctx, db.wstmts.upsertStream, stream, int64(end.Version),
		int64(first.Seq), int64(end.Seq), first.Time.UnixNano(), end.Time.UnixNano(), lastHash[:]); err != nil {
		return nil, fmt.Errorf("update stream: %w", mapErr(err))
	}
	*tail = chainTail{seq: end.Seq, hash: lastHash}
	return out, nil
}
