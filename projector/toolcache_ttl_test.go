package projector

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcplife/mcplife/events"
)

// hinted returns a ToolsListed envelope recorded by host with hints h.
func hinted(seq uint64, at time.Time, host, server string, h events.CacheHints, ds []events.ToolDef) events.Envelope {
	env := events.MustNew("s", &events.ToolsListed{Server: server, ConfigHash: "h", Tools: ds, Count: len(ds), CacheHints: h}, at)
	env.Seq, env.Host = seq, host
	return env
}

// A list is fresh while its own ttlMs has not passed since it was
// recorded, and stale after (still served, as a deferred list is); a list
// without ttlMs is never fresh.
func TestToolCacheFreshnessFollowsTTL(t *testing.T) {
	c := NewToolCache()
	c.Apply(hinted(1, t0, "h1", "ttl", events.CacheHints{TTLMs: 1000}, defs("t", 2)))
	c.Apply(hinted(2, t0, "h1", "none", events.CacheHints{}, defs("n", 1)))
	v := Viewer{Host: "h2"}
	for _, tc := range []struct {
		server    string
		at        time.Duration
		ok, fresh bool
	}{
		{"ttl", 999 * time.Millisecond, true, true},
		{"ttl", 1000 * time.Millisecond, true, false},
		{"ttl", time.Hour, true, false},
		{"none", 0, true, false},
	} {
		got, ok := c.LookupFor(v, tc.server, "h", t0.Add(tc.at))
		if ok != tc.ok || got.Fresh != tc.fresh {
			t.Errorf("%s after %v: ok %v fresh %v, want %v %v", tc.server, tc.at, ok, got.Fresh, tc.ok, tc.fresh)
		}
		if ok && got.Age != tc.at {
			t.Errorf("%s after %v: age %v", tc.server, tc.at, got.Age)
		}
	}
}

// A private list is found only by the host that listed it under the same
// authorization context; every other viewer, and the public Lookup, sees
// the public list (or none).
func TestToolCachePrivateListsStayWithTheirViewer(t *testing.T) {
	c := NewToolCache()
	private := events.CacheHints{TTLMs: 60000, CacheScope: events.CacheScopePrivate, AuthContext: "https://as.example sub-a"}
	c.Apply(hinted(1, t0, "hostA", "srv", events.CacheHints{TTLMs: 60000, CacheScope: "public"}, defs("pub", 1)))
	c.Apply(hinted(2, t0.Add(time.Second), "hostA", "srv", private, defs("mine", 3)))
	now := t0.Add(2 * time.Second)
	for _, tc := range []struct {
		name string
		v    Viewer
		want int
	}{
		{"the listing host and context", Viewer{"hostA", "https://as.example sub-a"}, 3},
		{"another user on that host", Viewer{"hostA", "https://as.example sub-b"}, 1},
		{"another host with the same context", Viewer{"hostB", "https://as.example sub-a"}, 1},
		{"no authorization", Viewer{"hostA", ""}, 1},
	} {
		got, ok := c.LookupFor(tc.v, "srv", "h", now)
		if !ok || len(got.List) != tc.want {
			t.Errorf("%s: ok %v, %d tools, want %d", tc.name, ok, len(got.List), tc.want)
		}
	}
	if tools, _, ok := c.Lookup("srv", "h", now); !ok || len(tools) != 1 {
		t.Errorf("Lookup found %d tools (ok %v), want the public list only", len(tools), ok)
	}
	// Only private lists: nobody else finds anything.
	c2 := NewToolCache()
	c2.Apply(hinted(1, t0, "hostA", "srv", private, defs("mine", 3)))
	if _, ok := c2.LookupFor(Viewer{"hostB", private.AuthContext}, "srv", "h", now); ok {
		t.Error("another host found a private list")
	}
	if _, _, ok := c2.Lookup("srv", "h", now); ok {
		t.Error("Lookup found a private list")
	}
}

