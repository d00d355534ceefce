package manager

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/store/postgres"
	"github.com/mcplife/mcplife/store/postgres/pgtest"
	"github.com/mcplife/mcplife/verify"
)

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A PostgreSQL store that goes away during a session: the session's
// servers keep working, the outage is logged naming the store's error, and
// once the database is back the call made meanwhile is stored, in order,
// before the ones after it.
func TestPostgresRestartDuringSession(t *testing.T) {
	srv := pgtest.StartServer(t)
	ctx := testCtx(t)
	db, err := postgres.Open(ctx, srv.ConnString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	j, err := journal.New(db, &journal.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	m, err := New(j, "restart", &Options{Gate: time.Minute, Cwd: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	if _, err := m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "srv", "only=echo")}, nil); err != nil {
		t.Fatal(err)
	}
	call := func(text string) {
		t.Helper()
		r, err := tool(t, m, "mcp_srv_echo").Call(ctx, map[string]any{"text": text})
		if err != nil || r.Result.IsError || r.Text() != text {
			t.Fatalf("call %q: %+v %v", text, r, err)
		}
	}
	call("before")
	// A call's ToolCallFinished is appended after the call returns; it is
	// stored before the database goes away.
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	srv.Stop()
	call("while the database is down") // the server keeps working
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if l := logs.String(); !strings.Contains(l, "postgres") {
		t.Errorf("the outage is not logged with the store's error; log:\n%s", l)
	}

	srv.Start()
	call("after")
	if err := j.Flush(ctx); err != nil {
		t.Fatalf("Flush after the restart: %v", err)
	}
	var types []string
	for env, err := range db.ReadStream(ctx, "restart", 1) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, env.Type)
	}
	calls := slices.DeleteFunc(slices.Clone(types), func(s string) bool {
		return s != events.TypeToolCallStarted && s != events.TypeToolCallFinished
	})
	// The call made while the database was down is recorded too.
	if !slices.Equal(calls, slices.Repeat([]string{"ToolCallStarted", "ToolCallFinished"}, 3)) {
		t.Errorf("recorded %v, want the calls before, during and after the outage", types)
	}
}

// A PostgreSQL server stopped for a few seconds while the host calls a tool
// every few milliseconds, with one call in flight when it stops and one
// started while it is down: once it is back, verify passes on the session
// and every call made is recorded; with room for a few events only, a
// RecordingGap accounts for those that are not.
func TestPostgresStoppedUnderCalls(t *testing.T) {
	t.Run("memory", func(t *testing.T) { postgresOutage(t, nil, false) })
	t.Run("spool", func(t *testing.T) {
		postgresOutage(t, &journal.Options{HeldBytes: 32 << 10, Spool: t.TempDir()}, false)
	})
	t.Run("past the bound", func(t *testing.T) { postgresOutage(t, &journal.Options{HeldBytes: 32 << 10}, true) })
}

// postgresOutage runs the outage of TestPostgresStoppedUnderCalls with
// the journal options opts; wantGap: the journal cannot hold it all.
func postgresOutage(t *testing.T, opts *journal.Options, wantGap bool) {
	srv := pgtest.StartServer(t)
	ctx := testCtx(t)
	db, err := postgres.Open(ctx, srv.ConnString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	if opts == nil {
		opts = &journal.Options{}
	}
	opts.Logger = logger
	j, err := journal.New(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	const session = "outage"
	m, err := New(j, session, &Options{Gate: time.Minute, Cwd: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	if _, err := m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "srv", "only=echo,sleep")}, nil); err != nil {
		t.Fatal(err)
	}
	echo, sleep := tool(t, m, "mcp_srv_echo"), tool(t, m, "mcp_srv_sleep")

	// The load: a call every few milliseconds until stop is closed; made
	// counts the calls, and each count in marks is announced once reached.
	var (
		made   atomic.Int64
		failed atomic.Int64
		stop   = make(chan struct{})
		done   = make(chan struct{})
		reach  = make(chan int64, 1) // the call count to announce next
		passed = make(chan struct{}, 1)
	)
	go func() {
		defer close(done)
		tick := time.NewTicker(3 * time.Millisecond)
		defer tick.Stop()
		want := int64(-1)
		for {
			select {
			case <-stop:
				return
			case w := <-reach:
				want = w
			case <-tick.C:
			}
			n := made.Add(1)
			r, err := echo.Call(ctx, map[string]any{"text": fmt.Sprint("c", n)})
			if err != nil || r.Result.IsError {
				failed.Add(1)
			}
			if want >= 0 && n >= want {
				want = -1
				passed <- struct{}{}
			}
		}
	}()
	await := func(more int64) {
		t.Helper()
		reach <- made.Load() + more
		select {
		case <-passed:
		case <-ctx.Done():
			t.Fatalf("the load stopped at %d calls", made.Load())
		}
	}
	held := func(g *fixture.Gate) chan error {
		errc := make(chan error, 1)
		go func() {
			r, err := sleep.Call(ctx, map[string]any{"gate": g.Path()})
			if err == nil && r.Result.IsError {
				err = fmt.Errorf("sleep: %s", r.Text())
			}
			errc <- err
		}()
		if err := g.WaitReached(ctx, 1); err != nil {
			t.Fatal(err)
		}
		return errc
	}

	await(100)
	spanning := fixturetest.NewGate(t)
	spanErr := held(spanning) // in flight when the database stops
	srv.Stop()
	stopped := time.Now()
	await(300)
	spanning.Release()
	inside := fixturetest.NewGate(t)
	insideErr := held(inside) // starts while the database is down
	await(700)
	srv.Start()
	down := time.Since(stopped)
	await(100)
	inside.Release()
	close(stop)
	<-done
	for _, errc := range []chan error{spanErr, insideErr} {
		if err := <-errc; err != nil {
			t.Errorf("sleep call: %v", err)
		}
	}
	if n := failed.Load(); n != 0 {
		t.Errorf("%d of %d calls failed while the database was away", n, made.Load())
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	var (
		envs     []events.Envelope
		finished int
		dropped  int
	)
	for env, err := range db.ReadStream(ctx, session, 1) {
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, env)
		switch env.Type {
		case events.TypeToolCallFinished:
			finished++
		case events.TypeRecordingGap:
			ev, err := events.Decode(env)
			if err != nil {
				t.Fatal(err)
			}
			dropped += ev.(*events.RecordingGap).Dropped
		}
	}
	if v := verify.Session(session, envs); len(v) != 0 {
		t.Errorf("verify: %v", v)
	}
	calls := int(made.Load()) + 2 // and the two sleep calls
	if finished != calls && (dropped == 0 || calls-finished > dropped) {
		t.Errorf("%d calls made, %d recorded, %d events in RecordingGaps: the difference is not accounted for", calls, finished, dropped)
	}
	if opts.Spool != "" {
		if left, _ := filepath.Glob(filepath.Join(opts.Spool, "*.spool")); len(left) != 0 {
			t.Errorf("spool files left once everything was stored: %v", left)
		}
	}
	if wantGap != (dropped > 0) {
		t.Errorf("%d events dropped; want some: %t", dropped, wantGap)
	}
	t.Logf("database down for %v: %d calls made, %d recorded, %d events dropped", down.Round(time.Millisecond), calls, finished, dropped)
	if l := logs.String(); !strings.Contains(l, "store unavailable") {
		t.Errorf("the outage is not logged; log:\n%s", l)
	}
}
