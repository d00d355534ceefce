package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/mcplife/mcplife/store"
)

// transcriptVersion is the schema version that added the transcripts
// table.
const transcriptVersion = 6

var _ store.TranscriptStore = (*DB)(nil)

// AppendTranscript implements [store.TranscriptStore.AppendTranscript] in
// one transaction; each line's Seq follows the session's last.
func (db *DB) AppendTranscript(ctx context.Context, lines []store.TranscriptLine) error {
	const op = "append transcript"
	if len(lines) == 0 {
		return nil
	}
	if err := db.acquire(true); err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	defer db.release()
	err := db.writeTx(ctx, func(bg context.Context) error {
		last := map[string]int64{}
		for i := range lines {
			l := &lines[i]
			n, ok := last[l.Session]
			if !ok {
				if err := db.wconn.QueryRowContext(bg, `SELECT COALESCE(MAX(seq), 0) FROM transcripts WHERE session_id = ?1`, l.Session).Scan(&n); err != nil {
					return mapErr(err)
				}
			}
			n++
			last[l.Session] = n
			if _, err := db.wconn.ExecContext(bg, `INSERT INTO transcripts (session_id, seq, server, time, direction, message, cut, dropped, dropped_bytes)
				VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)`,
				l.Session, n, l.Server, l.Time.UnixNano(), l.Direction, l.Message, l.Cut, l.Dropped, l.DroppedBytes); err != nil {
				return mapErr(err)
			}
			l.Seq = uint64(n)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return nil
}

// ReadTranscript implements [store.TranscriptStore.ReadTranscript]. A file
// of an older schema (opened read-only) has no transcript.
func (db *DB) ReadTranscript(ctx context.Context, session string) ([]store.TranscriptLine, error) {
	const op = "read transcript"
	if err := db.acquire(false); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	defer db.release()
	if db.onDisk < transcriptVersion {
		return nil, nil
	}
	rows, err := db.r.QueryContext(ctx, `SELECT seq, server, time, direction, message, cut, dropped, dropped_bytes
		FROM transcripts WHERE session_id = ?1 ORDER BY seq`, session)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, mapErr(err))
	}
	return scanTranscript(rows, session, op)
}

func scanTranscript(rows *sql.Rows, session, op string) ([]store.TranscriptLine, error) {
	defer rows.Close()
	var out []store.TranscriptLine
	for rows.Next() {
		l := store.TranscriptLine{Session: session}
		var seq, t int64
		if err := rows.Scan(&seq, &l.Server, &t, &l.Direction, &l.Message, &l.Cut, &l.Dropped, &l.DroppedBytes); err != nil {
			return nil, fmt.Errorf("sqlite: %s: %w", op, mapErr(err))
		}
		l.Seq, l.Time = uint64(seq), time.Unix(0, t).UTC()
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", op, mapErr(err))
	}
	return out, nil
}
