package postgres_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/postgres"
	"github.com/mcplife/mcplife/store/postgres/pgtest"
	"github.com/mcplife/mcplife/store/storetest"
)

// The helper process (TestHelperProcess) is told what to do through these
// environment variables: its role, and the database and schema to open.
const (
	helperEnv = "MCPLIFE_POSTGRES_HELPER"
	connEnv   = "MCPLIFE_POSTGRES_HELPER_CONN"
	schemaEnv = "MCPLIFE_POSTGRES_HELPER_SCHEMA"
	writerEnv = "MCPLIFE_POSTGRES_HELPER_WRITER"
)

// Roles of the helper process.
const (
	roleCrash  = "crash"  // append until killed (the Durability case)
	roleOpen   = "open"   // open the store once the parent says go
	roleWriter = "writer" // append a fixed number of events once the parent says go
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Features{
		Snapshots: true,
		Reopen: func(t *testing.T, s store.Store) store.Store {
			return mustOpen(t, pgtest.ConnString(t), &postgres.Options{Schema: s.(*postgres.DB).Schema()})
		},
		// Three writer processes in turn append to one schema and are
		// killed after 100 acknowledged appends each; each one continues
		// what the previous one left.
		Durability: func(t *testing.T) storetest.Crash {
			cs, schema := pgtest.Schema(t)
			var acked []events.Envelope
			for range 3 {
				cmd := helper(roleCrash, cs, schema)
				acked = append(acked, storetest.KillAfterAcks(t, cmd, 100)...)
			}
			// A read-only reader (mcp-audit on a crashed session) sees
			// every acknowledged event.
			ro := mustOpen(t, cs, &postgres.Options{Schema: schema, ReadOnly: true})
			last, err := ro.LastSeq(t.Context())
			if err != nil || last < acked[len(acked)-1].Seq {
				t.Fatalf("read-only LastSeq after the crash = %d, %v; want at least %d", last, err, acked[len(acked)-1].Seq)
			}
			if err := ro.Close(); err != nil {
				t.Fatal(err)
			}
			db, err := postgres.Open(t.Context(), cs, &postgres.Options{Schema: schema})
			if err != nil {
				t.Fatalf("reopen after the crash: %v", err)
			}
			return storetest.Crash{Store: db, Acked: acked}
		},
	}, func(t *testing.T) store.Store {
		cs, schema := pgtest.Schema(t)
		return mustOpen(t, cs, &postgres.Options{Schema: schema})
	})
}

// helper returns the command that runs this test binary as the helper
// process in role on schema.
func helper(role, connString, schema string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), append(env, helperEnv+"="+role, connEnv+"="+connString, schemaEnv+"="+schema)...)
	return cmd
}

// TestHelperProcess is the child process of the tests that need several
// processes. Run as a child (helperEnv set), it plays its role and exits;
// otherwise it does nothing.
func TestHelperProcess(t *testing.T) {
	role := os.Getenv(helperEnv)
	if role == "" {
		return
	}
	ctx := context.Background()
	cs, schema := os.Getenv(connEnv), os.Getenv(schemaEnv)
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// The roles that race start together: each says ready, then waits
	// for the parent's go (a line on stdin).
	waitForGo := func() {
		fmt.Println("ready")
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			fail(fmt.Errorf("wait for go: %w", err))
		}
	}
	switch role {
	case roleCrash:
		db, err := postgres.Open(ctx, cs, &postgres.Options{Schema: schema})
		if err != nil {
			fail(err)
		}
		err = storetest.AppendUntilDone(ctx, db, os.Stdout)
		fail(err)
	case roleOpen:
		waitForGo()
		db, err := postgres.Open(ctx, cs, &postgres.Options{Schema: schema})
		if err != nil {
			fail(err)
		}
		if err := db.Close(); err != nil {
			fail(err)
		}
	case roleWriter:
		db, err := postgres.Open(ctx, cs, &postgres.Options{Schema: schema})
		if err != nil {
			fail(err)
		}
		waitForGo()
		if err := writeAppends(ctx, db, os.Getenv(writerEnv)); err != nil {
			fail(err)
		}
		if err := db.Close(); err != nil {
			fail(err)
		}
	default:
		fail(fmt.Errorf("unknown helper role %q", role))
	}
	os.Exit(0)
}

// Each writer process runs writerGoroutines goroutines that each make
// writerAppends appends of one to three events, alternating between the
// shared stream (AnyVersion) and a stream of their own (exact versions).
const (
	writerGoroutines = 2
	writerAppends    = 120
)

