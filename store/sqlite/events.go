package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/internal/paging"
)

// pageSize is how many rows a read fetches per query.
const pageSize = 512

const eventColumns = `seq, stream, version, type, schema, time, session_id, correlation_id, host, data`

// statements are prepared once per store: the writer's on the held writer
// connection, the readers' on the reader pool (database/sql prepares those
// again on each reader connection that runs them).
type statements struct {
	// Writer.
	chainValue   *sql.Stmt // the chain value stored with a seq
	saveSnapshot *sql.Stmt
	// Readers.
	readAll      *sql.Stmt
	readStream   *sql.Stmt
	readType     *sql.Stmt
	streams      *sql.Stmt
	lastSeq      *sql.Stmt
	loadSnapshot *sql.Stmt
	readChain    *sql.Stmt // nil before chainVersion
	chainHead    *sql.Stmt // nil before chainVersion
}

func (s *statements) prepareWrites(ctx context.Context, w preparer) error {
	return prepare(ctx, w, map[**sql.Stmt]string{
		&s.chainValue: `SELECT hash FROM events WHERE seq = ?`,
		&s.saveSnapshot: `INSERT INTO snapshots (name, seq, data) VALUES (?1, ?2, ?3)
			ON CONFLICT (name) DO UPDATE SET seq = ?2, data = ?3 WHERE ?2 >= snapshots.seq`,
	})
}

// prepareReads prepares the reads of a file at schema version v: before
// version 3 its events have no host column, and read as of no host.
func (s *statements) prepareReads(ctx context.Context, r preparer, v int) error {
	cols := eventColumns
	if v < 3 {
		cols = strings.Replace(cols, "host", "'' AS host", 1)
	}
	qs := map[**sql.Stmt]string{
		&s.readAll:      `SELECT ` + cols + ` FROM events WHERE seq >= ? ORDER BY seq LIMIT ?`,
		&s.readStream:   `SELECT ` + cols + ` FROM events WHERE stream = ? AND version >= ? ORDER BY version LIMIT ?`,
		&s.readType:     `SELECT ` + cols + ` FROM events WHERE type = ? AND seq >= ? ORDER BY seq LIMIT ?`,
		&s.streams:      `SELECT stream, version, first_seq, last_seq, created, updated FROM streams WHERE first_seq > ? ORDER BY first_seq LIMIT ?`,
		&s.lastSeq:      `SELECT COALESCE(MAX(seq), 0) FROM events`,
		&s.loadSnapshot: `SELECT seq, data FROM snapshots WHERE name = ?`,
	}
	if v >= chainVersion {
		qs[&s.readChain] = `SELECT ` + eventColumns + `, hash FROM events WHERE seq >= ? ORDER BY seq LIMIT ?`
		qs[&s.chainHead] = `SELECT last_seq, last_hash FROM streams ORDER BY last_seq DESC LIMIT 1`
		if v < headVersion {
			qs[&s.chainHead] = `SELECT seq, hash FROM chain_head WHERE one = 1`
		}
	}
	return prepare(ctx, r, qs)
}

// preparer is a *sql.DB or a *sql.Conn.
type preparer interface {
	PrepareContext(context.Context, string) (*sql.Stmt, error)
}

func prepare(ctx context.Context, db preparer, qs map[**sql.Stmt]string) error {
	for dst, q := range qs {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", q, mapErr(err))
		}
		*dst = st
	}
	return nil
}

