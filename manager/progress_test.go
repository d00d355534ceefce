package manager

import (
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
)

// A call made under WithProgress receives the server's progress
// notifications, in order; a plain call sends no token.
func TestCallReportsProgress(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, &Options{Gate: time.Minute})
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "p", "only=progress")}, nil); err != nil {
		t.Fatal(err)
	}
	tool := e.m.Tools()[0]
	got := make(chan Progress, 16)
	res, err := tool.Call(WithProgress(ctx, func(p Progress) { got <- p }), map[string]any{"steps": 4})
	if err != nil || res.Result.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	// Notifications may trail the result (the go-sdk handles them
	// concurrently); each of the four arrives once.
	seen := map[float64]bool{}
	for len(seen) < 4 {
		select {
		case p := <-got:
			if p.Total != 4 || seen[p.Progress] {
				t.Fatalf("notification %+v (seen %v)", p, seen)
			}
			seen[p.Progress] = true
		case <-ctx.Done():
			t.Fatalf("only %d notifications", len(seen))
		}
	}
	plain, err := tool.Call(ctx, map[string]any{"steps": 2})
	if err != nil || plain.Result.IsError || !strings.Contains(string(structuredJSON(plain)), `"notified":false`) {
		t.Fatalf("plain call: %v %+v", err, plain)
	}
}
