-- The store's identity: one row holding a random id, made when the schema
-- is, so that a bus shared by several stores (two databases, two servers)
-- tells their events apart (their sequences collide). A schema migrated to
-- this version gets one too.
CREATE TABLE store_identity (
	one boolean PRIMARY KEY DEFAULT true CHECK (one),
	id  text    NOT NULL
);
INSERT INTO store_identity (id) VALUES (replace(gen_random_uuid()::text, '-', ''));
