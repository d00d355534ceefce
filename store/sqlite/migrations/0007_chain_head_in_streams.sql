-- The chain head moves into streams: each stream's row holds the chain
-- value of its last event (last_hash), written by the statement that
-- records every append in streams anyway, and the head is the row with the
-- highest last_seq. The head so costs an append neither a statement nor a
-- page of its own, and a log cut short at its end still shows: its last
-- stream's row records a seq the log no longer reaches. Rows written before
-- have no value, but the one that holds the head, which takes it over.
ALTER TABLE streams ADD COLUMN last_hash BLOB;
UPDATE streams SET last_hash = (SELECT hash FROM chain_head WHERE one = 1)
	WHERE last_seq = (SELECT seq FROM chain_head WHERE one = 1);
DROP TABLE chain_head;
