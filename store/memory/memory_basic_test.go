package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
)

func TestAppendRead(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	defer s.Close()
	at := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	env := events.Envelope{Type: "T", Schema: 1, Time: at, SessionID: "a", Data: json.RawMessage(`{}`)}
	got, err := s.Append(ctx, "a", store.NoStream, []events.Envelope{env, env})
	if err != nil {
		t.Fatal(err)
	}
	if got[1].Seq != 2 || got[1].Version != 2 || got[1].Stream != "a" {
		t.Fatalf("assigned %+v", got[1])
	}
	if _, err := s.Append(ctx, "a", store.NoStream, []events.Envelope{env}); !errors.Is(err, store.ErrVersionConflict) {
		t.Fatalf("append to existing stream with NoStream: %v, want ErrVersionConflict", err)
	}
	n := 0
	for e, err := range s.ReadAll(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if e.Seq != uint64(n) {
			t.Fatalf("seq %d at position %d", e.Seq, n)
		}
	}
	if n != 2 {
		t.Fatalf("read %d events, want 2", n)
	}
}
