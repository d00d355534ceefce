package verify_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/mattn/go-sqlite3" // the raw connection that tampers with a file

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
	"github.com/mcplife/mcplife/store/postgres"
	"github.com/mcplife/mcplife/store/postgres/pgtest"
	"github.com/mcplife/mcplife/store/sqlite"
	"github.com/mcplife/mcplife/verify"
)

// chainEvents is the number of events appendChainHistory appends.
const chainEvents = 18

// appendChainHistory appends three sessions' events, interleaved, one or
// two at a time: seqs 1 to chainEvents.
func appendChainHistory(t *testing.T, st store.Store) {
	t.Helper()
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 123456789, time.UTC)
	for i := 0; i < chainEvents; {
		n := min(1+i%2, chainEvents-i)
		var envs []events.Envelope
		for k := range n {
			envs = append(envs, events.Envelope{Type: "ToolCallFinished", Schema: 1, Time: t0.Add(time.Duration(i+k) * time.Millisecond),
				SessionID: fmt.Sprintf("s%d", i%3), CorrelationID: fmt.Sprintf("c%d", i+k), Host: "h1",
				Data: []byte(fmt.Sprintf(`{"server":"git","tool":"status","n":%d}`, i+k))})
		}
		if _, err := st.Append(t.Context(), fmt.Sprintf("s%d", i%3), store.AnyVersion, envs); err != nil {
			t.Fatal(err)
		}
		i += n
	}
}

// tamperBackend is a store with appendChainHistory's events that raw SQL
// can change behind its back. exec runs statements against the store's
// tables (unqualified names); payload is an SQL literal of a JSON payload
// for the data column.
type tamperBackend struct {
	name    string
	setup   func(t *testing.T) (open func() store.ChainReader, exec func(stmts ...string))
	payload func(json string) string
	blob    func(b []byte) string // an SQL literal of bytes
	head    string                // the statement that sets the chain head's value (%s: a blob literal)
}

func tamperBackends() []tamperBackend {
	return []tamperBackend{
		{
			name: "sqlite",
			setup: func(t *testing.T) (func() store.ChainReader, func(...string)) {
				path := filepath.Join(t.TempDir(), "events.db")
				db, err := sqlite.Open(path, nil)
				if err != nil {
					t.Fatal(err)
				}
				appendChainHistory(t, db)
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
				open := func() store.ChainReader {
					ro, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { ro.Close() })
					return ro
				}
				exec := func(stmts ...string) {
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
				return open, exec
			},
			payload: func(json string) string { return "CAST('" + json + "' AS BLOB)" },
			blob:    func(b []byte) string { return fmt.Sprintf("X'%x'", b) },
			head:    "UPDATE streams SET last_hash = %s WHERE last_seq = (SELECT MAX(last_seq) FROM streams)",
		},
		{
			name: "postgres",
			setup: func(t *testing.T) (func() store.ChainReader, func(...string)) {
				cs, schema := pgtest.Schema(t)
				db, err := postgres.Open(t.Context(), cs, &postgres.Options{Schema: schema})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				appendChainHistory(t, db)
				open := func() store.ChainReader {
					ro, err := postgres.Open(t.Context(), cs, &postgres.Options{Schema: schema, ReadOnly: true})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { ro.Close() })
					return ro
				}
				exec := func(stmts ...string) {
					ctx := context.Background()
					raw, err := pgx.Connect(ctx, cs)
					if err != nil {
						t.Fatal(err)
					}
					defer raw.Close(ctx)
					if _, err := raw.Exec(ctx, `SET search_path TO `+pgx.Identifier{schema}.Sanitize()); err != nil {
						t.Fatal(err)
					}
					for _, q := range stmts {
						if _, err := raw.Exec(ctx, q); err != nil {
							t.Fatalf("%s: %v", q, err)
						}
					}
				}
				return open, exec
			},
			payload: func(json string) string { return "convert_to('" + json + "', 'UTF8')" },
			blob:    func(b []byte) string { return fmt.Sprintf("'\\x%x'::bytea", b) },
			head:    "UPDATE seq_counter SET hash = %s",
		},
	}
}

// swapRows swaps the whole rows at seqs a and b.
func swapRows(a, b int) []string {
	return []string{
		fmt.Sprintf(`UPDATE events SET seq = -1 WHERE seq = %d`, a),
		fmt.Sprintf(`UPDATE events SET seq = %d WHERE seq = %d`, a, b),
		fmt.Sprintf(`UPDATE events SET seq = %d WHERE seq = -1`, b),
	}
}

// shift renumbers every row from seq from on by delta, through negative
// seqs so that no two rows ever share one.
func shift(from, delta int) []string {
	return []string{
		fmt.Sprintf(`UPDATE events SET seq = -(seq + %d) WHERE seq >= %d`, delta, from),
		`UPDATE events SET seq = -seq WHERE seq < 0`,
	}
}

