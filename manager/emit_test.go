package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
)

// refusingStore is a memory store whose appends fail while refuse is set.
type refusingStore struct {
	*memory.Store
	refuse bool
}

var errRefused = errors.New("append refused")

func (s *refusingStore) Append(ctx context.Context, stream string, expected int64, envs []events.Envelope) ([]events.Envelope, error) {
	if s.refuse {
		return nil, errRefused
	}
	return s.Store.Append(ctx, stream, expected, envs)
}

var _ store.Store = (*refusingStore)(nil)

// An append that fails is logged once, at Error, naming the types and the
// servers of its events, and returned to the caller.
func TestEmitLogsAFailedAppendOnce(t *testing.T) {
	st := &refusingStore{Store: memory.New()}
	j, err := journal.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	var buf bytes.Buffer
	m, err := New(j, "s1", &Options{Cwd: t.TempDir(), Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })

	st.refuse = true
	err = m.emitCorrelated("c1",
		&events.ToolListChanged{Server: "a"},
		&events.ToolsListFailed{Server: "b", Error: "x"},
		&events.ToolListChanged{Server: "b"},
	)
	if !errors.Is(err, errRefused) {
		t.Fatalf("emit error %v, want %v", err, errRefused)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d log lines, want 1:\n%s", len(lines), buf.String())
	}
	var rec struct{ Level, Msg, Type, Server, Err string }
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	want := struct{ Level, Msg, Type, Server, Err string }{
		"ERROR", "MCP lifecycle event not recorded", events.TypeToolListChanged + "," + events.TypeToolsListFailed, "a,b", rec.Err,
	}
	if rec != want || !strings.Contains(rec.Err, errRefused.Error()) {
		t.Errorf("log record %+v, want %+v with the store's error", rec, want)
	}
}