func (s *statements) close() error {
	var errs []error
	for _, st := range []*sql.Stmt{s.chainValue, s.saveSnapshot,
		s.readAll, s.readStream, s.readType, s.streams, s.lastSeq, s.loadSnapshot, s.readChain, s.chainHead} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// Append implements [store.Store.Append]. Its events are written in one
// transaction, which appends queued at the same time share (see [DB]). It
// returns an error for an empty stream name, an expected version below
// [store.AnyVersion] or an event whose Time is zero or outside the years
// 1678–2262, and [store.ErrReadOnly] on a read-only store; in each case it
// stores nothing. Times are stored as Unix nanoseconds and read back in UTC.
func (db *DB) Append(ctx context.Context, stream string, expected int64, envs []events.Envelope) ([]events.Envelope, error) {
	return db.commits.Append(ctx, stream, expected, envs)
}

// AppendBatch implements [store.BatchAppender]: the requests are written in
// one transaction (with appends queued at the same time), each in its own
// savepoint, and committed once. Each is checked as [DB.Append] checks it.
func (db *DB) AppendBatch(ctx context.Context, reqs []store.AppendRequest) []store.AppendResult {
	return db.commits.AppendBatch(ctx, reqs)
}

// ReadStream implements [store.Store.ReadStream].
func (db *DB) ReadStream(ctx context.Context, stream string, fromVersion uint64) iter.Seq2[events.Envelope, error] {
	op := fmt.Sprintf("read stream %q", stream)
	return paging.Read(ctx, "sqlite: "+op, pageSize, max(fromVersion, 1),
		func(from uint64) ([]events.Envelope, error) {
			return db.eventPage(ctx, op, db.stmts.readStream, from, stream)
		},
		func(last events.Envelope) (uint64, bool) { return last.Version + 1, true })
}

// ReadAll implements [store.Store.ReadAll].
func (db *DB) ReadAll(ctx context.Context, fromSeq uint64) iter.Seq2[events.Envelope, error] {
	const op = "read all"
	return paging.Read(ctx, "sqlite: "+op, pageSize, max(fromSeq, 1),
		func(from uint64) ([]events.Envelope, error) { return db.eventPage(ctx, op, db.stmts.readAll, from, "") },
		nextSeq)
}

// ReadType implements [store.TypeReader] through the index on (type, seq).
func (db *DB) ReadType(ctx context.Context, typ string, fromSeq, toSeq uint64) iter.Seq2[events.Envelope, error] {
	op := fmt.Sprintf("read type %q", typ)
	if max(fromSeq, 1) > toSeq {
		return func(func(events.Envelope, error) bool) {}
	}
	return paging.Read(ctx, "sqlite: "+op, pageSize, max(fromSeq, 1),
		func(from uint64) ([]events.Envelope, error) {
			page, err := db.eventPage(ctx, op, db.stmts.readType, from, typ)
			if i := slices.IndexFunc(page, func(e events.Envelope) bool { return e.Seq > toSeq }); i >= 0 {
				page = page[:i] // a short page: the read ends with it
			}
			return page, err
		},
		func(last events.Envelope) (uint64, bool) { return last.Seq + 1, last.Seq < toSeq })
}

// nextSeq is the key of the page after one that ended with last, for the
// reads in sequence order.
func nextSeq(last events.Envelope) (uint64, bool) { return last.Seq + 1, true }

// eventPage runs st (readAll, or readStream or readType with key) for the
// page starting at from and returns its rows. It holds a reader connection only while it runs.
func (db *DB) eventPage(ctx context.Context, op string, st *sql.Stmt, from uint64, key string) ([]events.Envelope, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	if err := db.acquire(false); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	defer db.release()
	if from > math.MaxInt64 {
		return nil, nil // beyond any stored seq or version
	}
	var rows *sql.Rows
	var err error
	if st == db.stmts.readStream || st == db.stmts.readType {
		rows, err = st.QueryContext(ctx, key, int64(from), pageSize)
	} else {
		rows, err = st.QueryContext(ctx, int64(from), pageSize)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, mapErr(err))
	}
	defer rows.Close()
	page := make([]events.Envelope, 0, pageSize)
	for rows.Next() {
		var (
			e               events.Envelope
			seq, ver, nanos int64
			data            []byte
		)
		if err := rows.Scan(&seq, &e.Stream, &ver, &e.Type, &e.Schema, &nanos, &e.SessionID, &e.CorrelationID, &e.Host, &data); err != nil {
			return nil, fmt.Errorf("sqlite: %s: %w", op, err)
		}
		e.Seq, e.Version, e.Time, e.Data = uint64(seq), uint64(ver), time.Unix(0, nanos).UTC(), data
		page = append(page, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, mapErr(err))
	}
	return page, nil
}

