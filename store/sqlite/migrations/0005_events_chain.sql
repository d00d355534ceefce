-- The hash chain: each event's chain value, a SHA-256 hash over the
-- value of the event before it and the event's canonical bytes, so that an
-- event changed, removed, inserted or moved afterwards shows. The chain
-- head holds the last event's seq and value, written in the same
-- transaction as the events, so that a log cut short at its end shows too.
-- The program chains the events already stored in the same transaction as
-- this file (SQLite has no SHA-256 of its own).
ALTER TABLE events ADD COLUMN hash BLOB;

CREATE TABLE chain_head (
	one  INTEGER PRIMARY KEY CHECK (one = 1),
	seq  INTEGER NOT NULL,
	hash BLOB    NOT NULL
);
