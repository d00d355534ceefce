-- Events: one row per envelope. seq is the global sequence and the rowid;
-- time is Unix nanoseconds (UTC); data holds the envelope's bytes unchanged.
CREATE TABLE events (
	seq            INTEGER PRIMARY KEY,
	stream         TEXT    NOT NULL,
	version        INTEGER NOT NULL,
	type           TEXT    NOT NULL,
	schema         INTEGER NOT NULL,
	time           INTEGER NOT NULL,
	session_id     TEXT    NOT NULL,
	correlation_id TEXT    NOT NULL DEFAULT '',
	data           BLOB    NOT NULL,
	UNIQUE (stream, version)
);

CREATE INDEX events_session ON events (session_id, seq);

-- Streams: one summary row per stream, kept in the same transaction as the
-- events, so the version check and the stream listing never scan events.
CREATE TABLE streams (
	stream    TEXT    PRIMARY KEY,
	version   INTEGER NOT NULL,
	first_seq INTEGER NOT NULL UNIQUE,
	last_seq  INTEGER NOT NULL,
	created   INTEGER NOT NULL,
	updated   INTEGER NOT NULL
) WITHOUT ROWID;

-- Snapshots: named projection checkpoints, current up to seq.
CREATE TABLE snapshots (
	name TEXT    PRIMARY KEY,
	seq  INTEGER NOT NULL,
	data BLOB    NOT NULL
) WITHOUT ROWID;
