-- The store's identity: one row holding a random id, made when the schema
-- is, so that a bus shared by several stores tells their events apart
-- (their sequences collide). A file migrated to this version gets one too.
CREATE TABLE store_identity (
	one INTEGER PRIMARY KEY CHECK (one = 1),
	id  TEXT    NOT NULL
);
INSERT INTO store_identity (one, id) VALUES (1, lower(hex(randomblob(16))));
