package manager

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
)

// goroutinesIn counts the goroutines with a frame of a function whose name
// starts with prefix, leaving out the test's own, the go-sdk's (its
// reader calls into the transport) and the manager's own two (the
// recording pump and the clock check), which are not per server.
func goroutinesIn(prefix string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, ".Test") || strings.Contains(g, "created by github.com/modelcontextprotocol/") ||
			strings.Contains(g, "(*Manager).pump") || strings.Contains(g, "(*Manager).clockWatch") {
			continue
		}
		for _, line := range strings.Split(g, "\n") {
			if !strings.HasPrefix(line, "\t") && strings.HasPrefix(line, prefix) {
				count++
				break
			}
		}
	}
	return count
}

// A connected, idle server costs the manager at most 2 goroutines of its
// own (the one that owns the server, whose select also notices the end of
// the connection, and the wait for the session's end), and the process
// layer 2 (the stderr reader and the reaper), whatever it serves: tools,
// resources and prompts.
func TestGoroutinesPerConnectedServer(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	const n = 5
	baseManager, baseProc := goroutinesIn("github.com/mcplife/mcplife/manager."), goroutinesIn("github.com/mcplife/mcplife/internal/proc.")
	var cfgs []events.ServerConfig
	for i := range n {
		cfgs = append(cfgs, stdio(t, fmt.Sprintf("s%d", i), "only=echo", "resources=2", "prompts=2"))
	}
	if res, err := e.m.ConnectServers(ctx, cfgs, nil); err != nil || len(res.Errors) > 0 {
		t.Fatal(res.Errors, err)
	}
	if err := e.m.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	// Goroutines of the start (the first lists, the log level) end just
	// after it: wait until they did.
	var perManager, perProc float64
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		perManager = float64(goroutinesIn("github.com/mcplife/mcplife/manager.")-baseManager) / n
		perProc = float64(goroutinesIn("github.com/mcplife/mcplife/internal/proc.")-baseProc) / n
		if perManager <= 2 && perProc <= 2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("an idle connected server keeps %.1f manager goroutines (want at most 2) and %.1f process goroutines (want at most 2)", perManager, perProc)
		case <-tick.C:
		}
	}
	t.Logf("per idle connected server: %.1f manager goroutines, %.1f process goroutines", perManager, perProc)
}