// Each way of tampering with a stored history, by raw SQL on SQLite and on
// PostgreSQL, is found, and the first bad event named with what happened
// to it; the untouched history passes.
func TestCheckChainFindsTampering(t *testing.T) {
	type want struct {
		seq  uint64
		kind verify.BreakKind
		// all are the seqs of every break, in order.
		all []uint64
	}
	cases := []struct {
		name   string
		tamper func(b tamperBackend) []string
		want   *want // nil: intact
	}{
		{name: "untouched", tamper: func(tamperBackend) []string { return nil }},
		{
			name: "payload edited",
			tamper: func(b tamperBackend) []string {
				return []string{`UPDATE events SET data = ` + b.payload(`{"server":"git","tool":"rm -rf","n":5}`) + ` WHERE seq = 5`}
			},
			want: &want{5, verify.BreakChanged, []uint64{5}},
		},
		{
			name:   "session edited",
			tamper: func(tamperBackend) []string { return []string{`UPDATE events SET session_id = 'other' WHERE seq = 8`} },
			want:   &want{8, verify.BreakChanged, []uint64{8}},
		},
		{
			name:   "last event edited",
			tamper: func(tamperBackend) []string { return []string{`UPDATE events SET time = time + 1 WHERE seq = 18`} },
			want:   &want{18, verify.BreakChanged, []uint64{18}},
		},
		{
			name:   "truncated",
			tamper: func(tamperBackend) []string { return []string{`DELETE FROM events WHERE seq > 12`} },
			want:   &want{13, verify.BreakRemoved, []uint64{13}},
		},
		{
			name:   "event removed",
			tamper: func(tamperBackend) []string { return []string{`DELETE FROM events WHERE seq = 7`} },
			want:   &want{7, verify.BreakRemoved, []uint64{7}},
		},
		{
			name:   "first event removed",
			tamper: func(tamperBackend) []string { return []string{`DELETE FROM events WHERE seq = 1`} },
			want:   &want{1, verify.BreakRemoved, []uint64{1}},
		},
		{
			name: "event removed and the rest renumbered",
			tamper: func(tamperBackend) []string {
				return append([]string{`DELETE FROM events WHERE seq = 10`}, shift(11, -1)...)
			},
			// The log now ends at 17, before its head: removed there too.
			want: &want{10, verify.BreakRemoved, []uint64{10, 18}},
		},
		{
			name:   "two swapped",
			tamper: func(tamperBackend) []string { return swapRows(4, 9) },
			want:   &want{4, verify.BreakReordered, []uint64{4, 9}},
		},
		{
			name:   "two neighbours swapped",
			tamper: func(tamperBackend) []string { return swapRows(11, 12) },
			want:   &want{11, verify.BreakReordered, []uint64{11, 12}},
		},
		{
			name: "payloads swapped",
			tamper: func(b tamperBackend) []string {
				return []string{
					`UPDATE events SET data = ` + b.payload(`{"server":"git","tool":"status","n":8}`) + ` WHERE seq = 3`,
					`UPDATE events SET data = ` + b.payload(`{"server":"git","tool":"status","n":2}`) + ` WHERE seq = 9`,
				}
			},
			want: &want{3, verify.BreakChanged, []uint64{3, 9}},
		},
		{
			name: "event appended behind the store's back",
			tamper: func(b tamperBackend) []string {
				return []string{`INSERT INTO events (seq, stream, version, type, schema, time, session_id, data)
					VALUES (19, 's0', 100, 'ToolCallFinished', 1, 0, 's0', ` + b.payload(`{}`) + `)`}
			},
			want: &want{19, verify.BreakInserted, []uint64{19}},
		},
		{
			name: "event inserted and the rest renumbered",
			tamper: func(b tamperBackend) []string {
				return append(shift(10, 1), `INSERT INTO events (seq, stream, version, type, schema, time, session_id, data)
					VALUES (10, 's0', 100, 'ToolCallFinished', 1, 0, 's0', `+b.payload(`{}`)+`)`)
			},
			// The log now goes on after its head: inserted there too.
			want: &want{10, verify.BreakInserted, []uint64{10, 19}},
		},
	}
	for _, b := range tamperBackends() {
		t.Run(b.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					open, exec := b.setup(t)
					if stmts := c.tamper(b); len(stmts) > 0 {
						exec(stmts...)
					}
					rep, err := verify.CheckChain(t.Context(), open(), nil)
					if err != nil {
						t.Fatal(err)
					}
					if c.want == nil {
						if !rep.OK() || rep.Events != chainEvents || rep.HeadSeq != chainEvents {
							t.Fatalf("untouched history: %+v, want intact, %d events", rep, chainEvents)
						}
						return
					}
					if rep.OK() {
						t.Fatalf("chain intact after tampering: %+v", rep)
					}
					first := rep.Breaks[0]
					var seqs []uint64
					for _, br := range rep.Breaks {
						seqs = append(seqs, br.Seq)
					}
					if first.Seq != c.want.seq || first.Kind != c.want.kind || fmt.Sprint(seqs) != fmt.Sprint(c.want.all) {
						t.Errorf("first break %s, breaks at %v; want seq %d %s, breaks at %v\n%s",
							first, seqs, c.want.seq, c.want.kind, c.want.all, describe(rep))
					}
				})
			}
		})
	}
}

