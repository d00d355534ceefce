package postgres

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/internal/paging"
)

// checkAppend applies [store.CheckAppend] and refuses text PostgreSQL
// cannot store in a text column (a NUL byte, invalid UTF-8), so that such
// an append fails on its own instead of inside a group transaction.
func checkAppend(stream string, expected int64, envs []events.Envelope) error {
	if err := store.CheckAppend("postgres", stream, expected, envs); err != nil {
		return err
	}
	if err := checkText("stream name", stream); err != nil {
		return fmt.Errorf("postgres: append %q: %w", stream, err)
	}
	for i, e := range envs {
		for _, f := range []struct{ name, s string }{
			{"type", e.Type}, {"session id", e.SessionID}, {"correlation id", e.CorrelationID}, {"host", e.Host},
		} {
			if err := checkText(f.name, f.s); err != nil {
				return fmt.Errorf("postgres: append %q: event %d: %w", stream, i, err)
			}
		}
		if e.Schema < math.MinInt32 || e.Schema > math.MaxInt32 {
			return fmt.Errorf("postgres: append %q: event %d: schema %d does not fit in an integer column", stream, i, e.Schema)
		}
	}
	return nil
}

func checkText(what, s string) error {
	if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
		return fmt.Errorf("%s %q holds a NUL byte or invalid UTF-8", what, s)
	}
	return nil
}

// Append implements [store.Store.Append]. Its events are written in one
// transaction, which appends queued at the same time share (see [DB]). It
// returns an error for an empty stream name, an expected version below
// [store.AnyVersion], an event whose Time is zero or outside the years
// 1678–2262, or text a PostgreSQL text column cannot hold (a NUL byte,
// invalid UTF-8), and [store.ErrReadOnly] on a read-only store; in each
// case it stores nothing. Times are stored as Unix nanoseconds and read
// back in UTC.
func (db *DB) Append(ctx context.Context, stream string, expected int64, envs []events.Envelope) ([]events.Envelope, error) {
	return db.commits.Append(ctx, stream, expected, envs)
}

// AppendBatch implements [store.BatchAppender]: the requests are written in
// one transaction (with appends queued at the same time) and committed
// once. Each is checked as [DB.Append] checks it.
func (db *DB) AppendBatch(ctx context.Context, reqs []store.AppendRequest) []store.AppendResult {
	return db.commits.AppendBatch(ctx, reqs)
}

// ReadStream implements [store.Store.ReadStream].
func (db *DB) ReadStream(ctx context.Context, stream string, fromVersion uint64) iter.Seq2[events.Envelope, error] {
	op := fmt.Sprintf("read stream %q", stream)
	return paging.Read(ctx, "postgres: "+op, pageSize, max(fromVersion, 1),
		func(from uint64) ([]events.Envelope, error) {
			return db.eventPage(ctx, op, db.q.readStream, from, stream)
		},
		func(last events.Envelope) (uint64, bool) { return last.Version + 1, true })
}

// ReadAll implements [store.Store.ReadAll].
func (db *DB) ReadAll(ctx context.Context, fromSeq uint64) iter.Seq2[events.Envelope, error] {
	const op = "read all"
	return paging.Read(ctx, "postgres: "+op, pageSize, max(fromSeq, 1),
		func(from uint64) ([]events.Envelope, error) { return db.eventPage(ctx, op, db.q.readAll, from) },
		func(last events.Envelope) (uint64, bool) { return last.Seq + 1, true })
}

// ReadType implements [store.TypeReader] through the index on (type, seq).
func (db *DB) ReadType(ctx context.Context, typ string, fromSeq, toSeq uint64) iter.Seq2[events.Envelope, error] {
	op := fmt.Sprintf("read type %q", typ)
	if max(fromSeq, 1) > toSeq {
		return func(func(events.Envelope, error) bool) {}
	}
	to := int64(min(toSeq, math.MaxInt64))
	return paging.Read(ctx, "postgres: "+op, pageSize, max(fromSeq, 1),
		func(from uint64) ([]events.Envelope, error) {
			return db.eventPage(ctx, op, db.q.readType, from, typ, to)
		},
		func(last events.Envelope) (uint64, bool) { return last.Seq + 1, last.Seq < toSeq })
}