// writerEvent is the data of an event writeAppends appends: event I of
// append A by goroutine G of writer W.
type writerEvent struct {
	W string `json:"w"`
	G int    `json:"g"`
	A int    `json:"a"`
	I int    `json:"i"`
}

func writeAppends(ctx context.Context, db *postgres.DB, writer string) error {
	var wg sync.WaitGroup
	errs := make([]error, writerGoroutines)
	for g := range writerGoroutines {
		wg.Go(func() {
			own := fmt.Sprintf("%s-%d", writer, g)
			var ownVersion int64
			for a := range writerAppends {
				es := make([]events.Envelope, 1+a%3)
				for i := range es {
					data, _ := json.Marshal(writerEvent{W: writer, G: g, A: a, I: i})
					es[i] = events.Envelope{Type: "Written", Schema: 1, Time: time.Now(), SessionID: own, Host: writer, Data: data}
				}
				stream, expected := "shared", store.AnyVersion
				if a%2 == 1 {
					stream, expected = own, ownVersion
				}
				got, err := db.Append(ctx, stream, expected, es)
				if err != nil {
					errs[g] = fmt.Errorf("writer %s goroutine %d append %d: %w", writer, g, a, err)
					return
				}
				if stream == own {
					ownVersion = int64(got[len(got)-1].Version)
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// startTogether starts cmds, waits until each has said it is ready, then
// tells them all to go. It returns a channel that yields each one's exit
// (nil or its error and stderr) as it ends.
func startTogether(t *testing.T, cmds []*exec.Cmd) <-chan error {
	t.Helper()
	type proc struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stdout *bufio.Reader
		stderr *bytes.Buffer
	}
	procs := make([]proc, len(cmds))
	for i, cmd := range cmds {
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		stderr := &bytes.Buffer{}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			// Normally they have exited; this ends one that hangs.
			_ = cmd.Process.Kill()
		})
		procs[i] = proc{cmd, stdin, bufio.NewReader(stdout), stderr}
	}
	for i, p := range procs {
		line, err := p.stdout.ReadString('\n')
		if err != nil || strings.TrimSpace(line) != "ready" {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
			t.Fatalf("helper %d: got %q, %v instead of ready\nstderr:\n%s", i, line, err, p.stderr)
		}
	}
	for _, p := range procs {
		if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, len(procs))
	for i, p := range procs {
		go func() {
			// The rest of stdout (a test binary's own lines) is not
			// needed, but must be drained for the process to finish.
			_, _ = io.Copy(io.Discard, p.stdout)
			err := p.cmd.Wait()
			if err != nil {
				err = fmt.Errorf("helper %d: %w\nstderr:\n%s", i, err, p.stderr)
			}
			done <- err
		}()
	}
	return done
}

// TestTwoWriterProcesses runs two processes that append to the same schema
// at once, each from two goroutines, while this process follows the log.
// The follower never sees a sequence before all lower ones are visible;
// afterwards the log is gapless, every stream's versions run 1..n, each
// append's events are stored together, and appends that one goroutine made
// one after another (the later one started after the earlier one was
// acknowledged, so committed) have ascending sequences: sequence order is
// commit order.
func TestTwoWriterProcesses(t *testing.T) {
	cs, schema := pgtest.Schema(t)
	db := mustOpen(t, cs, &postgres.Options{Schema: schema})
	writers := []string{"w1", "w2"}
	var cmds []*exec.Cmd
	for _, w := range writers {
		cmds = append(cmds, helper(roleWriter, cs, schema, writerEnv+"="+w))
	}
	done := startTogether(t, cmds)

	ctx := t.Context()
	var next uint64 = 1 // the first seq not seen yet
	polls := 0
	follow := func() {
		// LastSeq is read first: every event up to it committed before,
		// so the read after it must find them all, in one gapless run.
		last, err := db.LastSeq(ctx)
		if err != nil {
			t.Fatalf("LastSeq: %v", err)
		}
		for e, err := range db.ReadAll(ctx, next) {
			if err != nil {
				t.Fatalf("ReadAll(%d): %v", next, err)
			}
			if e.Seq != next {
				t.Fatalf("follower: seq %d visible while %d is not", e.Seq, next)
			}
			next++
		}
		if next <= last {
			t.Fatalf("follower: LastSeq was %d but ReadAll found only up to %d", last, next-1)
		}
		polls++
	}
	for running := len(cmds); running > 0; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running--
		default:
			follow()
		}
	}
	follow()
	t.Logf("the follower read the log %d times while it was written", polls)

	all := readAll(t, db)
	if uint64(len(all)) != next-1 {
		t.Fatalf("ReadAll found %d events, the follower %d", len(all), next-1)
	}
	versions := map[string]uint64{}
	type key struct {
		w string
		g int
	}
	lastAppend := map[key]int{}
	switches := 0
	for i, e := range all {
		if e.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
		versions[e.Stream]++
		if e.Version != versions[e.Stream] {
			t.Fatalf("seq %d: stream %s version %d, want %d", e.Seq, e.Stream, e.Version, versions[e.Stream])
		}
		var d writerEvent
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatal(err)
		}
		if e.Host != d.W {
			t.Fatalf("seq %d: host %q, written by %s", e.Seq, e.Host, d.W)
		}
		k := key{d.W, d.G}
		prev, seen := lastAppend[k]
		switch {
		case d.I > 0:
			// The rest of an append follows its first event directly.
			p := all[i-1]
			var pd writerEvent
			_ = json.Unmarshal(p.Data, &pd)
			if pd != (writerEvent{d.W, d.G, d.A, d.I - 1}) || p.Stream != e.Stream {
				t.Fatalf("seq %d: event %d of append %+v does not follow its predecessor", e.Seq, d.I, d)
			}
		case !seen && d.A != 0, seen && d.A != prev+1:
			t.Fatalf("seq %d: append %d of writer %s goroutine %d stored after its append %d", e.Seq, d.A, d.W, d.G, prev)
		default:
			lastAppend[k] = d.A
		}
		if i > 0 && e.Host != all[i-1].Host {
			switches++
		}
	}
	want := len(writers) * writerGoroutines
	if len(lastAppend) != want {
		t.Fatalf("appends from %d goroutines stored, want %d", len(lastAppend), want)
	}
	for k, a := range lastAppend {
		if a != writerAppends-1 {
			t.Fatalf("writer %s goroutine %d: last stored append %d, want %d", k.w, k.g, a, writerAppends-1)
		}
	}
	if switches == 0 {
		t.Fatal("the two processes' appends never interleaved: the test did not test concurrency")
	}
	t.Logf("%d events; the log switched between the processes %d times", len(all), switches)
	checkIntegrity(t, db)
}

