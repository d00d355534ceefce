package main

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/postgres"
	"github.com/mcplife/mcplife/store/postgres/pgtest"
	"github.com/mcplife/mcplife/store/sqlite"
)

// twoSessions writes sessions a and b, one after the other, and returns
// the file and the number of events of each.
func twoSessions(t *testing.T) (string, int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.db")
	appendHistory(t, path, "a", goodHistory...)
	appendHistory(t, path, "b", goodHistory...)
	n := 0
	for _, it := range goodHistory {
		if _, ok := it.(interface{ Type() string }); ok {
			n++
		}
	}
	return path, n
}

func rawSQLite(t *testing.T, path string, stmts ...string) {
	t.Helper()
	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range stmts {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func chainOutput(t *testing.T, out string) chainJSON {
	t.Helper()
	var got chainJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("verify --chain --json: %v\n%s", err, out)
	}
	return got
}

// verify --chain passes on an untouched store, and names the first bad
// event of one edited, cut short, with an event removed or with two
// swapped, exiting 1.
func TestVerifyChain(t *testing.T) {
	path, n := twoSessions(t)
	for _, args := range [][]string{{"verify", "--chain"}, {"verify", "--chain", "--all"}, {"verify", "a", "--chain"}} {
		code, out, errOut := runCmd(t, append([]string{"--db", path}, args...)...)
		if code != 0 || !strings.Contains(out, "intact") {
			t.Fatalf("%v on an untouched store: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	code, out, _ := runCmd(t, "--db", path, "--json", "verify", "--chain")
	if got := chainOutput(t, out); code != 0 || !got.OK || got.Events != 2*n || got.FirstBad != nil || len(got.HeadHash) != 64 {
		t.Fatalf("verify --chain --json: exit %d %+v", code, got)
	}

	cases := []struct {
		name  string
		stmts []string
		want  string // in the text output
		seq   uint64
		kind  string
	}{
		{"edited", []string{`UPDATE events SET data = CAST('{"server":"evil"}' AS BLOB) WHERE seq = 3`}, "seq 3  changed", 3, "changed"},
		{"truncated", []string{`DELETE FROM events WHERE seq > 15`}, "seq 16  removed", 16, "removed"},
		{"removed", []string{`DELETE FROM events WHERE seq = 5`}, "seq 5  removed", 5, "removed"},
		{"swapped", []string{`UPDATE events SET seq = -1 WHERE seq = 4`, `UPDATE events SET seq = 4 WHERE seq = 6`, `UPDATE events SET seq = 6 WHERE seq = -1`},
			"seq 4  reordered", 4, "reordered"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, _ := twoSessions(t)
			rawSQLite(t, path, c.stmts...)
			code, out, errOut := runCmd(t, "--db", path, "verify", "--chain", "--all")
			if code != 1 || !strings.Contains(out, c.want) || !strings.Contains(out, "first bad event seq") {
				t.Fatalf("exit %d, want 1 naming %q:\n%s%s", code, c.want, out, errOut)
			}
			code, out, _ = runCmd(t, "--db", path, "--json", "verify", "--chain")
			got := chainOutput(t, out)
			if code != 1 || got.OK || got.FirstBad == nil || got.FirstBad.Seq != c.seq || string(got.FirstBad.Kind) != c.kind {
				t.Fatalf("--json: exit %d %+v, want seq %d %s first", code, got, c.seq, c.kind)
			}
		})
	}

	// A session's check covers the log up to its last event: a change in
	// a later session is not its, one in an earlier session is.
	path, n = twoSessions(t)
	rawSQLite(t, path, `UPDATE events SET session_id = 'x' WHERE seq = `+strconv.Itoa(n+2))
	if code, out, _ := runCmd(t, "--db", path, "verify", "--chain", "a"); code != 0 {
		t.Errorf("verify --chain a, b edited: exit %d\n%s", code, out)
	}
	if code, out, _ := runCmd(t, "--db", path, "verify", "--chain", "b"); code != 1 || !strings.Contains(out, "seq "+strconv.Itoa(n+2)+"  changed") {
		t.Errorf("verify --chain b, b edited: exit %d\n%s", code, out)
	}
}

// A file written before the hash chain, opened read-only as verify opens
// it, has no chain to check: an input error saying so.
func TestVerifyChainOlderFile(t *testing.T) {
	path, _ := twoSessions(t)
	rawSQLite(t, path, `ALTER TABLE streams DROP COLUMN last_hash`, `ALTER TABLE events DROP COLUMN hash`, `PRAGMA user_version = 4`)
	code, _, errOut := runCmd(t, "--db", path, "verify", "--chain")
	if code != 2 || !strings.Contains(errOut, "predates the hash chain") || !strings.Contains(errOut, "read-write") {
		t.Fatalf("exit %d, want 2 with the reason: %s", code, errOut)
	}
}

// On the fleet's PostgreSQL store too.
func TestVerifyChainPostgres(t *testing.T) {
	conn, schema := pgtest.Schema(t)
	db := conn + "&schema=" + schema
	if !strings.Contains(conn, "?") {
		db = conn + "?schema=" + schema
	}
	// The same two sessions as twoSessions, appended to PostgreSQL.
	path, _ := twoSessions(t)
	src, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := postgres.Open(t.Context(), conn, &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	for env, err := range src.ReadAll(t.Context(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dst.Append(t.Context(), env.Stream, store.AnyVersion, []events.Envelope{env}); err != nil {
			t.Fatal(err)
		}
	}

	if code, out, errOut := runCmd(t, "--db", db, "verify", "--chain"); code != 0 || !strings.Contains(out, "intact") {
		t.Fatalf("untouched: exit %d\n%s%s", code, out, errOut)
	}
	raw, err := pgx.Connect(t.Context(), conn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close(t.Context())
	s := pgx.Identifier{schema}.Sanitize()
	for _, q := range []string{`UPDATE ` + s + `.events SET seq = -1 WHERE seq = 7`, `UPDATE ` + s + `.events SET seq = 7 WHERE seq = 12`,
		`UPDATE ` + s + `.events SET seq = 12 WHERE seq = -1`} {
		if _, err := raw.Exec(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runCmd(t, "--db", db, "verify", "--chain")
	if code != 1 || !strings.Contains(out, "seq 7  reordered") || !strings.Contains(out, "first bad event seq 7") {
		t.Fatalf("swapped: exit %d\n%s%s", code, out, errOut)
	}
}
