-- Events: one row per envelope. seq is the global sequence, handed out by
-- seq_counter below; time is Unix nanoseconds (UTC), which timestamptz
-- (microseconds) could not hold exactly; data holds the envelope's bytes
-- unchanged.
CREATE TABLE events (
	seq            bigint  PRIMARY KEY,
	stream         text    NOT NULL,
	version        bigint  NOT NULL,
	type           text    NOT NULL,
	schema         integer NOT NULL,
	time           bigint  NOT NULL,
	session_id     text    NOT NULL,
	correlation_id text    NOT NULL DEFAULT '',
	host           text    NOT NULL DEFAULT '',
	data           bytea   NOT NULL,
	UNIQUE (stream, version)
);

CREATE INDEX events_session ON events (session_id, seq);

-- Events by type: a projection that folds one event type (the tool cache
-- folds ToolsListed) catches up by reading those rows only.
CREATE INDEX events_type ON events (type, seq);

-- Streams: one summary row per stream, kept in the same transaction as the
-- events, so the version check and the stream listing never scan events.
CREATE TABLE streams (
	stream    text   PRIMARY KEY,
	version   bigint NOT NULL,
	first_seq bigint NOT NULL UNIQUE,
	last_seq  bigint NOT NULL,
	created   bigint NOT NULL,
	updated   bigint NOT NULL
);

-- The last sequence handed out: one row, whose lock every append takes
-- first and holds until it commits. Appends therefore commit one at a time
-- in sequence order, and a rolled-back append takes its numbers back with
-- it (a SEQUENCE would leave a gap).
CREATE TABLE seq_counter (
	one  boolean PRIMARY KEY DEFAULT true CHECK (one),
	last bigint  NOT NULL
);
INSERT INTO seq_counter (last) VALUES (0);

-- Snapshots: named projection checkpoints, current up to seq.
CREATE TABLE snapshots (
	name text   PRIMARY KEY,
	seq  bigint NOT NULL,
	data bytea  NOT NULL
);