// TestConcurrentFirstOpen starts three processes that open the same new
// schema at once: each succeeds, and each migration is applied once.
func TestConcurrentFirstOpen(t *testing.T) {
	cs, schema := pgtest.Schema(t)
	var cmds []*exec.Cmd
	for range 3 {
		cmds = append(cmds, helper(roleOpen, cs, schema))
	}
	done := startTogether(t, cmds)
	for range cmds {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	raw := rawConn(t, cs)
	var n, v int
	if err := raw.QueryRow(t.Context(), `SELECT count(*), max(version) FROM `+pgx.Identifier{schema}.Sanitize()+`.migrations`).Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	if n != v || n < 1 {
		t.Fatalf("migrations table: %d rows up to version %d, want one per version", n, v)
	}
	db := mustOpen(t, cs, &postgres.Options{Schema: schema})
	appendN(t, db, "a", 3)
	checkIntegrity(t, db)
}

func mustOpen(t testing.TB, connString string, opts *postgres.Options) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), connString, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func rawConn(t testing.TB, connString string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), connString)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func envelope(n int) events.Envelope {
	return events.Envelope{
		Type: "Test", Schema: 1, SessionID: "s", Host: "h",
		Time: time.Date(2025, 1, 1, 0, 0, 0, n, time.UTC),
		Data: fmt.Appendf(nil, `{"n":%d}`, n),
	}
}

func appendN(t testing.TB, db *postgres.DB, stream string, n int) []events.Envelope {
	t.Helper()
	es := make([]events.Envelope, n)
	for i := range es {
		es[i] = envelope(i)
	}
	got, err := db.Append(context.Background(), stream, store.AnyVersion, es)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return got
}

func readAll(t testing.TB, db *postgres.DB) []events.Envelope {
	t.Helper()
	var out []events.Envelope
	for e, err := range db.ReadAll(context.Background(), 0) {
		if err != nil {
			t.Fatalf("ReadAll: %v", err)
		}
		out = append(out, e)
	}
	return out
}

func checkIntegrity(t testing.TB, db *postgres.DB) {
	t.Helper()
	if err := db.IntegrityCheck(context.Background()); err != nil {
		t.Fatal(err)
	}
}
