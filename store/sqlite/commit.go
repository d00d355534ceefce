package sqlite

import (
	"context"
	"database/sql"
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
	err := db.inTx(bg, func() error {
		// The chain head after the group: its last event written.
		var (
			head     uint64
			headHash [store.ChainHashSize]byte
		)
		if len(live) == 1 {
			// Alone in the transaction: its failure rolls back nothing but
			// itself, so it needs no savepoint.
			r := live[0]
			if r.Out, headHash, r.Err = db.appendRows(bg, r.Stream, r.Expected, r.Envs); r.Err != nil {
				return r.Err
			}
			if len(r.Out) > 0 {
				head = r.Out[len(r.Out)-1].Seq
			}
		} else {
			for _, r := range live {
				last, err := db.appendInSavepoint(bg, r)
				if err != nil {
					return err
				}
				if r.Err == nil && len(r.Out) > 0 {
					head, headHash = r.Out[len(r.Out)-1].Seq, last
				}
			}
		}
		if head > 0 {
			if err := db.writeHead(bg, head, headHash); err != nil {
				return err
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
		if r.Err == nil {
			r.Out, r.Err = nil, err
		}
	}
}

// appendInSavepoint writes r inside a savepoint of the open transaction and
// returns the chain value of its last event. If r fails, the savepoint is
// rolled back and r gets the error; the returned error is one that breaks
// the whole transaction.
func (db *DB) appendInSavepoint(ctx context.Context, r *groupcommit.Request) ([store.ChainHashSize]byte, error) {
	var last [store.ChainHashSize]byte
	if _, err := db.wconn.ExecContext(ctx, "SAVEPOINT append"); err != nil {
		return last, fmt.Errorf("savepoint: %w", mapErr(err))
	}
	out, last, err := db.appendRows(ctx, r.Stream, r.Expected, r.Envs)
	if err != nil {
		r.Err = err
		if _, err := db.wconn.ExecContext(ctx, "ROLLBACK TO append"); err != nil {
			return last, fmt.Errorf("rollback to savepoint: %w", mapErr(err))
		}
	}
	if _, err := db.wconn.ExecContext(ctx, "RELEASE append"); err != nil {
		return last, fmt.Errorf("release savepoint: %w", mapErr(err))
	}
	r.Out = out
	return last, nil
}

// appendRows writes envs to stream after checking expected, in the open
// transaction, and returns the stored envelopes and the chain value of the
// last.
func (db *DB) appendRows(ctx context.Context, stream string, expected int64, envs []events.Envelope) ([]events.Envelope, [store.ChainHashSize]byte, error) {
	var (
		cur      sql.NullInt64
		last     int64
		prev     []byte
		lastHash [store.ChainHashSize]byte
	)
	if err := db.stmts.positions.QueryRowContext(ctx, stream).Scan(&cur, &last, &prev); err != nil {
		return nil, lastHash, mapErr(err)
	}
	if expected != store.AnyVersion && expected != cur.Int64 {
		return nil, lastHash, fmt.Errorf("expected version %d, stream is at %d: %w", expected, cur.Int64, store.ErrVersionConflict)
	}
	if len(envs) == 0 {
		return nil, lastHash, nil
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
	hashes := make([][]byte, len(out))
	lastHash = chainRows(toHash(prev), out, hashes)
	if err := db.insert(ctx, out, hashes); err != nil {
		return nil, lastHash, err
	}
	first, end := out[0], out[len(out)-1]
	if _, err := db.stmts.upsertStream.ExecContext(ctx, stream, int64(end.Version),
		int64(first.Seq), int64(end.Seq), first.Time.UnixNano(), end.Time.UnixNano()); err != nil {
		return nil, lastHash, fmt.Errorf("update stream: %w", mapErr(err))
	}
	return out, lastHash, nil
}
