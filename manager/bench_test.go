package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/store/memory"
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

// BenchmarkListMemory lists one server of 100,000 tools (100 pages) and
// reports the heap the manager keeps per listed tool (after a GC, the
// session's view, store and cache included) and what it allocated per
// tool, beside a bare go-sdk client that lists the same server and keeps
// the result, and the size of the tools as the server sent them.
func BenchmarkListMemory(b *testing.B) {
	const n = 100_000
	cmd := func() (string, []string) { return fixturetest.Command(b, "only=", fmt.Sprintf("tools=%d", n)) }
	ctx := context.Background()
	measure := func(list func() any) (kept, allocated float64) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		held := list()
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(held)
		return float64(after.HeapAlloc-before.HeapAlloc) / n, float64(after.TotalAlloc-before.TotalAlloc) / n
	}
	var wire float64
	for b.Loop() {
		bareKept, bareAlloc := measure(func() any {
			name, args := cmd()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
				&mcp.CommandTransport{Command: exec.Command(name, args...)}, &mcp.ClientSessionOptions{ProtocolVersion: DefaultProtocolVersion})
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			var tools []*mcp.Tool
			size := 0
			for t, err := range cs.Tools(ctx, nil) {
				if err != nil {
					b.Fatal(err)
				}
				tools = append(tools, t)
				j, _ := json.Marshal(t)
				size += len(j)
			}
			wire = float64(size) / n
			return tools
		})
		var m *Manager
		mgrKept, mgrAlloc := measure(func() any {
			st := memory.New()
			j, err := journal.New(st, nil)
			if err != nil {
				b.Fatal(err)
			}
			m, err = New(j, "bench", &Options{Cwd: b.TempDir(), Gate: time.Minute, MaxListTools: n, MaxSessionTools: n})
			if err != nil {
				b.Fatal(err)
			}
			name, args := cmd()
			res, err := m.ConnectServers(ctx, []events.ServerConfig{{Name: "big", Command: name, Args: args}}, nil)
			if err != nil || len(res.Errors) > 0 || len(res.Tools) != n {
				b.Fatal(len(res.Tools), res.Errors, err)
			}
			if err := j.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			return []any{m, j, st}
		})
		m.Close(ctx)
		b.ReportMetric(wire, "wire-B/tool")
		b.ReportMetric(bareKept, "bare-kept-B/tool")
		b.ReportMetric(bareAlloc, "bare-alloc-B/tool")
		b.ReportMetric(mgrKept, "kept-B/tool")
		b.ReportMetric(mgrAlloc, "alloc-B/tool")
	}
}
