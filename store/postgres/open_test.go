package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/postgres"
	"github.com/mcplife/mcplife/store/postgres/pgtest"
)

// fingerprint describes everything in schema that an open could change:
// its relations with their kinds and column lists, and the rows of its
// migrations table. "" means the schema does not exist.
func fingerprint(t *testing.T, raw *pgx.Conn, schema string) string {
	t.Helper()
	ctx := t.Context()
	var exists bool
	if err := raw.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if !exists {
		return ""
	}
	var rels string
	err := raw.QueryRow(ctx, `SELECT COALESCE(string_agg(c.relname || ':' || c.relkind::text || ':' ||
			COALESCE((SELECT string_agg(a.attname, ',' ORDER BY a.attnum) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0), ''),
			' ' ORDER BY c.relname), '')
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1`, schema).Scan(&rels)
	if err != nil {
		t.Fatal(err)
	}
	var rows string
	if strings.Contains(" "+rels, " migrations:r:") {
		err := raw.QueryRow(ctx, `SELECT string_agg(version || ' ' || name || ' ' || applied::text, ';' ORDER BY version) FROM `+
			pgx.Identifier{schema}.Sanitize()+`.migrations`).Scan(&rows)
		if err != nil {
			t.Fatal(err)
		}
	}
	return "schema " + schema + ": " + rels + " | " + rows
}

