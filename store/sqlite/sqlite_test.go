package sqlite_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3" // registers "sqlite3" for raw access to test files

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/sqlite"
	"github.com/mcplife/mcplife/store/storetest"
)

// crashEnv names the database file the helper process appends to, and
// crashDurabilityEnv the durability level it opens it with.
const (
	crashEnv           = "MCPLIFE_SQLITE_CRASH_DB"
	crashDurabilityEnv = "MCPLIFE_SQLITE_CRASH_DURABILITY"
)

// TestConformance runs the conformance suite at each durability level; the
// Durability case kills the writer at each.
func TestConformance(t *testing.T) {
	for _, level := range []sqlite.Durability{sqlite.Full, sqlite.Normal} {
		t.Run(string(level), func(t *testing.T) { testConformance(t, level) })
	}
}

func testConformance(t *testing.T, level sqlite.Durability) {
	opts := &sqlite.Options{Durability: level}
	storetest.Run(t, storetest.Features{
		Snapshots: true,
		Reopen: func(t *testing.T, s store.Store) store.Store {
			return mustOpen(t, s.(*sqlite.DB).Path(), opts)
		},
		// Three writers in turn append to one file and are killed after
		// 100 acknowledged appends each; each one recovers what the
		// previous one left.
		Durability: func(t *testing.T) storetest.Crash {
			path := filepath.Join(t.TempDir(), "crash.db")
			var acked []events.Envelope
			for range 3 {
				cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
				cmd.Env = append(os.Environ(), crashEnv+"="+path, crashDurabilityEnv+"="+string(level))
				acked = append(acked, storetest.KillAfterAcks(t, cmd, 100)...)
			}
			// A read-only reader (mcp-audit on a crashed session) sees
			// every acknowledged event before anyone reopens the file
			// for writing.
			ro, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
			if err != nil {
				t.Fatalf("read-only open after the crash: %v", err)
			}
			last, err := ro.LastSeq(t.Context())
			if err != nil || last < acked[len(acked)-1].Seq {
				t.Fatalf("read-only LastSeq after the crash = %d, %v; want at least %d", last, err, acked[len(acked)-1].Seq)
			}
			if err := ro.IntegrityCheck(t.Context()); err != nil {
				t.Fatalf("read-only integrity check after the crash: %v", err)
			}
			if err := ro.Close(); err != nil {
				t.Fatal(err)
			}
			db, err := sqlite.Open(path, opts)
			if err != nil {
				t.Fatalf("reopen after the crash: %v", err)
			}
			return storetest.Crash{Store: db, Acked: acked}
		},
	}, func(t *testing.T) store.Store {
		return mustOpen(t, filepath.Join(t.TempDir(), "events.db"), opts)
	})
}

