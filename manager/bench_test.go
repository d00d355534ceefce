package manager

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
)

// What recording costs against the bare go-sdk client (startup, calls, the
// warm gate, on every store) is measured side by side in package bench.

// BenchmarkProtocolVersion compares an echo call under the manager's
// default protocol (2025-11-25) with the go-sdk's newest (2026-07-28),
// bare clients on one server each. Reported: newest/default.
func BenchmarkProtocolVersion(b *testing.B) {
	ctx := context.Background()
	connect := func(pv string) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: fixturetest.Cmd(b, "only=echo")}, &mcp.ClientSessionOptions{ProtocolVersion: pv})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		if got := cs.InitializeResult().ProtocolVersion; got != pv {
			b.Fatalf("negotiated %s, want %s", got, pv)
		}
		return cs
	}
	def, newest := connect(DefaultProtocolVersion), connect("2026-07-28")
	args := map[string]any{"text": "hello"}
	var dt, nt time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := def.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if _, err := newest.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
			b.Fatal(err)
		}
		nt += time.Since(mid)
		dt += mid.Sub(start)
	}
	n := time.Duration(b.N)
	b.ReportMetric(float64((dt / n).Microseconds()), "2025-11-25-µs")
	b.ReportMetric(float64((nt / n).Microseconds()), "2026-07-28-µs")
	b.ReportMetric(float64(nt)/float64(dt), "ratio")
}