func describe(rep verify.ChainReport) string {
	var b strings.Builder
	for _, br := range rep.Breaks {
		fmt.Fprintln(&b, br)
	}
	return b.String()
}

// A session's check reads the log up to the session's last event: a break
// after it is not the session's, one before it is.
func TestCheckChainUpTo(t *testing.T) {
	for _, b := range tamperBackends() {
		t.Run(b.name, func(t *testing.T) {
			open, exec := b.setup(t)
			exec(`DELETE FROM events WHERE seq = 15`)
			st := open()
			if rep, err := verify.CheckChain(t.Context(), st, &verify.ChainOptions{UpTo: 14}); err != nil || !rep.OK() || rep.LastSeq != 14 {
				t.Errorf("up to seq 14: %+v, %v; want intact", rep, err)
			}
			rep, err := verify.CheckChain(t.Context(), st, &verify.ChainOptions{UpTo: 16})
			if err != nil || rep.OK() || rep.Breaks[0].Seq != 15 || rep.Breaks[0].Kind != verify.BreakRemoved {
				t.Errorf("up to seq 16: %+v, %v; want seq 15 removed", rep, err)
			}
			exec(`DELETE FROM events WHERE seq >= 16`)
			rep, err = verify.CheckChain(t.Context(), st, &verify.ChainOptions{UpTo: 16})
			if err != nil || rep.OK() || rep.Breaks[0].Seq != 15 || len(rep.Breaks) != 1 {
				t.Errorf("up to seq 16, the log ending at 14: %+v, %v; want seqs 15 to 16 removed", rep, err)
			}
		})
	}
}

// The memory store's chain, which nothing can change, always holds.
func TestCheckChainMemory(t *testing.T) {
	st := memory.New()
	appendChainHistory(t, st)
	rep, err := verify.CheckChain(t.Context(), st, nil)
	if err != nil || !rep.OK() || rep.Events != chainEvents {
		t.Fatalf("%+v, %v", rep, err)
	}
	empty, err := verify.CheckChain(t.Context(), memory.New(), nil)
	if err != nil || !empty.OK() || empty.Events != 0 || empty.HeadHash != "" {
		t.Fatalf("empty store: %+v, %v", empty, err)
	}
}

// The chain does not depend on the store: SQLite computes it in the
// process, PostgreSQL finishes it in SQL, and the same history gives the
// same head in both and in the memory store.
func TestChainSameInEveryStore(t *testing.T) {
	mem := memory.New()
	appendChainHistory(t, mem)
	want, err := mem.ChainHead(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range tamperBackends() {
		open, _ := b.setup(t)
		got, err := open().ChainHead(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if got.Seq != want.Seq || fmt.Sprintf("%x", got.Hash) != fmt.Sprintf("%x", want.Hash) {
			t.Errorf("%s: head seq %d %x, the memory store's seq %d %x", b.name, got.Seq, got.Hash, want.Seq, want.Hash)
		}
	}
}

// A chain value computed over the wrong predecessor (here the event two
// before), with every value after it chained on from it and the head set
// to match, is found at that event, though each event around it is intact.
func TestCheckChainFindsAValueForgedOverTheWrongPredecessor(t *testing.T) {
	const forged = 7
	for _, b := range tamperBackends() {
		t.Run(b.name, func(t *testing.T) {
			open, exec := b.setup(t)
			var rows []store.ChainedEvent
			for row, err := range open().ReadChain(t.Context(), 1) {
				if err != nil {
					t.Fatal(err)
				}
				rows = append(rows, row)
			}
			if len(rows) != chainEvents {
				t.Fatalf("%d rows", len(rows))
			}
			var stmts []string
			var prev [store.ChainHashSize]byte
			copy(prev[:], rows[forged-3].Hash) // seq forged-2
			for _, r := range rows[forged-1:] {
				h := store.ChainStep(prev, r.Env.Seq, r.Env.Version, store.ContentDigest(r.Env))
				stmts = append(stmts, fmt.Sprintf("UPDATE events SET hash = %s WHERE seq = %d", b.blob(h[:]), r.Env.Seq))
				prev = h
			}
			stmts = append(stmts, fmt.Sprintf(b.head, b.blob(prev[:])))
			exec(stmts...)
			rep, err := verify.CheckChain(t.Context(), open(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Breaks) != 1 || rep.Breaks[0].Seq != forged || rep.Breaks[0].Kind != verify.BreakChanged {
				t.Fatalf("breaks:\n%s want one, changed, at seq %d", describe(rep), forged)
			}
		})
	}
}