// TestHelperProcess is the writer the Durability case kills: when run as a
// child with crashEnv set, it appends to that file until killed and writes
// each acknowledged append to stdout. Otherwise it does nothing.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		return
	}
	db, err := sqlite.Open(path, &sqlite.Options{Durability: sqlite.Durability(os.Getenv(crashDurabilityEnv))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	err = storetest.AppendUntilDone(context.Background(), db, os.Stdout)
	fmt.Fprintln(os.Stderr, err)
	os.Exit(3)
}

func mustOpen(t testing.TB, path string, opts *sqlite.Options) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func envelope(n int) events.Envelope {
	return events.Envelope{
		Type: "Test", Schema: 1, SessionID: "s",
		Time: time.Date(2025, 1, 1, 0, 0, 0, n, time.UTC),
		Data: fmt.Appendf(nil, `{"n":%d}`, n),
	}
}

func appendN(t testing.TB, db *sqlite.DB, stream string, n int) {
	t.Helper()
	es := make([]events.Envelope, n)
	for i := range es {
		es[i] = envelope(i)
	}
	if _, err := db.Append(context.Background(), stream, store.AnyVersion, es); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

func rawOpen(t *testing.T, path string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	raw.SetMaxOpenConns(1)
	t.Cleanup(func() { raw.Close() })
	return raw
}

func pragma(t *testing.T, raw *sql.DB, name string) string {
	t.Helper()
	var v string
	if err := raw.QueryRow("PRAGMA " + name).Scan(&v); err != nil {
		t.Fatalf("PRAGMA %s: %v", name, err)
	}
	return v
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// version1File returns the path of a database of schema version 1 (before
// the index by type and the host column) holding 3 events of session "a".
func version1File(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.db")
	db := mustOpen(t, path, nil)
	appendN(t, db, "a", 3)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw := rawOpen(t, path)
	defer raw.Close()
	for _, q := range []string{"DROP TABLE transcripts", "ALTER TABLE streams DROP COLUMN last_hash", "ALTER TABLE events DROP COLUMN hash", "DROP INDEX events_type", "ALTER TABLE events DROP COLUMN host", "DROP TABLE store_identity", "PRAGMA user_version = 1"} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// A database of schema version 1 (before the index by type and the host
// column) is migrated on open, its events intact and of no host.
func TestOpenMigratesVersion1(t *testing.T) {
	path := version1File(t)
	db := mustOpen(t, path, nil)
	var got []uint64
	for env, err := range db.ReadType(t.Context(), "Test", 0, math.MaxUint64) {
		if err != nil {
			t.Fatal(err)
		}
		if env.Host != "" {
			t.Errorf("seq %d: host %q after the migration, want none", env.Seq, env.Host)
		}
		got = append(got, env.Seq)
	}
	raw := rawOpen(t, path)
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 'events_type'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("index events_type: count %d, %v", n, err)
	}
	if v := pragma(t, raw, "user_version"); v != "7" {
		t.Errorf("user_version = %s, want 7", v)
	}
	if len(got) != 3 {
		t.Errorf("ReadType after the migration: seqs %v, want 3 events", got)
	}
}

func TestOpenSetsWALAndMigrates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	db := mustOpen(t, path, nil)
	appendN(t, db, "a", 3)

	raw := rawOpen(t, path)
	if mode := pragma(t, raw, "journal_mode"); mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}
	if v := pragma(t, raw, "user_version"); v != "7" {
		t.Errorf("user_version = %s, want 7", v)
	}
	for _, table := range []string{"events", "streams", "snapshots"} {
		var n int
		if err := raw.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?`, table).Scan(&n); err != nil || n != 1 {
			t.Errorf("table %s: count %d, %v", table, n, err)
		}
	}
	for _, index := range []string{"events_session"} {
		var n int
		if err := raw.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = ?`, index).Scan(&n); err != nil || n != 1 {
			t.Errorf("index %s: count %d, %v", index, n, err)
		}
	}
	// Opening again applies nothing twice and keeps the data.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	again := mustOpen(t, path, nil)
	if n, err := again.LastSeq(t.Context()); err != nil || n != 3 {
		t.Fatalf("LastSeq after reopening = %d, %v; want 3", n, err)
	}
}

func TestOpenPathNeedsEscaping(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a?b#c%20d e.db")
	db := mustOpen(t, path, nil)
	appendN(t, db, "a", 1)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at the given path: %v", err)
	}
}

func TestOpenOptions(t *testing.T) {
	_, err := sqlite.Open(filepath.Join(t.TempDir(), "x.db"), &sqlite.Options{BusyTimeout: -time.Second})
	if err == nil {
		t.Fatal("Open with a negative BusyTimeout succeeded")
	}
}

func TestNewerSchemaLeavesFileAlone(t *testing.T) {
	for _, wal := range []bool{false, true} {
		t.Run(fmt.Sprintf("wal=%v", wal), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "newer.db")
			raw, err := sql.Open("sqlite3", path)
			if err != nil {
				t.Fatal(err)
			}
			stmts := []string{"CREATE TABLE future (x)", "PRAGMA user_version = 99"}
			if wal {
				stmts = append([]string{"PRAGMA journal_mode = WAL"}, stmts...)
			}
			for _, s := range stmts {
				if _, err := raw.Exec(s); err != nil {
					t.Fatal(err)
				}
			}
			raw.Close()
			before := fileHash(t, path)

			for _, ro := range []bool{false, true} {
				_, err := sqlite.Open(path, &sqlite.Options{ReadOnly: ro})
				if !errors.Is(err, store.ErrNewerSchema) {
					t.Fatalf("Open(ReadOnly: %v) of a version 99 file: %v, want ErrNewerSchema", ro, err)
				}
			}
			if fileHash(t, path) != before {
				t.Fatal("Open changed a file with a newer schema")
			}
		})
	}
}

