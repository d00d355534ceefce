package postgres_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/postgres"
	"github.com/mcplife/mcplife/store/postgres/pgtest"
	"github.com/mcplife/mcplife/verify"
)

// version2Schema makes schema as the previous schema version (2, before
// the hash chain) made it, by its own migration files, holding n events of
// two streams written as that version wrote them.
func version2Schema(t *testing.T, cs, schema string, n int) {
	t.Helper()
	raw := rawConn(t, cs)
	s := pgx.Identifier{schema}.Sanitize()
	mustExec(t, raw, `CREATE SCHEMA IF NOT EXISTS `+s,
		`CREATE TABLE `+s+`.migrations (version integer PRIMARY KEY, name text NOT NULL, applied timestamptz NOT NULL DEFAULT now())`,
		`SET search_path TO `+s)
	files, err := filepath.Glob("migrations/000[1-2]_*.sql")
	if err != nil || len(files) != 2 {
		t.Fatalf("migration files %v, %v", files, err)
	}
	sort.Strings(files)
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, raw, string(b), fmt.Sprintf(`INSERT INTO migrations (version, name) VALUES (%d, '%s')`, i+1, filepath.Base(f)))
	}
	t0 := time.Date(2026, 2, 1, 0, 0, 0, 987654321, time.UTC)
	b := &pgx.Batch{}
	for seq := 1; seq <= n; seq++ {
		stream := fmt.Sprintf("s%d", seq%2)
		v := (seq + 1) / 2 // s1 holds the odd seqs, s0 the even ones
		nanos := t0.Add(time.Duration(seq) * time.Millisecond).UnixNano()
		b.Queue(`INSERT INTO events (seq, stream, version, type, schema, time, session_id, correlation_id, host, data)
			VALUES ($1, $2, $3, 'ToolCallFinished', 1, $4, $2, $5, 'h', $6)`, seq, stream, v, nanos, fmt.Sprintf("c%d", seq), []byte(fmt.Sprintf(`{"n":%d}`, seq)))
		b.Queue(`INSERT INTO streams AS st (stream, version, first_seq, last_seq, created, updated) VALUES ($1, $2, $3, $3, $4, $4)
			ON CONFLICT (stream) DO UPDATE SET version = $2, last_seq = $3, updated = $4`, stream, v, seq, nanos)
	}
	b.Queue(`UPDATE seq_counter SET last = $1`, n)
	if err := raw.SendBatch(t.Context(), b).Close(); err != nil {
		t.Fatal(err)
	}
}

// A schema of the previous version, with its events, is chained by the
// migration: the chain verifies, and appends after it continue it.
// Read-only, such a schema is read as it is and its chain is refused with
// a message saying why.
func TestMigrationChainsHistory(t *testing.T) {
	const n = 1300 // more than two pages of the migration's reads
	cs, schema := pgtest.Schema(t)
	version2Schema(t, cs, schema, n)

	ro := mustOpen(t, cs, &postgres.Options{Schema: schema, ReadOnly: true})
	if got := len(readAll(t, ro)); got != n {
		t.Fatalf("read-only open of a version 2 schema: %d events, want %d", got, n)
	}
	if _, err := verify.CheckChain(t.Context(), ro, nil); err == nil || !strings.Contains(err.Error(), "predates the hash chain") {
		t.Fatalf("chain of a version 2 schema read-only: %v, want an error saying it predates the chain", err)
	}
	ro.Close()

	db := mustOpen(t, cs, &postgres.Options{Schema: schema})
	checkIntegrity(t, db)
	rep, err := verify.CheckChain(t.Context(), db, nil)
	if err != nil || !rep.OK() || rep.Events != n || rep.HeadSeq != n {
		t.Fatalf("chain after the migration: %+v, %v; want %d events intact", rep, err, n)
	}
	appendN(t, db, "s0", 3)
	rep, err = verify.CheckChain(t.Context(), db, nil)
	if err != nil || !rep.OK() || rep.Events != n+3 || rep.HeadSeq != n+3 {
		t.Fatalf("chain after appending to the migrated schema: %+v, %v", rep, err)
	}
}

// Hosts appending to one schema at once, each through a pool of its own,
// write one chain: it follows the gapless sequence, whoever took each
// number.
func TestChainConcurrentHosts(t *testing.T) {
	cs, schema := pgtest.Schema(t)
	const hosts, writers, appends = 4, 3, 20
	dbs := make([]*postgres.DB, hosts)
	for i := range dbs {
		dbs[i] = mustOpen(t, cs, &postgres.Options{Schema: schema})
	}
	var wg sync.WaitGroup
	errs := make(chan error, hosts*writers)
	for h, db := range dbs {
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				stream := fmt.Sprintf("host%d-w%d", h, w)
				for i := range appends {
					es := make([]events.Envelope, 1+i%3)
					for k := range es {
						es[k] = envelope(i*10 + k)
						es[k].Host = fmt.Sprintf("host%d", h)
					}
					if _, err := db.Append(t.Context(), stream, store.AnyVersion, es); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := hosts * writers * (appends / 3 * 6)
	for i := range appends % 3 {
		want += hosts * writers * (1 + i)
	}
	checkIntegrity(t, dbs[0])
	rep, err := verify.CheckChain(t.Context(), dbs[1], nil)
	if err != nil || !rep.OK() || rep.Events != want || rep.HeadSeq != uint64(want) {
		t.Fatalf("chain after %d hosts appended at once: %+v, %v; want %d events intact", hosts, rep, err, want)
	}
}
