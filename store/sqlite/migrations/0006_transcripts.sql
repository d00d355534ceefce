-- Server transcripts: the JSON-RPC messages between the client and the
-- servers whose transcript is on, kept beside the events and never inside
-- them. seq orders the lines of a session; time is Unix nanoseconds.
CREATE TABLE transcripts (
	session_id    TEXT    NOT NULL,
	seq           INTEGER NOT NULL,
	server        TEXT    NOT NULL,
	time          INTEGER NOT NULL,
	direction     TEXT    NOT NULL,
	message       TEXT    NOT NULL DEFAULT '',
	cut           INTEGER NOT NULL DEFAULT 0,
	dropped       INTEGER NOT NULL DEFAULT 0,
	dropped_bytes INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (session_id, seq)
);