func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	if _, err := sqlite.Open(missing, &sqlite.Options{ReadOnly: true}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("read-only Open of a missing file: %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read-only Open created the file: %v", err)
	}

	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Open(empty, &sqlite.Options{ReadOnly: true}); err == nil {
		t.Fatal("read-only Open of an unmigrated file succeeded")
	}
	if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
		t.Fatalf("read-only Open changed an unmigrated file: %v, %v", fi, err)
	}

	path := filepath.Join(dir, "events.db")
	w := mustOpen(t, path, nil)
	appendN(t, w, "a", 5)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	before := fileHash(t, path)

	ro := mustOpen(t, path, &sqlite.Options{ReadOnly: true})
	ctx := t.Context()
	n := 0
	for _, err := range ro.ReadAll(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 5 {
		t.Fatalf("read-only ReadAll: %d events, want 5", n)
	}
	if _, err := ro.Append(ctx, "a", store.AnyVersion, []events.Envelope{envelope(1)}); !errors.Is(err, store.ErrReadOnly) {
		t.Fatalf("read-only Append: %v, want ErrReadOnly", err)
	}
	if err := ro.SaveSnapshot(ctx, "p", 1, nil); !errors.Is(err, store.ErrReadOnly) {
		t.Fatalf("read-only SaveSnapshot: %v, want ErrReadOnly", err)
	}
	if err := ro.IntegrityCheck(ctx); err != nil {
		t.Fatalf("read-only IntegrityCheck: %v", err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if fileHash(t, path) != before {
		t.Fatal("a read-only store changed the file")
	}

	// A reader sees what a writer in the same or another process commits.
	w = mustOpen(t, path, nil)
	ro = mustOpen(t, path, &sqlite.Options{ReadOnly: true})
	appendN(t, w, "b", 2)
	if last, err := ro.LastSeq(ctx); err != nil || last != 7 {
		t.Fatalf("read-only LastSeq after a concurrent append = %d, %v; want 7", last, err)
	}
}

// TestConstraintMapsToConflict checks that a unique-constraint failure from
// the driver, recognised by its code, surfaces as ErrVersionConflict: a row
// written behind the store's back takes the version Append wants.
func TestConstraintMapsToConflict(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	db := mustOpen(t, path, nil)
	raw := rawOpen(t, path)
	if _, err := raw.Exec(`INSERT INTO events (seq, stream, version, type, schema, time, session_id, data) VALUES (1, 's', 1, 'T', 1, 0, 's', x'')`); err != nil {
		t.Fatal(err)
	}
	_, err := db.Append(t.Context(), "s", store.NoStream, []events.Envelope{envelope(1)})
	if !errors.Is(err, store.ErrVersionConflict) {
		t.Fatalf("Append over a conflicting row: %v, want ErrVersionConflict", err)
	}
}

func TestIntegrityCheckReportsCorruption(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	db := mustOpen(t, path, nil)
	if err := db.IntegrityCheck(t.Context()); err != nil {
		t.Fatalf("IntegrityCheck of a new file: %v", err)
	}
	for range 20 {
		appendN(t, db, "a", 100)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Overwrite the middle of the file (event and index pages, never the
	// header page) with garbage.
	garbage := bytes.Repeat([]byte{0x5a}, 8192)
	copy(b[len(b)/2:], garbage)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ro := mustOpen(t, path, &sqlite.Options{ReadOnly: true})
	if err := ro.IntegrityCheck(t.Context()); err == nil {
		t.Fatal("IntegrityCheck of a corrupted file returned nil")
	}
}

// TestAppendBatchSizes covers the multi-row insert groups: batch sizes
// around each group size land whole, gapless and byte-exact.
func TestAppendBatchSizes(t *testing.T) {
	db := mustOpen(t, filepath.Join(t.TempDir(), "events.db"), nil)
	ctx := t.Context()
	var want []events.Envelope
	for _, n := range []int{1, 15, 16, 17, 255, 256, 257, 600} {
		es := make([]events.Envelope, n)
		for i := range es {
			es[i] = envelope(len(want) + i)
			es[i].CorrelationID = fmt.Sprintf("c%d", len(want)+i)
		}
		got, err := db.Append(ctx, "s", int64(len(want)), es)
		if err != nil {
			t.Fatalf("Append of %d events: %v", n, err)
		}
		want = append(want, got...)
	}
	i := 0
	for e, err := range db.ReadAll(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		w := want[i]
		if e.Seq != uint64(i+1) || e.Version != uint64(i+1) || e.Seq != w.Seq || !bytes.Equal(e.Data, w.Data) ||
			e.CorrelationID != w.CorrelationID || !e.Time.Equal(w.Time) {
			t.Fatalf("event %d: got %+v, want %+v", i, e, w)
		}
		i++
	}
	if i != len(want) {
		t.Fatalf("read %d events, want %d", i, len(want))
	}
}

// TestLargeAppendIsAtomic makes a row in the middle of a large batch fail
// and checks that none of the batch is stored.
func TestLargeAppendIsAtomic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	db := mustOpen(t, path, nil)
	raw := rawOpen(t, path)
	// Version 300 of stream s is taken behind the store's back.
	if _, err := raw.Exec(`INSERT INTO events (seq, stream, version, type, schema, time, session_id, data) VALUES (1, 's', 300, 'T', 1, 0, 's', x'')`); err != nil {
		t.Fatal(err)
	}
	es := make([]events.Envelope, 600)
	for i := range es {
		es[i] = envelope(i)
	}
	if _, err := db.Append(t.Context(), "s", store.NoStream, es); !errors.Is(err, store.ErrVersionConflict) {
		t.Fatalf("Append over a conflicting row: %v, want ErrVersionConflict", err)
	}
	if n, err := db.LastSeq(t.Context()); err != nil || n != 1 {
		t.Fatalf("LastSeq after a failed batch = %d, %v; want 1", n, err)
	}
	for info, err := range db.Streams(t.Context()) {
		t.Fatalf("a failed batch left a stream: %+v, %v", info, err)
	}
}

// TestTwoWritersOneFile opens the file twice, as two processes would, and
// appends through both at once: BEGIN IMMEDIATE and the busy timeout
// serialise them, and the log stays gapless with no version taken twice.
func TestTwoWritersOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	dbs := []*sqlite.DB{mustOpen(t, path, nil), mustOpen(t, path, nil)}
	ctx := t.Context()
	const perWriter = 50
	var wg sync.WaitGroup
	for w, db := range dbs {
		wg.Go(func() {
			for i := range perWriter {
				e := envelope(i)
				e.Data = fmt.Appendf(nil, `{"writer":%d,"i":%d}`, w, i)
				if _, err := db.Append(ctx, "shared", store.AnyVersion, []events.Envelope{e}); err != nil {
					t.Errorf("writer %d append %d: %v", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	n := 0
	for e, err := range dbs[0].ReadStream(ctx, "shared", 0) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if e.Seq != uint64(n) || e.Version != uint64(n) {
			t.Fatalf("event %d: seq %d version %d", n, e.Seq, e.Version)
		}
	}
	if n != 2*perWriter {
		t.Fatalf("%d events stored, want %d", n, 2*perWriter)
	}
}

// A file of an older schema (here version 1: no index by type, no host
// column) opened read-only is read as it is, its events of no host, and
// left unchanged: inspecting an old history needs no migration.
func TestReadOnlyReadsAnOlderSchema(t *testing.T) {
	path := version1File(t)
	before := fileHash(t, path)

	ro := mustOpen(t, path, &sqlite.Options{ReadOnly: true})
	var seqs []uint64
	for env, err := range ro.ReadAll(t.Context(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		if env.Host != "" || env.Stream != "a" {
			t.Errorf("seq %d: stream %q host %q", env.Seq, env.Stream, env.Host)
		}
		seqs = append(seqs, env.Seq)
	}
	if len(seqs) != 3 {
		t.Fatalf("read %v, want 3 events", seqs)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if fileHash(t, path) != before {
		t.Error("a read-only open changed the file")
	}
}

// A file made before store identities is read read-only without one, and
// gets one, kept from then on, when it is first opened read-write.
func TestIdentityMadeByMigration(t *testing.T) {
	path := version1File(t)
	ro := mustOpen(t, path, &sqlite.Options{ReadOnly: true})
	if id := ro.StoreID(); id != "" {
		t.Fatalf("read-only open of a version 1 file: StoreID %q, want none", id)
	}
	ro.Close()
	rw := mustOpen(t, path, nil)
	id := rw.StoreID()
	if len(id) != 32 {
		t.Fatalf("StoreID after the migration %q, want 32 hex digits", id)
	}
	rw.Close()
	if again := mustOpen(t, path, &sqlite.Options{ReadOnly: true}).StoreID(); again != id {
		t.Fatalf("StoreID read-only after the migration %q, want %q", again, id)
	}
}

// A copy of a store's file (a backup put back beside it, a file every user
// starts from) is a store of its own: its sequences start where the
// original's were, so on a shared bus the two must not share an identity.
// Another path to the same file is the same store.
func TestCopiedFileHasItsOwnIdentity(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.db")
	db := mustOpen(t, path, nil)
	appendN(t, db, "a", 3)
	id := db.StoreID()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(dir, "copy.db")
	if err := os.WriteFile(cp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	c := mustOpen(t, cp, nil)
	if last, err := c.LastSeq(context.Background()); err != nil || last != 3 {
		t.Fatalf("LastSeq of the copy = %d, %v; want 3", last, err)
	}
	if got := c.StoreID(); got == id || len(got) != 32 {
		t.Fatalf("StoreID of the copy %q, original %q: want 32 hex digits of its own", got, id)
	}
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(path, link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	if got := mustOpen(t, link, &sqlite.Options{ReadOnly: true}).StoreID(); got != id {
		t.Fatalf("StoreID through a link %q, want the file's %q", got, id)
	}
}