// The newest era per server and config wins; a modern record is fresh
// while its discover result's ttlMs has not passed, and a private one only
// for the host that probed; the checkpoint keeps eras, hints and owners.
func TestToolCacheErasAndCheckpoint(t *testing.T) {
	era := func(seq uint64, at time.Time, host string, e *events.ServerEraDetected) events.Envelope {
		env := events.MustNew("s", e, at)
		env.Seq, env.Host = seq, host
		return env
	}
	c := NewToolCache()
	c.Apply(era(1, t0, "hostA", &events.ServerEraDetected{Server: "m", ConfigHash: "h", Era: events.EraLegacy, ProtocolVersion: "2025-11-25"}))
	c.Apply(era(2, t0.Add(time.Second), "hostA", &events.ServerEraDetected{Server: "m", ConfigHash: "h", Era: events.EraModern,
		ProtocolVersion: "2026-07-28", SupportedVersions: []string{"2026-07-28"}, TTLMs: 10000, CacheScope: events.CacheScopePrivate,
		Discover: &events.DiscoverInfo{PeerName: "p"}}))
	c.Apply(era(3, t0, "hostA", &events.ServerEraDetected{Server: "l", ConfigHash: "h", Era: events.EraLegacy, ProtocolVersion: "2025-11-25"}))
	c.Apply(hinted(4, t0, "hostA", "m", events.CacheHints{TTLMs: 5000, CacheScope: events.CacheScopePrivate, AuthContext: "ctx"}, defs("m", 2)))
	now := t0.Add(5 * time.Second)

	check := func(c *ToolCache, label string) {
		t.Helper()
		m, ok := c.LookupEra("hostA", "m", "h", now)
		if !ok || m.Era != events.EraModern || !m.Fresh || m.ProtocolVersion != "2026-07-28" || m.Discover == nil || m.Discover.PeerName != "p" {
			t.Errorf("%s: era of m %+v ok %v, want modern, fresh, from its discover result", label, m, ok)
		}
		if m, _ := c.LookupEra("hostB", "m", "h", now); m.Fresh {
			t.Errorf("%s: a private discover result is fresh for another host", label)
		}
		if m, _ := c.LookupEra("hostA", "m", "h", t0.Add(12*time.Second)); m.Fresh {
			t.Errorf("%s: fresh past its ttlMs", label)
		}
		if l, ok := c.LookupEra("hostA", "l", "h", now); !ok || l.Era != events.EraLegacy || l.Fresh {
			t.Errorf("%s: era of l %+v ok %v, want legacy (legacy records carry no ttl)", label, l, ok)
		}
		if got, ok := c.LookupFor(Viewer{"hostA", "ctx"}, "m", "h", now); !ok || len(got.List) != 2 || got.Fresh {
			t.Errorf("%s: private list of m: ok %v %+v", label, ok, got)
		}
	}
	check(c, "live")
	data, err := c.MarshalSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	r := NewToolCache()
	if err := r.UnmarshalSnapshot(data); err != nil {
		t.Fatal(err)
	}
	check(r, "restored")
	again, _ := r.MarshalSnapshot()
	if diff := cmp.Diff(string(data), string(again)); diff != "" {
		t.Errorf("a restored cache checkpoints other bytes:\n%s", diff)
	}
}

// A tool list a connection took from the cache (cause cache) repeats an
// earlier listing: it neither renews the list's freshness nor replaces
// it, so a list is fresh for its own ttlMs from when it was listed, however
// often it is reused.
func TestToolCacheIgnoresToolsTakenFromTheCache(t *testing.T) {
	c := NewToolCache()
	c.Apply(hinted(1, t0, "h1", "srv", events.CacheHints{TTLMs: 1000}, defs("t", 2)))
	reused := events.MustNew("s", &events.ToolsListed{Server: "srv", ConfigHash: "h", Tools: defs("t", 2), Count: 2,
		Cause: events.CauseCache, CacheAge: 900 * time.Millisecond, CacheHints: events.CacheHints{TTLMs: 1000}}, t0.Add(900*time.Millisecond))
	reused.Seq, reused.Host = 2, "h1"
	c.Apply(reused)
	got, ok := c.LookupFor(Viewer{Host: "h1"}, "srv", "h", t0.Add(1500*time.Millisecond))
	if !ok || got.Fresh || got.Age != 1500*time.Millisecond {
		t.Errorf("after the reuse: ok %v fresh %v age %v, want the first listing, stale", ok, got.Fresh, got.Age)
	}
	if n := c.Counts().Ignored; n != 1 {
		t.Errorf("ignored %d envelopes, want 1", n)
	}
}
