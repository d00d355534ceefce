package manager

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/store/postgres"
	"github.com/mcplife/mcplife/store/postgres/pgtest"
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
// servers keep working, the appends that fail are logged naming the
// store's error, and recording resumes once the database is back.
func TestPostgresRestartDuringSession(t *testing.T) {
	srv := pgtest.StartServer(t)
	ctx := testCtx(t)
	db, err := postgres.Open(ctx, srv.ConnString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	j, err := journal.New(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var logs syncBuffer
	m, err := New(j, "restart", &Options{Gate: time.Minute, Cwd: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
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
		if err != nil || r.IsError || r.Text() != text {
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
		t.Errorf("no failed append logged with the store's error; log:\n%s", l)
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
	// The call made while the database was down is the one not recorded.
	if !slices.Equal(calls, []string{"ToolCallStarted", "ToolCallFinished", "ToolCallStarted", "ToolCallFinished"}) {
		t.Errorf("recorded %v, want the calls before and after the restart", types)
	}
}
