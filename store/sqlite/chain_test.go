package sqlite_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/sqlite"
	"github.com/mcplife/mcplife/verify"
)

// version4File returns the path of a file made as the previous schema
// version (4, before the hash chain) made it, by its own migration files,
// holding n events of two streams written as that version wrote them.
func version4File(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.db")
	raw := rawOpen(t, path)
	files, err := filepath.Glob("migrations/000[1-4]_*.sql")
	if err != nil || len(files) != 4 {
		t.Fatalf("migration files %v, %v", files, err)
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Exec(string(b)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	t0 := time.Date(2026, 2, 1, 0, 0, 0, 987654321, time.UTC)
	versions := map[string]int{}
	tx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for seq := 1; seq <= n; seq++ {
		stream := fmt.Sprintf("s%d", seq%2)
		versions[stream]++
		v := versions[stream]
		nanos := t0.Add(time.Duration(seq) * time.Millisecond).UnixNano()
		if _, err := tx.Exec(`INSERT INTO events (seq, stream, version, type, schema, time, session_id, correlation_id, host, data)
			VALUES (?, ?, ?, 'ToolCallFinished', 1, ?, ?, ?, 'h', ?)`, seq, stream, v, nanos, stream, fmt.Sprintf("c%d", seq),
			[]byte(fmt.Sprintf(`{"n":%d}`, seq))); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO streams (stream, version, first_seq, last_seq, created, updated) VALUES (?1, ?2, ?3, ?3, ?4, ?4)
			ON CONFLICT (stream) DO UPDATE SET version = ?2, last_seq = ?3, updated = ?4`, stream, v, seq, nanos); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`PRAGMA user_version = 4`); err != nil {
		t.Fatal(err)
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// A file of the previous schema version, with its events, is chained by
// the migration: the chain verifies, and appends after it continue it.
// Read-only, such a file is read as it is and its chain is refused with a
// message saying why.
func TestMigrationChainsHistory(t *testing.T) {
	const n = 1300 // more than two pages of the migration's reads
	path := version4File(t, n)

	ro := mustOpen(t, path, &sqlite.Options{ReadOnly: true})
	if got := len(collectAll(t, ro)); got != n {
		t.Fatalf("read-only open of a version 4 file: %d events, want %d", got, n)
	}
	if _, err := verify.CheckChain(t.Context(), ro, nil); err == nil || !strings.Contains(err.Error(), "predates the hash chain") {
		t.Fatalf("chain of a version 4 file read-only: %v, want an error saying it predates the chain", err)
	}
	ro.Close()

	db := mustOpen(t, path, nil)
	rep, err := verify.CheckChain(t.Context(), db, nil)
	if err != nil || !rep.OK() || rep.Events != n || rep.HeadSeq != n {
		t.Fatalf("chain after the migration: %+v, %v; want %d events intact", rep, err, n)
	}
	if _, err := db.Append(t.Context(), "s0", store.AnyVersion, []events.Envelope{envelope(1), envelope(2)}); err != nil {
		t.Fatal(err)
	}
	rep, err = verify.CheckChain(t.Context(), db, nil)
	if err != nil || !rep.OK() || rep.Events != n+2 || rep.HeadSeq != n+2 {
		t.Fatalf("chain after appending to the migrated file: %+v, %v", rep, err)
	}
}

// version6File returns the path of a file as schema version 6 left it,
// the chain head in a table of its own: streams "a" and "b" written in
// turns, 6 events, the last of "a".
func version6File(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.db")
	db := mustOpen(t, path, nil)
	for _, a := range []struct {
		stream string
		n      int
	}{{"a", 3}, {"b", 2}, {"a", 1}} {
		appendN(t, db, a.stream, a.n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw := rawOpen(t, path)
	for _, q := range []string{
		`CREATE TABLE chain_head (one INTEGER PRIMARY KEY CHECK (one = 1), seq INTEGER NOT NULL, hash BLOB NOT NULL)`,
		`INSERT INTO chain_head (one, seq, hash) SELECT 1, seq, hash FROM events ORDER BY seq DESC LIMIT 1`,
		`ALTER TABLE streams DROP COLUMN last_hash`,
		`PRAGMA user_version = 6`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// The migration that moves the chain head into streams keeps it: a file
// of version 6 verifies read-only as it is, and read-write after the
// migration, with the same head, which appends then move on; a log that
// was cut short at its end before the migration still shows it after.
func TestMigrationMovesChainHead(t *testing.T) {
	path := version6File(t)
	ro := mustOpen(t, path, &sqlite.Options{ReadOnly: true})
	before, err := verify.CheckChain(t.Context(), ro, nil)
	if err != nil || !before.OK() || before.Events != 6 || before.HeadSeq != 6 || before.HeadHash == "" {
		t.Fatalf("chain of a version 6 file read-only: %+v, %v; want 6 events intact", before, err)
	}
	ro.Close()

	db := mustOpen(t, path, nil)
	rep, err := verify.CheckChain(t.Context(), db, nil)
	if err != nil || !rep.OK() || rep.HeadSeq != 6 || rep.HeadHash != before.HeadHash {
		t.Fatalf("chain after the migration: %+v, %v; want the head of before, %+v", rep, err, before)
	}
	raw := rawOpen(t, path)
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'chain_head'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("chain_head after the migration: %d tables, %v; want none", n, err)
	}
	appendN(t, db, "b", 2)
	rep, err = verify.CheckChain(t.Context(), db, nil)
	if err != nil || !rep.OK() || rep.Events != 8 || rep.HeadSeq != 8 {
		t.Fatalf("chain after appending to the migrated file: %+v, %v", rep, err)
	}
	checkChainValues(t, db, 8)

	cut := version6File(t)
	if _, err := rawOpen(t, cut).Exec(`DELETE FROM events WHERE seq = 6`); err != nil {
		t.Fatal(err)
	}
	rep, err = verify.CheckChain(t.Context(), mustOpen(t, cut, nil), nil)
	if err != nil || len(rep.Breaks) != 1 || rep.Breaks[0].Seq != 6 || rep.Breaks[0].Kind != verify.BreakRemoved {
		t.Fatalf("chain of a file cut short before the migration: %+v, %v; want seq 6 removed", rep, err)
	}
}

func collectAll(t *testing.T, st store.Store) []events.Envelope {
	t.Helper()
	var out []events.Envelope
	for e, err := range st.ReadAll(t.Context(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// Two stores on one file, as two processes, take turns appending: each
// chains on the other's last event, which it does not keep, as well as on
// its own, and a request that fails (in a group or alone) leaves the chain
// where it was.
func TestChainAcrossWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	a, b := mustOpen(t, path, nil), mustOpen(t, path, nil)
	ctx := t.Context()
	batch := func(n int) []events.Envelope {
		es := make([]events.Envelope, n)
		for i := range es {
			es[i] = envelope(i)
		}
		return es
	}
	total := 0
	appendTo := func(db *sqlite.DB, stream string, n int) {
		t.Helper()
		if _, err := db.Append(ctx, stream, store.AnyVersion, batch(n)); err != nil {
			t.Fatal(err)
		}
		total += n
	}
	appendTo(a, "a", 1)
	appendTo(b, "b", 300)
	appendTo(a, "a", 1)
	if _, err := a.Append(ctx, "a", 7, batch(2)); !errors.Is(err, store.ErrVersionConflict) {
		t.Fatalf("append at a wrong version: %v, want a version conflict", err)
	}
	appendTo(a, "a", 2)
	res := a.AppendBatch(ctx, []store.AppendRequest{
		{Stream: "a", Expected: store.AnyVersion, Envs: batch(3)},
		{Stream: "b", Expected: 1, Envs: batch(2)}, // b is at 300
		{Stream: "c", Expected: store.NoStream, Envs: batch(20)},
	})
	if res[0].Err != nil || !errors.Is(res[1].Err, store.ErrVersionConflict) || res[2].Err != nil {
		t.Fatalf("batch: %v, %v, %v; want the second alone to fail", res[0].Err, res[1].Err, res[2].Err)
	}
	total += 23
	appendTo(b, "b", 1)
	appendTo(a, "a", 1)
	for _, db := range []*sqlite.DB{a, b} {
		rep, err := verify.CheckChain(ctx, db, nil)
		if err != nil || !rep.OK() || rep.Events != total || rep.HeadSeq != uint64(total) {
			t.Fatalf("chain: %+v, %v; want %d events intact", rep, err, total)
		}
	}
	checkChainValues(t, a, total)
}

// checkChainValues recomputes the chain value of every event of st, each
// after the one computed for the event before it, and checks it against
// the stored one, and that there are n events.
func checkChainValues(t *testing.T, st store.ChainReader, n int) {
	t.Helper()
	var prev [store.ChainHashSize]byte
	i := 0
	for c, err := range st.ReadChain(t.Context(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		i++
		prev = store.ChainHash(prev, c.Env)
		if c.Env.Seq != uint64(i) || !bytes.Equal(c.Hash, prev[:]) {
			t.Fatalf("seq %d (event %d): chain value %x, want %x", c.Env.Seq, i, c.Hash, prev)
		}
	}
	if i != n {
		t.Fatalf("%d events, want %d", i, n)
	}
}

// Appends of every size the writer treats apart (one event, less than a
// statement, exactly one, more than one, which have their chain values
// computed beside the insert, and more than the writer keeps buffers
// for), alone and several in one transaction with a failing one between
// them, are chained as the chain's definition says: every stored value is
// the one computed over the log, and the head is the last event's. The
// events differ in every field the content digest covers, some with
// payloads larger than it hashes without allocating.
func TestChainOfLargeAppends(t *testing.T) {
	db := mustOpen(t, filepath.Join(t.TempDir(), "events.db"), nil)
	ctx := t.Context()
	n := 0
	batch := func(size int) []events.Envelope {
		es := make([]events.Envelope, size)
		for i := range es {
			n++
			es[i] = events.Envelope{
				Type: fmt.Sprintf("Type%d", n%3), Schema: 1 + n%2,
				Time:      time.Date(2026, 3, 1, 0, 0, 0, n, time.UTC),
				SessionID: fmt.Sprintf("session-%d", n%5), CorrelationID: fmt.Sprintf("c%d", n%7), Host: fmt.Sprintf("h%d", n%2),
				Data: fmt.Appendf(nil, `{"n":%d,"pad":%q}`, n, strings.Repeat("x", (n*37)%700)),
			}
		}
		return es
	}
	total := 0
	for i, size := range []int{1, 17, 256, 257, 1000, 1025, 2000, 300} {
		if _, err := db.Append(ctx, fmt.Sprintf("s%d", i%3), store.AnyVersion, batch(size)); err != nil {
			t.Fatalf("append of %d: %v", size, err)
		}
		total += size
	}
	res := db.AppendBatch(ctx, []store.AppendRequest{
		{Stream: "s0", Expected: store.AnyVersion, Envs: batch(700)},
		{Stream: "s1", Expected: 1, Envs: batch(400)}, // a version conflict
		{Stream: "s2", Expected: store.AnyVersion, Envs: batch(513)},
		{Stream: "s3", Expected: store.NoStream, Envs: batch(3)},
	})
	if res[0].Err != nil || !errors.Is(res[1].Err, store.ErrVersionConflict) || res[2].Err != nil || res[3].Err != nil {
		t.Fatalf("batch: %v, %v, %v, %v; want the second alone to fail", res[0].Err, res[1].Err, res[2].Err, res[3].Err)
	}
	total += 700 + 513 + 3
	if _, err := db.Append(ctx, "s1", store.AnyVersion, batch(600)); err != nil {
		t.Fatal(err)
	}
	total += 600
	rep, err := verify.CheckChain(ctx, db, nil)
	if err != nil || !rep.OK() || rep.Events != total || rep.HeadSeq != uint64(total) {
		t.Fatalf("chain: %+v, %v; want %d events intact", rep, err, total)
	}
	checkChainValues(t, db, total)
}
