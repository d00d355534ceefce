package postgres

import "github.com/jackc/pgx/v5"

// pageSize is how many rows a read fetches per query.
const pageSize = 512

const eventColumns = `seq, stream, version, type, schema, time, session_id, correlation_id, host, data`

// queries holds the store's SQL with its tables qualified by the quoted
// schema name. pgx prepares each on a connection the first time it runs
// there and keeps it.
type queries struct {
	schema string // quoted

	// lock takes the row lock of the sequence counter, the first statement
	// of every append transaction.
	lock string
	// appendMany checks one append's expected version and writes its
	// events, passed as one array per column; appendOne does the same for
	// an append of one event, passed as plain values, which spares the
	// server unpacking arrays on the most common path. See appendSQL.
	appendMany, appendOne string

	readAll, readStream, readType string
	streams, lastSeq              string
	saveSnapshot, loadSnapshot    string

	checkSeqs, checkStreams string

	readChain, chainHead string
}

func newQueries(schema string) queries {
	s := pgx.Identifier{schema}.Sanitize()
	return queries{
		schema: s,
		lock:   `SELECT last FROM ` + s + `.seq_counter FOR UPDATE`,
		appendMany: appendSQL(s, `unnest($4::text[], $5::integer[], $6::bigint[], $7::text[], $8::text[], $9::text[], $10::bytea[])
		WITH ORDINALITY`),
		appendOne: appendSQL(s, `(VALUES ($4::text, $5::integer, $6::bigint, $7::text, $8::text, $9::text, $10::bytea, 1::bigint))`),

		readChain: `SELECT ` + eventColumns + `, hash FROM ` + s + `.events WHERE seq >= $1 ORDER BY seq LIMIT $2`,
		chainHead: `SELECT last, hash FROM ` + s + `.seq_counter`,

		readAll:    `SELECT ` + eventColumns + ` FROM ` + s + `.events WHERE seq >= $1 ORDER BY seq LIMIT $2`,
		readStream: `SELECT ` + eventColumns + ` FROM ` + s + `.events WHERE stream = $3 AND version >= $1 ORDER BY version LIMIT $2`,
		readType:   `SELECT ` + eventColumns + ` FROM ` + s + `.events WHERE type = $3 AND seq >= $1 AND seq <= $4 ORDER BY seq LIMIT $2`,
		streams:    `SELECT stream, version, first_seq, last_seq, created, updated FROM ` + s + `.streams WHERE first_seq > $1 ORDER BY first_seq LIMIT $2`,
		lastSeq:    `SELECT last FROM ` + s + `.seq_counter`,
		saveSnapshot: `INSERT INTO ` + s + `.snapshots AS sn (name, seq, data) VALUES ($1, $2, $3)
	ON CONFLICT (name) DO UPDATE SET seq = EXCLUDED.seq, data = EXCLUDED.data WHERE EXCLUDED.seq >= sn.seq`,
		loadSnapshot: `SELECT seq, data FROM ` + s + `.snapshots WHERE name = $1`,

		checkSeqs: `SELECT count(*), COALESCE(min(seq), 0), COALESCE(max(seq), 0), (SELECT last FROM ` + s + `.seq_counter) FROM ` + s + `.events`,
		checkStreams: `SELECT COALESCE(st.stream, e.stream) FROM ` + s + `.streams st
	FULL JOIN (SELECT stream, count(*) AS n, max(version) AS v, min(seq) AS f, max(seq) AS l FROM ` + s + `.events GROUP BY stream) e
	ON e.stream = st.stream
	WHERE e.n IS DISTINCT FROM st.version OR e.v IS DISTINCT FROM st.version
		OR e.f IS DISTINCT FROM st.first_seq OR e.l IS DISTINCT FROM st.last_seq
	ORDER BY 1 LIMIT 20`,
	}
}

// appendSQL returns the statement that writes one append, run after the
// counter lock in the same transaction, so its snapshot holds every append
// committed before. cur is the stream's version; when the expected version
// ($2) matches (ok), c0 reads the counter and the chain value it holds,
// chain computes the chain value of each event (numbered from the
// counter's old value) from the one before and the events' content
// digests ($13, 32 bytes each, concatenated), taken moves the counter on
// by the number of events ($3) and records the last value, and the rows
// and the stream's summary are written. On a mismatch ok is empty and
// nothing is written. It returns the stream's version before the append
// and the seq before its first event (NULL when nothing was written). rows
// yields the events' columns followed by their 1-based position; s is the
// quoted schema.
func appendSQL(s, rows string) string {
	return `WITH RECURSIVE cur AS (
	SELECT COALESCE((SELECT version FROM ` + s + `.streams WHERE stream = $1), 0) AS version
), ok AS (
	SELECT version FROM cur WHERE $2::bigint = -1 OR $2::bigint = version
), c0 AS (
	SELECT c.last AS base, c.hash AS hash, ok.version AS version FROM ` + s + `.seq_counter AS c, ok WHERE $3::bigint > 0
), chain (i, h) AS (
	SELECT 0::bigint, c0.hash FROM c0
	UNION ALL
	SELECT chain.i + 1, sha256(chain.h || int8send(c0.base + chain.i + 1) || int8send(c0.version + chain.i + 1)
		|| substring($13::bytea FROM chain.i::integer * 32 + 1 FOR 32))
	FROM chain, c0 WHERE chain.i < $3::bigint
), taken AS (
	UPDATE ` + s + `.seq_counter AS c SET last = c0.base + $3::bigint, hash = (SELECT h FROM chain WHERE i = $3::bigint) FROM c0
	RETURNING c0.base AS base, c0.version AS version
), ins AS (
	INSERT INTO ` + s + `.events (` + eventColumns + `, hash)
	SELECT taken.base + u.i, $1, taken.version + u.i, u.type, u.schema, u.time, u.session_id, u.correlation_id, u.host, u.data, chain.h
	FROM taken, ` + rows + ` AS u(type, schema, time, session_id, correlation_id, host, data, i)
	JOIN chain ON chain.i = u.i
), summary AS (
	INSERT INTO ` + s + `.streams AS st (stream, version, first_seq, last_seq, created, updated)
	SELECT $1, taken.version + $3::bigint, taken.base + 1, taken.base + $3::bigint, $11::bigint, $12::bigint FROM taken
	ON CONFLICT (stream) DO UPDATE SET version = EXCLUDED.version, last_seq = EXCLUDED.last_seq, updated = EXCLUDED.updated
)
SELECT cur.version, taken.base FROM cur LEFT JOIN taken ON true`
}
