-- Server transcripts: the JSON-RPC messages between the client and the
-- servers whose transcript is on, kept beside the events and never inside
-- them. seq orders the lines of a session; time is Unix nanoseconds.
CREATE TABLE transcripts (
	session_id    text   NOT NULL,
	seq           bigint NOT NULL,
	server        text   NOT NULL,
	time          bigint NOT NULL,
	direction     text   NOT NULL,
	message       text   NOT NULL DEFAULT '',
	cut           bigint NOT NULL DEFAULT 0,
	dropped       bigint NOT NULL DEFAULT 0,
	dropped_bytes bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (session_id, seq)
);
