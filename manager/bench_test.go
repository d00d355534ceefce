package manager

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
)

// The benchmarks measure the manager's performance targets, each stated
// on its benchmark, against a baseline measured in the same run. Baseline and subject alternate within
// each iteration, so a machine shared with other work disturbs both alike.

// benchStores names the stores the benchmarks run against: the memory
// store, plus SQLite when built with -tags sqlitebench (which needs cgo).
var benchStores = map[string]func(b *testing.B) store.Store{
	"memory": func(*testing.B) store.Store { return memory.New() },
}

func benchJournal(b *testing.B, st store.Store) *journal.Journal {
	j, err := journal.New(st, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	return j
}

func benchConfig(b *testing.B, name string, behaviours ...string) events.ServerConfig {
	cmd, args := fixturetest.Command(b, behaviours...)
	return events.ServerConfig{Name: name, Command: cmd, Args: args}
}

// BenchmarkWarmStartup: 20 servers whose tools/list takes 2 s, with a warm
// tool cache. The gate must return within 250 ms + 15 ms with every
// server's tools present, deferred. Reported: the gate's return time and
// its overhead beyond the gate.
func BenchmarkWarmStartup(b *testing.B) {
	const servers = 20
	j := benchJournal(b, memory.New())
	var configs []events.ServerConfig
	for i := range servers {
		cfg := benchConfig(b, fmt.Sprintf("srv%02d", i), "only=echo,add", "slow-list=2s")
		configs = append(configs, cfg)
		// An earlier session listed them.
		_, err := j.Append(context.Background(), "earlier", &events.ToolsListed{
			Server: cfg.Name, ConfigHash: cfg.Hash(), Cause: events.CauseInitial, Count: 2,
			Tools: []events.ToolDef{{Name: "echo"}, {Name: "add"}},
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	cache := sharedCache(b, j)
	ctx := context.Background()
	var total time.Duration
	for i := 0; b.Loop(); i++ {
		m, err := New(j, fmt.Sprintf("warm-%d", i), &Options{Cwd: b.TempDir(), ToolCache: cache})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		res, err := m.ConnectServers(ctx, configs, nil)
		elapsed := time.Since(start)
		total += elapsed
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Tools) != 2*servers {
			b.Fatalf("%d tools at the gate, want %d", len(res.Tools), 2*servers)
		}
		for _, t := range res.Tools {
			if !t.Deferred {
				b.Fatalf("tool %s not deferred", t.Name)
			}
		}
		b.StopTimer()
		m.Close(ctx)
		b.StartTimer()
	}
	avg := total / time.Duration(b.N)
	b.ReportMetric(float64(avg.Microseconds())/1000, "gate-ms")
	b.ReportMetric(float64((avg-DefaultGate).Microseconds())/1000, "overhead-ms")
}

// BenchmarkColdStartup: 20 fast stdio servers, no cache, through the
// manager (events recorded) against a bare go-sdk client that connects and
// lists the same 20 servers in parallel. Target: ratio ≤ 1.15.
func BenchmarkColdStartup(b *testing.B) {
	for name, newStore := range benchStores {
		b.Run(name, func(b *testing.B) { benchColdStartup(b, newStore(b)) })
	}
}

func benchColdStartup(b *testing.B, st store.Store) {
	const servers = 20
	j := benchJournal(b, st)
	var configs []events.ServerConfig
	for i := range servers {
		configs = append(configs, benchConfig(b, fmt.Sprintf("srv%02d", i), "only=echo,add"))
	}
	ctx := context.Background()
	cache := sharedCache(b, j)
	var bare, managed time.Duration
	for i := 0; b.Loop(); i++ {
		// Alternate which goes first, so neither pays for the other's
		// teardown.
		runBare := func() {
			start := time.Now()
			sessions := make([]*mcp.ClientSession, servers)
			var wg sync.WaitGroup
			for k, cfg := range configs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c := mcp.NewClient(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
					cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(cfg.Command, cfg.Args...)},
						&mcp.ClientSessionOptions{ProtocolVersion: DefaultProtocolVersion})
					if err != nil {
						b.Error(err)
						return
					}
					for _, err := range cs.Tools(ctx, nil) {
						if err != nil {
							b.Error(err)
						}
					}
					sessions[k] = cs
				}()
			}
			wg.Wait()
			bare += time.Since(start)
			b.StopTimer()
			closeAll(sessions)
			b.StartTimer()
		}
		runManager := func() {
			// A long gate: the call returns when every server is ready,
			// as the bare client does.
			m, err := New(j, fmt.Sprintf("cold-%d", i), &Options{Cwd: b.TempDir(), Gate: time.Minute, ToolCache: cache})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			res, err := m.ConnectServers(ctx, configs, nil)
			managed += time.Since(start)
			if err != nil || len(res.Errors) > 0 || len(res.Tools) != 2*servers {
				b.Fatalf("connect: %v %v %d tools", res.Errors, err, len(res.Tools))
			}
			b.StopTimer()
			m.Close(ctx)
			b.StartTimer()
		}
		if i%2 == 0 {
			runBare()
			runManager()
		} else {
			runManager()
			runBare()
		}
	}
	n := time.Duration(b.N)
	b.ReportMetric(float64((bare/n).Microseconds())/1000, "bare-ms")
	b.ReportMetric(float64((managed/n).Microseconds())/1000, "manager-ms")
	b.ReportMetric(float64(managed)/float64(bare), "ratio")
}

func closeAll(sessions []*mcp.ClientSession) {
	var wg sync.WaitGroup
	for _, cs := range sessions {
		if cs != nil {
			wg.Add(1)
			go func() { defer wg.Done(); cs.Close() }()
		}
	}
	wg.Wait()
}

// BenchmarkToolCall: one echo call through the manager, with its two audit
// events recorded, against a bare go-sdk CallTool on the same stdio
// server. Target: ratio ≤ 1.10.
func BenchmarkToolCall(b *testing.B) {
	for name, newStore := range benchStores {
		b.Run(name, func(b *testing.B) { benchToolCall(b, newStore(b)) })
	}
}

func benchToolCall(b *testing.B, st store.Store) {
	j := benchJournal(b, st)
	ctx := context.Background()
	cfg := benchConfig(b, "fx", "only=echo")
	m, err := New(j, "calls", &Options{Cwd: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close(ctx)
	if _, err := m.ConnectServers(ctx, []events.ServerConfig{cfg}, nil); err != nil {
		b.Fatal(err)
	}
	echo := m.Tools()[0]
	// The bare client talks to the very process the manager started.
	m.mu.Lock()
	cs := m.servers["fx"].conn.cs
	m.mu.Unlock()
	args := map[string]any{"text": "hello"}
	var bare, managed time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if r, err := echo.Call(ctx, args); err != nil || r.IsError {
			b.Fatal(r, err)
		}
		managed += time.Since(mid)
		bare += mid.Sub(start)
	}
	n := time.Duration(b.N)
	b.ReportMetric(float64((bare / n).Microseconds()), "bare-µs")
	b.ReportMetric(float64((managed / n).Microseconds()), "manager-µs")
	b.ReportMetric(float64(managed)/float64(bare), "ratio")
}

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

// sharedCache returns a tool cache attached to j, shared by the managers of
// a benchmark as one process's sessions would share it.
func sharedCache(b *testing.B, j *journal.Journal) *projector.ToolCache {
	c := projector.NewToolCache()
	if err := j.Attach(context.Background(), c); err != nil {
		b.Fatal(err)
	}
	return c
}