// eventPage runs sql, one of the event reads, for the page starting at
// from (a seq or a version) with the read's further arguments, and returns
// its rows. It holds a pooled connection only while it runs.
func (db *DB) eventPage(ctx context.Context, op, sql string, from uint64, args ...any) ([]events.Envelope, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", op, err)
	}
	if err := db.acquire(false); err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", op, err)
	}
	defer db.release()
	if from > math.MaxInt64 {
		return nil, nil // beyond any stored seq or version
	}
	rows, err := db.pool.Query(ctx, sql, append([]any{int64(from), pageSize}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", op, mapErr(err))
	}
	page := make([]events.Envelope, 0, pageSize)
	var (
		e               events.Envelope
		seq, ver, nanos int64
		data            []byte
	)
	// pgx scans each row's bytea into a new slice, so no two events share
	// their data.
	_, err = pgx.ForEachRow(rows, []any{&seq, &e.Stream, &ver, &e.Type, &e.Schema, &nanos, &e.SessionID, &e.CorrelationID, &e.Host, &data}, func() error {
		e.Seq, e.Version, e.Time, e.Data = uint64(seq), uint64(ver), time.Unix(0, nanos).UTC(), data
		page = append(page, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", op, mapErr(err))
	}
	return page, nil
}

// Streams implements [store.Store.Streams].
func (db *DB) Streams(ctx context.Context) iter.Seq2[store.StreamInfo, error] {
	return paging.Read(ctx, "postgres: streams", pageSize, 0,
		func(after uint64) ([]store.StreamInfo, error) { return db.streamPage(ctx, int64(after)) },
		func(last store.StreamInfo) (uint64, bool) { return last.FirstSeq, true })
}

func (db *DB) streamPage(ctx context.Context, after int64) ([]store.StreamInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("postgres: streams: %w", err)
	}
	if err := db.acquire(false); err != nil {
		return nil, fmt.Errorf("postgres: streams: %w", err)
	}
	defer db.release()
	rows, err := db.pool.Query(ctx, db.q.streams, after, pageSize)
	if err != nil {
		return nil, fmt.Errorf("postgres: streams: %w", mapErr(err))
	}
	var (
		page                   []store.StreamInfo
		info                   store.StreamInfo
		ver, first, last, c, u int64
	)
	_, err = pgx.ForEachRow(rows, []any{&info.Stream, &ver, &first, &last, &c, &u}, func() error {
		info.Version, info.FirstSeq, info.LastSeq = uint64(ver), uint64(first), uint64(last)
		info.Created, info.Updated = time.Unix(0, c).UTC(), time.Unix(0, u).UTC()
		page = append(page, info)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: streams: %w", mapErr(err))
	}
	return page, nil
}

// LastSeq implements [store.Store.LastSeq]. It reads the sequence counter,
// which moves in the same transaction as the events it numbers.
func (db *DB) LastSeq(ctx context.Context) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("postgres: last seq: %w", err)
	}
	if err := db.acquire(false); err != nil {
		return 0, fmt.Errorf("postgres: last seq: %w", err)
	}
	defer db.release()
	var n int64
	if err := db.pool.QueryRow(ctx, db.q.lastSeq).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: last seq: %w", mapErr(err))
	}
	return uint64(n), nil
}

// SaveSnapshot implements [store.Snapshotter.SaveSnapshot] in one
// statement, so racing saves, from any process, cannot let an older seq
// win. seq must fit in an int64, as every stored sequence does.
func (db *DB) SaveSnapshot(ctx context.Context, name string, seq uint64, data []byte) error {
	op := fmt.Sprintf("save snapshot %q", name)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	if err := db.acquire(true); err != nil {
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	defer db.release()
	if seq > math.MaxInt64 {
		return fmt.Errorf("postgres: %s: seq %d does not fit in int64", op, seq)
	}
	if err := checkText("snapshot name", name); err != nil {
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	if data == nil {
		data = []byte{}
	}
	if _, err := db.pool.Exec(ctx, db.q.saveSnapshot, name, int64(seq), data); err != nil {
		return fmt.Errorf("postgres: %s: %w", op, mapErr(err))
	}
	return nil
}

// LoadSnapshot implements [store.Snapshotter.LoadSnapshot].
func (db *DB) LoadSnapshot(ctx context.Context, name string) (uint64, []byte, error) {
	op := fmt.Sprintf("load snapshot %q", name)
	if err := ctx.Err(); err != nil {
		return 0, nil, fmt.Errorf("postgres: %s: %w", op, err)
	}
	if err := db.acquire(false); err != nil {
		return 0, nil, fmt.Errorf("postgres: %s: %w", op, err)
	}
	defer db.release()
	var (
		seq  int64
		data []byte
	)
	err := db.pool.QueryRow(ctx, db.q.loadSnapshot, name).Scan(&seq, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil, fmt.Errorf("postgres: %s: %w", op, store.ErrNotFound)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("postgres: %s: %w", op, mapErr(err))
	}
	return uint64(seq), data, nil
}
