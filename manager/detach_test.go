package manager

import (
	"context"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/projector"
)

// A closed manager's view stops following the journal: a process that runs
// many sessions on one journal does not fold every later append into the
// views of the sessions it closed.
func TestCloseDetachesView(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	m := e.manager("closing", nil)
	if _, err := m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "a", "only=echo")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := m.Status("a"); st != projector.StatusDisconnected {
		t.Fatalf("status of a after Close: %s", st)
	}
	// An event of the same session recorded afterwards, by someone else.
	if _, err := e.j.Append(context.Background(), "closing", &events.ServerDiscovered{Server: "b", Transport: "stdio",
		Config: events.ServerConfig{Name: "b", Command: "b"}}); err != nil {
		t.Fatal(err)
	}
	if st, ok := m.View().Server("b"); ok {
		t.Fatalf("the closed manager's view folded a later event: %+v", st)
	}
}
