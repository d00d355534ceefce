-- The hash chain: each event's chain value, a SHA-256 hash over the
-- value of the event before it and the event's canonical bytes, so that an
-- event changed, removed, inserted or moved afterwards shows. The counter
-- row also holds the value of the last event, the chain head: an append
-- reads it under the counter's lock, which orders every append, so the
-- chain follows the gapless sequence whichever host writes, and a log cut
-- short at its end shows. The program chains the events already stored in
-- the same transaction as this file.
ALTER TABLE events ADD COLUMN hash bytea;
ALTER TABLE seq_counter ADD COLUMN hash bytea NOT NULL DEFAULT decode(repeat('00', 32), 'hex');
