package manager

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/projector"
)

// After a full lifecycle — connects, a failure, a drop, calls, a
// list_changed, DisconnectAll — the manager leaves no goroutine behind.
func TestNoGoroutineLeakAfterDisconnectAll(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, &Options{Gate: time.Minute, Reconnect: ReconnectPolicy{Disabled: true}})
	release := fixturetest.NewGate(t)
	cfgs := []events.ServerConfig{
		stdio(t, "a", "only=echo,change_tools"),
		stdio(t, "b", "fail-init"),
		stdio(t, "c", "only=pid", release.Arg("exit-on-release")),
		{Name: "h", URL: fixturetest.ServeHTTP(t, "only=echo")},
	}
	if _, err := e.m.ConnectServers(ctx, cfgs, nil); err != nil {
		t.Fatal(err)
	}
	for _, tl := range e.m.Tools() {
		if tl.Original == "echo" {
			if res, err := tl.Call(ctx, map[string]any{"text": "x"}); err != nil || res.Result.IsError {
				t.Fatalf("call %s: %v %v", tl.Name, err, res)
			}
		}
	}
	release.Release()
	if err := waitStatus(ctx, e.m, "c", "disconnected"); err != nil {
		t.Fatal(err)
	}
	if err := e.m.DisconnectAll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if left := leftoverGoroutines(); len(left) > 0 {
		t.Fatalf("%d goroutines of the manager, the go-sdk, HTTP clients or child processes left after DisconnectAll and Close:\n\n%s", len(left), strings.Join(left, "\n\n"))
	}
}

// waitStatus waits through Watch until the server has status.
func waitStatus(ctx context.Context, m *Manager, server string, status projector.Status) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	updates, err := m.Watch(wctx)
	if err != nil {
		return err
	}
	for m.Status(server) != status {
		select {
		case <-updates:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// clientSide marks stack frames of goroutines the manager owns, directly
// or through the clients and processes it starts. Goroutines of the test's
// own fixture servers (httptest, gates) do not count.
var clientSide = []string{
	"mcplife/mcplife/manager.",
	"modelcontextprotocol/go-sdk/",
	"net/http.(*persistConn)",
	"os/exec.",
}

// leftoverGoroutines returns the stacks of client-side goroutines still
// running, waiting a bounded time for those on their way out.
func leftoverGoroutines() []string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 4<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var left []string
		for g := range strings.SplitSeq(string(buf), "\n\n") {
			if strings.Contains(g, "leftoverGoroutines") || strings.Contains(g, "_test.go") && !strings.Contains(g, "created by github.com/mcplife") {
				continue
			}
			for _, mark := range clientSide {
				if strings.Contains(g, mark) {
					left = append(left, g)
					break
				}
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(10 * time.Millisecond) // bounded wait for exiting goroutines, not synchronisation
	}
}
