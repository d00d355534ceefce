package projector

import (
	"fmt"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
)

// benchSession is a realistic recorded session: 20 servers with 30 tools
// each, one failing, one deferred then late, a list-changed, a crash and
// reconnect, a few unknown events, and tool calls up to 100k envelopes.
var benchSession = sync1(func() []events.Envelope { return realisticSession("bench", 20, 30, 100_000) })

func sync1[T any](f func() T) func() T {
	var (
		done bool
		v    T
	)
	return func() T {
		if !done {
			v, done = f(), true
		}
		return v
	}
}

func reportEventsPerSec(b *testing.B, perOp int) {
	b.ReportMetric(float64(perOp)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkReplayToolView rebuilds one session's ToolView from its 100k
// envelopes, ending with the sorted tool list.
func BenchmarkReplayToolView(b *testing.B) {
	envs := benchSession()
	b.ReportAllocs()
	for b.Loop() {
		v := NewToolView("bench")
		for _, env := range envs {
			v.Apply(env)
		}
		if len(v.Tools()) == 0 {
			b.Fatal("no tools")
		}
	}
	reportEventsPerSec(b, len(envs))
}

// BenchmarkReplayDecodeAll is the baseline: decoding every envelope with
// events.Decode and folding nothing.
func BenchmarkReplayDecodeAll(b *testing.B) {
	envs := benchSession()
	b.ReportAllocs()
	for b.Loop() {
		for _, env := range envs {
			if _, err := events.Decode(env); err != nil {
				b.Fatal(err)
			}
		}
	}
	reportEventsPerSec(b, len(envs))
}

// BenchmarkReplaySessionIndex folds the same session into the index.
func BenchmarkReplaySessionIndex(b *testing.B) {
	envs := benchSession()
	b.ReportAllocs()
	for b.Loop() {
		x := NewSessionIndex()
		for _, env := range envs {
			x.Apply(env)
		}
	}
	reportEventsPerSec(b, len(envs))
}

// BenchmarkReplayToolCache folds the same session into the tool cache.
func BenchmarkReplayToolCache(b *testing.B) {
	envs := benchSession()
	b.ReportAllocs()
	for b.Loop() {
		c := NewToolCache()
		for _, env := range envs {
			c.Apply(env)
		}
	}
	reportEventsPerSec(b, len(envs))
}

// BenchmarkToolViewTools measures Tools() on an unchanged view (cached)
// and after a change (rebuilt: naming, sorting) for 20 servers × 30 tools.
func BenchmarkToolViewTools(b *testing.B) {
	v := NewToolView("bench")
	for _, env := range benchSession() {
		v.Apply(env)
	}
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = v.Tools()
		}
	})
	b.Run("rebuilt", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v.toolsValid = false
			_ = v.Tools()
		}
	})
}

// cache20 returns a cache holding 20 servers' lists, written 1000 times
// each, and the keys to look up.
func cache20() (*ToolCache, [][2]string) {
	c := NewToolCache()
	var keys [][2]string
	var seq uint64
	for i := range 20 {
		server, hash := fmt.Sprintf("srv-%02d", i), fmt.Sprintf("%064x", i)
		keys = append(keys, [2]string{server, hash})
		for range 1000 {
			seq++
			c.Apply(listedEnv("s", seq, t0, server, hash, defs(server, 30)))
		}
	}
	return c, keys
}

// BenchmarkToolCacheLookup20 looks up the lists of 20 servers (one op = 20
// lookups) in a cache built from 20,000 ToolsListed events.
func BenchmarkToolCacheLookup20(b *testing.B) {
	c, keys := cache20()
	now := t0.Add(time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		for _, k := range keys {
			if _, _, ok := c.Lookup(k[0], k[1], now); !ok {
				b.Fatal("miss")
			}
		}
	}
}

// BenchmarkMapLookup20Baseline is the baseline: 20 lookups in a plain map
// of slices, without lock, TTL check or copy.
func BenchmarkMapLookup20Baseline(b *testing.B) {
	m := map[[2]string][]events.ToolDef{}
	var keys [][2]string
	for i := range 20 {
		k := [2]string{fmt.Sprintf("srv-%02d", i), fmt.Sprintf("%064x", i)}
		m[k] = defs(k[0], 30)
		keys = append(keys, k)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, k := range keys {
			if len(m[k]) == 0 {
				b.Fatal("miss")
			}
		}
	}
}

// BenchmarkToolCacheRestore20 restores the cache of 20 servers from its
// snapshot and looks all 20 up: the startup cost, independent of how many
// events the store holds.
func BenchmarkToolCacheRestore20(b *testing.B) {
	src, keys := cache20()
	data, err := src.MarshalSnapshot()
	if err != nil {
		b.Fatal(err)
	}
	now := t0.Add(time.Hour)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		c := NewToolCache()
		if err := c.UnmarshalSnapshot(data); err != nil {
			b.Fatal(err)
		}
		for _, k := range keys {
			if _, _, ok := c.Lookup(k[0], k[1], now); !ok {
				b.Fatal("miss")
			}
		}
	}
}
