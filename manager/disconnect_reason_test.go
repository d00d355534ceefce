package manager

import (
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/projector"
)

// TestDisconnectServerBecause records the reason it is given in the
// server's Disconnected, and refuses a drop's reason (a reconnect follows
// a drop, never a disconnect) without tearing anything down.
func TestDisconnectServerBecause(t *testing.T) {
	e := newEnv(t, &Options{Gate: time.Minute})
	ctx := testCtx(t)
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{stdio(t, "a", "only=echo")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.m.DisconnectServerBecause(ctx, "a", events.ReasonProcessExited); err == nil {
		t.Fatal("a drop's reason was taken")
	}
	if got := e.m.Status("a"); got != projector.StatusConnected {
		t.Fatalf("after a refused disconnect, status %s", got)
	}
	if err := e.m.DisconnectServerBecause(ctx, "a", events.ReasonIdle); err != nil {
		t.Fatal(err)
	}
	ds := ofType[*events.Disconnected](e, "s1")
	if len(ds) != 1 || ds[0].Reason != events.ReasonIdle || ds[0].Reconnecting {
		t.Fatalf("Disconnected %+v, want one, reason idle, no reconnect", ds)
	}
	if got := e.m.Status("a"); got != projector.StatusDisconnected {
		t.Fatalf("status %s, want disconnected", got)
	}
	checkReplay(t, e)
}
