package manager

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store/memory"
)

// TestEagerCache checks on a fake clock that with EagerCache the gate ends
// as soon as every server still connecting has a cached list (at once when
// all do, or when the one without a cache has connected), and that it
// still waits the whole gate when a connecting server has no cache.
func TestEagerCache(t *testing.T) {
	for _, c := range []struct {
		name     string
		uncached string        // Command of a server without a cache; "" for none
		want     time.Duration // gate elapsed on the fake clock
		outcome  events.Outcome
	}{
		{"all cached", "", 0, ""},
		{"uncached one connects at once", "fast", 0, events.OutcomeReady},
		{"uncached one is held", "hold-list", time.Second, events.OutcomeAwaited},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				j := memJournal(t, memory.New())
				defer j.Close()
				ms := &memServers{release: make(chan struct{})}
				m, err := New(j, "s", &Options{Cwd: t.TempDir(), EagerCache: true})
				if err != nil {
					t.Fatal(err)
				}
				m.dial = ms.dial
				defer m.Close(ctx)
				configs := heldWithCache(t, j, 20)
				if c.uncached != "" {
					configs = append(configs, events.ServerConfig{Name: "uncached", Command: c.uncached})
				}
				released := make(chan struct{})
				go func() {
					time.Sleep(time.Second) // fake time: held lists answer after 1 s
					close(ms.release)
					close(released)
				}()
				defer func() { <-released }()
				start := time.Now()
				res, err := m.ConnectServers(ctx, configs, nil)
				if err != nil {
					t.Fatal(err)
				}
				if elapsed := time.Since(start); elapsed != c.want || res.Gate.Elapsed != c.want {
					t.Errorf("gate returned after %v (recorded %v), want %v", elapsed, res.Gate.Elapsed, c.want)
				}
				if o := res.Gate.Outcomes["held07"]; o != events.OutcomeDeferred {
					t.Errorf("cached server's outcome %q, want deferred", o)
				}
				if o := res.Gate.Outcomes["uncached"]; o != c.outcome {
					t.Errorf("uncached server's outcome %q, want %q", o, c.outcome)
				}
				if n := len(res.Tools); n != len(configs) {
					t.Errorf("%d tools at the gate, want %d", n, len(configs))
				}
			})
		})
	}
}
