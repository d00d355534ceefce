package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcplife/mcplife/store"
)

// transcriptVersion is the schema version that added the transcripts
// table.
const transcriptVersion = 4

var _ store.TranscriptStore = (*DB)(nil)

// AppendTranscript implements [store.TranscriptStore.AppendTranscript] in
// one transaction; each line's Seq follows the session's last. Writers of
// one session in several processes are ordered by a transaction-scoped
// advisory lock on the session.
func (db *DB) AppendTranscript(ctx context.Context, lines []store.TranscriptLine) error {
	const op = "append transcript"
	if len(lines) == 0 {
		return nil
	}
	if err := db.acquire(true); err != nil {
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	defer db.release()
	for _, l := range lines {
		for _, f := range []struct{ name, v string }{{"session", l.Session}, {"server", l.Server}, {"message", l.Message}} {
			if err := checkText("transcript "+f.name, f.v); err != nil {
				return fmt.Errorf("postgres: %s: %w", op, err)
			}
		}
	}
	tbl := pgx.Identifier{db.schema, "transcripts"}.Sanitize()
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		last := map[string]int64{}
		for i := range lines {
			l := &lines[i]
			n, ok := last[l.Session]
			if !ok {
				if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 7297))`, db.schema+"/"+l.Session); err != nil {
					return err
				}
				if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(seq), 0) FROM `+tbl+` WHERE session_id = $1`, l.Session).Scan(&n); err != nil {
					return err
				}
			}
			n++
			last[l.Session] = n
			if _, err := tx.Exec(ctx, `INSERT INTO `+tbl+` (session_id, seq, server, time, direction, message, cut, dropped, dropped_bytes)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
				l.Session, n, l.Server, l.Time.UnixNano(), l.Direction, l.Message, l.Cut, l.Dropped, l.DroppedBytes); err != nil {
				return err
			}
			l.Seq = uint64(n)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: %s: %w", op, mapErr(err))
	}
	return nil
}

// ReadTranscript implements [store.TranscriptStore.ReadTranscript]. A
// schema of an older version (opened read-only) has no transcript.
func (db *DB) ReadTranscript(ctx context.Context, session string) ([]store.TranscriptLine, error) {
	const op = "read transcript"
	if err := db.acquire(false); err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", op, err)
	}
	defer db.release()
	if db.onDisk < transcriptVersion {
		return nil, nil
	}
	tbl := pgx.Identifier{db.schema, "transcripts"}.Sanitize()
	rows, err := db.pool.Query(ctx, `SELECT seq, server, time, direction, message, cut, dropped, dropped_bytes
		FROM `+tbl+` WHERE session_id = $1 ORDER BY seq`, session)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", op, mapErr(err))
	}
	defer rows.Close()
	var out []store.TranscriptLine
	for rows.Next() {
		l := store.TranscriptLine{Session: session}
		var seq, t int64
		if err := rows.Scan(&seq, &l.Server, &t, &l.Direction, &l.Message, &l.Cut, &l.Dropped, &l.DroppedBytes); err != nil {
			return nil, fmt.Errorf("postgres: %s: %w", op, mapErr(err))
		}
		l.Seq, l.Time = uint64(seq), time.Unix(0, t).UTC()
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", op, mapErr(err))
	}
	return out, nil
}
