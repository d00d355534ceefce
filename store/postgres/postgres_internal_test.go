package postgres

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/internal/migrations"
	"github.com/mcplife/mcplife/store/postgres/pgtest"
)

func openTest(t *testing.T) (*DB, string) {
	t.Helper()
	cs, schema := pgtest.Schema(t)
	db, err := Open(t.Context(), cs, &Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, cs
}

func testEnvelope(n int) events.Envelope {
	return events.Envelope{Type: "T", Schema: 1, SessionID: "s", Time: time.Unix(0, int64(n)+1), Data: []byte(`{}`)}
}

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
// and checks that neither its first statement nor a new version remain:
// each migration is one transaction.
func TestFailedMigrationChangesNothing(t *testing.T) {
	db, _ := openTest(t)
	ctx := t.Context()
	bad := migrations.Migration{Version: schemaVersion + 1, Name: "bad.sql", SQL: "CREATE TABLE half (x integer); INSERT INTO no_such_table VALUES (1);"}
	if _, err := db.applyMigration(ctx, bad, bad.Version); err == nil {
		t.Fatal("a failing migration returned nil")
	}
	var half bool
	if err := db.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, db.q.schema+".half").Scan(&half); err != nil || half {
		t.Fatalf("table from the failed migration: %v, %v", half, err)
	}
	if v, err := db.currentVersion(ctx, db.pool); err != nil || v != schemaVersion {
		t.Fatalf("version after a failed migration = %d, %v; want %d", v, err, schemaVersion)
	}

	// A good one applies once and is then skipped; its statements ran in
	// the store's schema.
	good := migrations.Migration{Version: schemaVersion + 1, Name: "good.sql", SQL: "CREATE TABLE later (x integer);"}
	for i, want := range []bool{true, false} {
		applied, err := db.applyMigration(ctx, good, good.Version)
		if err != nil || applied != want {
			t.Fatalf("applyMigration #%d = %v, %v; want %v", i+1, applied, err, want)
		}
	}
	var later bool
	if err := db.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, db.q.schema+".later").Scan(&later); err != nil || !later {
		t.Fatalf("table of the good migration in the store's schema: %v, %v", later, err)
	}
	// This program now finds the schema newer than it knows.
	if _, err := Open(ctx, pgtest.ConnString(t), &Options{Schema: db.schema}); !errors.Is(err, store.ErrNewerSchema) {
		t.Fatalf("Open after a later migration: %v, want ErrNewerSchema", err)
	}
}

// TestConnectionLostBeforeCommit kills the server connection a group is
// about to be sent on: the Append fails, nothing of it is stored, the
// sequence numbers stay gapless, and the next Append works on a new
// connection.
func TestConnectionLostBeforeCommit(t *testing.T) {
	db, cs := openTest(t)
	ctx := t.Context()
	raw, err := pgx.Connect(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close(ctx)
	if _, err := db.Append(ctx, "a", store.NoStream, []events.Envelope{testEnvelope(0)}); err != nil {
		t.Fatal(err)
	}
	var killed []uint32
	db.testHookBeforeSend = func(conn *pgx.Conn) {
		if len(killed) > 0 {
			return // once
		}
		pid := conn.PgConn().PID()
		killed = append(killed, pid)
		// The second argument makes the server wait until the backend
		// has exited.
		var ok bool
		if err := raw.QueryRow(ctx, `SELECT pg_terminate_backend($1, 10000)`, pid).Scan(&ok); err != nil || !ok {
			t.Errorf("terminate backend %d: %v, %v", pid, ok, err)
		}
	}
	if _, err := db.Append(ctx, "a", 1, []events.Envelope{testEnvelope(1), testEnvelope(2)}); err == nil {
		t.Fatal("Append on a killed connection returned nil")
	}
	if len(killed) != 1 {
		t.Fatalf("hook killed %d connections", len(killed))
	}
	got, err := db.Append(ctx, "a", 1, []events.Envelope{testEnvelope(3)})
	if err != nil {
		t.Fatalf("Append after the lost connection: %v", err)
	}
	if got[0].Seq != 2 || got[0].Version != 2 {
		t.Fatalf("Append after the lost connection: seq %d version %d, want 2 and 2", got[0].Seq, got[0].Version)
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestGroupCommit holds the first group's transaction until more appends
// have queued: those share the next transaction.
func TestGroupCommit(t *testing.T) {
	db, _ := openTest(t)
	ctx := t.Context()
	const waiting = 8
	release := make(chan struct{})
	entered := make(chan struct{})
	var once sync.Once
	db.testHookBeforeSend = func(*pgx.Conn) {
		once.Do(func() {
			close(entered)
			<-release
		})
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := db.Append(ctx, "first", store.NoStream, []events.Envelope{testEnvelope(0)}); err != nil {
			t.Error(err)
		}
	})
	<-entered
	// The first group is being written; release it once all the others
	// have queued behind it.
	db.commits.TestHookQueued = func(queued int) {
		if queued == waiting {
			close(release)
		}
	}
	for i := range waiting {
		wg.Go(func() {
			if _, err := db.Append(ctx, "s", store.AnyVersion, []events.Envelope{testEnvelope(i)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := db.groupTxs.Load(); n != 2 {
		t.Fatalf("%d transactions for %d appends, want 2", n, waiting+1)
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}
