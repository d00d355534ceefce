package sqlite

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/internal/migrations"
)

func TestMigrationsAreNumberedFromOne(t *testing.T) {
	ms, err := schemaMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || len(ms) != schemaVersion {
		t.Fatalf("%d migrations, schema version %d", len(ms), schemaVersion)
	}
	for i, m := range ms {
		if m.Version != i+1 || m.SQL == "" {
			t.Fatalf("migration %d: %+v", i, m)
		}
	}
}

// TestFailedMigrationChangesNothing applies a migration that fails half-way
// and checks that neither its first statement nor a new user_version
// remain: each migration is one transaction.
func TestFailedMigrationChangesNothing(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "events.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()
	bad := migrations.Migration{Version: schemaVersion + 1, Name: "bad.sql", SQL: "CREATE TABLE half (x); INSERT INTO no_such_table VALUES (1);"}
	if _, err := db.applyMigration(ctx, bad, bad.Version); err == nil {
		t.Fatal("a failing migration returned nil")
	}
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE name = 'half'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("table from the failed migration: count %d, %v", n, err)
	}
	if v, err := userVersion(ctx, db.r); err != nil || v != schemaVersion {
		t.Fatalf("user_version after a failed migration = %d, %v; want %d", v, err, schemaVersion)
	}
	// The writer is usable afterwards: the transaction was rolled back.
	if err := db.SaveSnapshot(ctx, "p", 1, []byte("x")); err != nil {
		t.Fatalf("write after a failed migration: %v", err)
	}

	// A good one applies once and is then skipped.
	good := migrations.Migration{Version: schemaVersion + 1, Name: "good.sql", SQL: "CREATE TABLE later (x);"}
	for i, want := range []bool{true, false} {
		applied, err := db.applyMigration(ctx, good, good.Version)
		if err != nil || applied != want {
			t.Fatalf("applyMigration #%d = %v, %v; want %v", i+1, applied, err, want)
		}
	}
}

func TestMapErrByCode(t *testing.T) {
	// A real constraint error from the driver, matched by its code.
	db, err := Open(filepath.Join(t.TempDir(), "events.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.wconn.ExecContext(t.Context(), `INSERT INTO snapshots (name, seq, data) VALUES ('a', 1, x''), ('a', 2, x'')`)
	if err == nil {
		t.Fatal("duplicate primary key accepted")
	}
	if !errors.Is(mapErr(err), store.ErrVersionConflict) {
		t.Fatalf("mapErr(%v) does not wrap ErrVersionConflict", err)
	}
	if plain := errors.New("other"); mapErr(plain) != plain {
		t.Fatal("mapErr changed an error that is not the driver's")
	}
}
