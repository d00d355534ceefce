package manager_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/store/memory"
)

// BenchmarkFreshToolsConnect measures a connect of a stdio server of 514
// tools at protocol 2026-07-28 until ConnectServers returns with its
// tools, when the cache holds its list fresh (no tools/list) and when it
// lists, side by side in one run. Reported: the time of each and
// fresh/listed.
func BenchmarkFreshToolsConnect(b *testing.B) {
	ctx := context.Background()
	j, err := journal.New(memory.New(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	command, args := fixturetest.Command(b, "tools=500")
	fresh := events.ServerConfig{Name: "fresh", Command: command, Args: args, ProtocolVersion: "2026-07-28"}
	listed := events.ServerConfig{Name: "listed", Command: command, Args: args, ProtocolVersion: "2026-07-28"}

	connect := func(cfg events.ServerConfig) (time.Duration, *manager.Manager) {
		m, err := manager.New(j, "bench", &manager.Options{Gate: time.Minute, Cwd: b.TempDir(), Health: manager.HealthOptions{Interval: -1}})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		res, err := m.ConnectServers(ctx, []events.ServerConfig{cfg}, nil)
		d := time.Since(start)
		if err != nil || len(res.Errors) > 0 || len(res.Tools) < 500 {
			b.Fatalf("%s: %d tools, %v %v", cfg.Name, len(res.Tools), res.Errors, err)
		}
		return d, m
	}
	// The list of the fresh server, as a server that gives ttlMs would
	// have recorded it: taken once, then recorded again with an hour's
	// ttlMs.
	_, m := connect(fresh)
	m.Close(ctx)
	var list *events.ToolsListed
	for env, err := range j.Store().ReadStream(ctx, "bench", 1) {
		if err != nil {
			b.Fatal(err)
		}
		if env.Type == events.TypeToolsListed {
			ev, err := events.Decode(env)
			if err != nil {
				b.Fatal(err)
			}
			list = ev.(*events.ToolsListed)
		}
	}
	list.CacheHints = events.CacheHints{TTLMs: time.Hour.Milliseconds(), CacheScope: "public"}
	if _, err := j.Append(ctx, "earlier", list); err != nil {
		b.Fatal(err)
	}

	var ft, lt time.Duration
	for b.Loop() {
		d, m := connect(fresh)
		m.Close(ctx)
		ft += d
		d, m = connect(listed)
		m.Close(ctx)
		lt += d
	}
	n := time.Duration(b.N)
	b.ReportMetric(float64((ft / n).Microseconds()), "fresh-µs")
	b.ReportMetric(float64((lt / n).Microseconds()), "listed-µs")
	b.ReportMetric(float64(ft)/float64(lt), "ratio")
}