func mustExec(t *testing.T, raw *pgx.Conn, sqls ...string) {
	t.Helper()
	for _, q := range sqls {
		if _, err := raw.Exec(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// A schema written by a newer version is refused by read-write and
// read-only opens alike, and neither changes anything in it.
func TestNewerSchemaLeftAlone(t *testing.T) {
	cs, schema := pgtest.Schema(t)
	raw := rawConn(t, cs)
	s := pgx.Identifier{schema}.Sanitize()
	mustExec(t, raw,
		`CREATE SCHEMA `+s,
		`CREATE TABLE `+s+`.migrations (version integer PRIMARY KEY, name text NOT NULL, applied timestamptz NOT NULL DEFAULT now())`,
		`INSERT INTO `+s+`.migrations (version, name) VALUES (1, '0001_events.sql'), (99, '0099_future.sql')`,
		`CREATE TABLE `+s+`.future (x integer)`,
	)
	before := fingerprint(t, raw, schema)
	for _, ro := range []bool{false, true} {
		_, err := postgres.Open(t.Context(), cs, &postgres.Options{Schema: schema, ReadOnly: ro})
		if !errors.Is(err, store.ErrNewerSchema) {
			t.Fatalf("Open(ReadOnly: %v) of a version 99 schema: %v, want ErrNewerSchema", ro, err)
		}
	}
	if after := fingerprint(t, raw, schema); after != before {
		t.Fatalf("Open changed a schema with a newer version:\nbefore %s\nafter  %s", before, after)
	}
}

func TestOpenCreatesSchemaAndMigrates(t *testing.T) {
	cs, schema := pgtest.Schema(t)
	raw := rawConn(t, cs)
	db := mustOpen(t, cs, &postgres.Options{Schema: schema})
	appendN(t, db, "a", 3)
	fp := fingerprint(t, raw, schema)
	for _, table := range []string{"events:r:", "streams:r:", "snapshots:r:", "seq_counter:r:", "migrations:r:", "events_type:i:", "events_session:i:"} {
		if !strings.Contains(fp, " "+table) && !strings.Contains(fp, ": "+table) {
			t.Errorf("%s missing from %s", table, fp)
		}
	}
	if !strings.Contains(fp, "events:r:seq,stream,version,type,schema,time,session_id,correlation_id,host,data") {
		t.Errorf("events columns: %s", fp)
	}
	// Opening again applies nothing twice and keeps the data.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	again := mustOpen(t, cs, &postgres.Options{Schema: schema})
	if n, err := again.LastSeq(t.Context()); err != nil || n != 3 {
		t.Fatalf("LastSeq after reopening = %d, %v; want 3", n, err)
	}
	if after := fingerprint(t, raw, schema); after != fp {
		t.Fatalf("a second open changed the schema:\nbefore %s\nafter  %s", fp, after)
	}
}

// A schema that exists but holds no store (made by an administrator, say)
// is filled by a read-write open and refused, unchanged, by a read-only one.
func TestOpenEmptySchema(t *testing.T) {
	cs, schema := pgtest.Schema(t)
	raw := rawConn(t, cs)
	mustExec(t, raw, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize())
	before := fingerprint(t, raw, schema)
	if _, err := postgres.Open(t.Context(), cs, &postgres.Options{Schema: schema, ReadOnly: true}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("read-only Open of an empty schema: %v, want ErrNotFound", err)
	}
	if after := fingerprint(t, raw, schema); after != before {
		t.Fatalf("a read-only open changed an empty schema: %s", after)
	}
	db := mustOpen(t, cs, &postgres.Options{Schema: schema})
	appendN(t, db, "a", 1)
}

// Schema names are quoted, so any name PostgreSQL allows works, and two
// stores in one database do not see each other.
func TestSchemasAreSeparate(t *testing.T) {
	cs, schema := pgtest.Schema(t)
	odd := schema + `_"Odd; name`
	t.Cleanup(func() {
		if err := pgtest.Drop(cs, odd); err != nil {
			t.Error(err)
		}
	})
	a := mustOpen(t, cs, &postgres.Options{Schema: schema})
	b := mustOpen(t, cs, &postgres.Options{Schema: odd})
	appendN(t, a, "a", 2)
	appendN(t, b, "b", 3)
	if got := readAll(t, a); len(got) != 2 || got[0].Stream != "a" {
		t.Fatalf("store a holds %+v", got)
	}
	if got := readAll(t, b); len(got) != 3 || got[0].Stream != "b" {
		t.Fatalf("store b holds %+v", got)
	}
}

func TestOpenOptions(t *testing.T) {
	for _, o := range []postgres.Options{
		{LockTimeout: -time.Second},
		{MaxConns: -1},
		{Schema: strings.Repeat("x", 64)},
		{Schema: "a\x00b"},
	} {
		// The options are checked before anything is connected to.
		if _, err := postgres.Open(t.Context(), "postgres://nobody@127.0.0.1:1/none", &o); err == nil || !strings.Contains(err.Error(), "options") {
			t.Errorf("Open(%+v) = %v, want an options error", o, err)
		}
	}
	if _, err := postgres.Open(t.Context(), "postgres://h:notaport/x", nil); err == nil {
		t.Error("Open with a malformed connection string succeeded")
	}
}

// An unreachable server fails Open, with the context's deadline bounding
// the wait.
func TestOpenUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	// Port 1 on the loopback address refuses connections.
	if _, err := postgres.Open(ctx, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2", nil); err == nil {
		t.Fatal("Open of an unreachable server succeeded")
	}
}

func TestReadOnly(t *testing.T) {
	cs, schema := pgtest.Schema(t)
	raw := rawConn(t, cs)
	ctx := t.Context()
	if _, err := postgres.Open(ctx, cs, &postgres.Options{Schema: schema, ReadOnly: true}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("read-only Open of a missing schema: %v, want ErrNotFound", err)
	}
	if fp := fingerprint(t, raw, schema); fp != "" {
		t.Fatalf("read-only Open created the schema: %s", fp)
	}

	w := mustOpen(t, cs, &postgres.Options{Schema: schema})
	appendN(t, w, "a", 5)
	before := fingerprint(t, raw, schema)

	ro := mustOpen(t, cs, &postgres.Options{Schema: schema, ReadOnly: true})
	if got := readAll(t, ro); len(got) != 5 {
		t.Fatalf("read-only ReadAll: %d events, want 5", len(got))
	}
	if _, err := ro.Append(ctx, "a", store.AnyVersion, []events.Envelope{envelope(1)}); !errors.Is(err, store.ErrReadOnly) {
		t.Fatalf("read-only Append: %v, want ErrReadOnly", err)
	}
	res := ro.AppendBatch(ctx, []store.AppendRequest{{Stream: "a", Expected: store.AnyVersion, Envs: []events.Envelope{envelope(1)}}})
	if !errors.Is(res[0].Err, store.ErrReadOnly) {
		t.Fatalf("read-only AppendBatch: %v, want ErrReadOnly", res[0].Err)
	}
	if err := ro.SaveSnapshot(ctx, "p", 1, nil); !errors.Is(err, store.ErrReadOnly) {
		t.Fatalf("read-only SaveSnapshot: %v, want ErrReadOnly", err)
	}
	if err := ro.IntegrityCheck(ctx); err != nil {
		t.Fatalf("read-only IntegrityCheck: %v", err)
	}
	// A reader sees what a writer commits.
	appendN(t, w, "b", 2)
	if last, err := ro.LastSeq(ctx); err != nil || last != 7 {
		t.Fatalf("read-only LastSeq after an append = %d, %v; want 7", last, err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if after := fingerprint(t, raw, schema); after != before {
		t.Fatalf("a read-only store changed the schema:\nbefore %s\nafter  %s", before, after)
	}
}

// A schema made before store identities (version 1) is read read-only as
// it is, without one, and changed by nothing but the first read-write
// open, which gives it an identity kept from then on.
func TestIdentityMadeByMigration(t *testing.T) {
	cs, schema := pgtest.Schema(t)
	db := mustOpen(t, cs, &postgres.Options{Schema: schema})
	appendN(t, db, "a", 3)
	db.Close()
	raw := rawConn(t, cs)
	s := pgx.Identifier{schema}.Sanitize()
	mustExec(t, raw, `DROP TABLE `+s+`.transcripts`, `DROP TABLE `+s+`.store_identity`, `ALTER TABLE `+s+`.events DROP COLUMN hash`,
		`ALTER TABLE `+s+`.seq_counter DROP COLUMN hash`, `DELETE FROM `+s+`.migrations WHERE version > 1`)
	before := fingerprint(t, raw, schema)

	ro := mustOpen(t, cs, &postgres.Options{Schema: schema, ReadOnly: true})
	if id := ro.StoreID(); id != "" {
		t.Fatalf("read-only open of a version 1 schema: StoreID %q, want none", id)
	}
	if got := readAll(t, ro); len(got) != 3 {
		t.Fatalf("read-only open of a version 1 schema: %d events, want 3", len(got))
	}
	ro.Close()
	if after := fingerprint(t, raw, schema); after != before {
		t.Fatalf("a read-only open changed a version 1 schema:\nbefore %s\nafter  %s", before, after)
	}
	rw := mustOpen(t, cs, &postgres.Options{Schema: schema})
	id := rw.StoreID()
	if len(id) != 32 {
		t.Fatalf("StoreID after the migration %q, want 32 hex digits", id)
	}
	if again := mustOpen(t, cs, &postgres.Options{Schema: schema, ReadOnly: true}).StoreID(); again != id {
		t.Fatalf("StoreID read-only after the migration %q, want %q", again, id)
	}
}

// A copy of a store's schema (restored under another name, or in a
// database made from another as its template) is a store of its own: its
// sequences start where the original's were, so on a shared bus the two
// must not share an identity, although the copy holds the original's id.
func TestCopiedSchemaHasItsOwnIdentity(t *testing.T) {
	cs, schema := pgtest.Schema(t)
	copied := schema + "_copy"
	t.Cleanup(func() {
		if err := pgtest.Drop(cs, copied); err != nil {
			t.Error(err)
		}
	})
	a := mustOpen(t, cs, &postgres.Options{Schema: schema})
	appendN(t, a, "a", 3)
	b := mustOpen(t, cs, &postgres.Options{Schema: copied})
	b.Close()
	raw := rawConn(t, cs)
	s, c := pgx.Identifier{schema}.Sanitize(), pgx.Identifier{copied}.Sanitize()
	mustExec(t, raw, `UPDATE `+c+`.store_identity SET id = (SELECT id FROM `+s+`.store_identity)`)
	if got := mustOpen(t, cs, &postgres.Options{Schema: copied}).StoreID(); got == a.StoreID() || len(got) != 32 {
		t.Fatalf("StoreID of the copy %q, original %q: want 32 hex digits of its own", got, a.StoreID())
	}
	if again := mustOpen(t, cs, &postgres.Options{Schema: schema, ReadOnly: true}).StoreID(); again != a.StoreID() {
		t.Fatalf("StoreID read-only %q, want %q", again, a.StoreID())
	}
}