// Streams implements [store.Store.Streams].
func (db *DB) Streams(ctx context.Context) iter.Seq2[store.StreamInfo, error] {
	return paging.Read(ctx, "sqlite: streams", pageSize, 0,
		func(after uint64) ([]store.StreamInfo, error) { return db.streamPage(ctx, int64(after)) },
		func(last store.StreamInfo) (uint64, bool) { return last.FirstSeq, true })
}

func (db *DB) streamPage(ctx context.Context, after int64) ([]store.StreamInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: streams: %w", err)
	}
	if err := db.acquire(false); err != nil {
		return nil, fmt.Errorf("sqlite: streams: %w", err)
	}
	defer db.release()
	rows, err := db.stmts.streams.QueryContext(ctx, after, pageSize)
	if err != nil {
		return nil, fmt.Errorf("sqlite: streams: %w", mapErr(err))
	}
	defer rows.Close()
	var page []store.StreamInfo
	for rows.Next() {
		var (
			info                   store.StreamInfo
			ver, first, last, c, u int64
		)
		if err := rows.Scan(&info.Stream, &ver, &first, &last, &c, &u); err != nil {
			return nil, fmt.Errorf("sqlite: streams: %w", err)
		}
		info.Version, info.FirstSeq, info.LastSeq = uint64(ver), uint64(first), uint64(last)
		info.Created, info.Updated = time.Unix(0, c).UTC(), time.Unix(0, u).UTC()
		page = append(page, info)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: streams: %w", mapErr(err))
	}
	return page, nil
}

// LastSeq implements [store.Store.LastSeq].
func (db *DB) LastSeq(ctx context.Context) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("sqlite: last seq: %w", err)
	}
	if err := db.acquire(false); err != nil {
		return 0, fmt.Errorf("sqlite: last seq: %w", err)
	}
	defer db.release()
	var n int64
	if err := db.stmts.lastSeq.QueryRowContext(ctx).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: last seq: %w", mapErr(err))
	}
	return uint64(n), nil
}

// SaveSnapshot implements [store.Snapshotter.SaveSnapshot] in one
// statement, so racing saves cannot let an older seq win. seq must fit in
// an int64, as every stored sequence does.
func (db *DB) SaveSnapshot(ctx context.Context, name string, seq uint64, data []byte) error {
	op := fmt.Sprintf("save snapshot %q", name)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	if err := db.acquire(true); err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	defer db.release()
	if seq > math.MaxInt64 {
		return fmt.Errorf("sqlite: %s: seq %d does not fit in int64", op, seq)
	}
	if data == nil {
		data = []byte{}
	}
	err := db.withWriter(ctx, func(bg context.Context) error {
		_, err := db.stmts.saveSnapshot.ExecContext(bg, name, int64(seq), data)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, mapErr(err))
	}
	return nil
}

// LoadSnapshot implements [store.Snapshotter.LoadSnapshot].
func (db *DB) LoadSnapshot(ctx context.Context, name string) (uint64, []byte, error) {
	op := fmt.Sprintf("load snapshot %q", name)
	if err := ctx.Err(); err != nil {
		return 0, nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	if err := db.acquire(false); err != nil {
		return 0, nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	defer db.release()
	var (
		seq  int64
		data []byte
	)
	err := db.stmts.loadSnapshot.QueryRowContext(ctx, name).Scan(&seq, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil, fmt.Errorf("sqlite: %s: %w", op, store.ErrNotFound)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("sqlite: %s: %w", op, mapErr(err))
	}
	return uint64(seq), data, nil
}
