package projector

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcplife/mcplife/events"
)

// listedEnv returns a stored ToolsListed envelope of session s at seq and t.
func listedEnv(s string, seq uint64, t time.Time, server, hash string, ds []events.ToolDef) events.Envelope {
	env := events.MustNew(s, &events.ToolsListed{Server: server, ConfigHash: hash, Tools: ds, Count: len(ds)}, t)
	env.Seq = seq
	return env
}

func TestToolCacheNewestWins(t *testing.T) {
	older, newer := defs("old", 1), defs("new", 2)
	tests := []struct {
		name  string
		envs  []events.Envelope
		want  []events.ToolDef
		ok    bool
		age   time.Duration
		count Counts
	}{
		{
			name: "in order",
			envs: []events.Envelope{listedEnv("a", 1, t0, "fs", "h1", older), listedEnv("b", 2, t0.Add(time.Minute), "fs", "h1", newer)},
			want: newer, ok: true, age: 9 * time.Minute,
		},
		{
			name: "older seq applied after newer never wins",
			envs: []events.Envelope{listedEnv("b", 2, t0.Add(time.Minute), "fs", "h1", newer), listedEnv("a", 1, t0, "fs", "h1", older)},
			want: newer, ok: true, age: 9 * time.Minute,
		},
		{
			name: "seq decides, not time",
			envs: []events.Envelope{listedEnv("a", 5, t0, "fs", "h1", newer), listedEnv("b", 4, t0.Add(time.Minute), "fs", "h1", older)},
			want: newer, ok: true, age: 10 * time.Minute,
		},
		{
			name: "unstored envelopes compare by time",
			envs: []events.Envelope{listedEnv("b", 0, t0.Add(time.Minute), "fs", "h1", newer), listedEnv("a", 0, t0, "fs", "h1", older)},
			want: newer, ok: true, age: 9 * time.Minute,
		},
		{
			name: "another config hash is another entry",
			envs: []events.Envelope{listedEnv("a", 1, t0, "fs", "h2", newer)},
		},
		{
			name: "another server is another entry",
			envs: []events.Envelope{listedEnv("a", 1, t0, "git", "h1", newer)},
		},
		{
			name: "empty list is a miss",
			envs: []events.Envelope{listedEnv("a", 1, t0, "fs", "h1", nil)},
		},
		{
			name: "empty list invalidates",
			envs: []events.Envelope{listedEnv("a", 1, t0, "fs", "h1", newer), listedEnv("a", 2, t0, "fs", "h1", []events.ToolDef{})},
		},
		{
			name: "an older list does not revive an invalidated entry",
			envs: []events.Envelope{listedEnv("a", 3, t0, "fs", "h1", nil), listedEnv("a", 2, t0, "fs", "h1", older)},
		},
		{
			name: "a newer list after invalidation is a hit",
			envs: []events.Envelope{listedEnv("a", 1, t0, "fs", "h1", nil), listedEnv("a", 2, t0, "fs", "h1", older)},
			want: older, ok: true, age: 10 * time.Minute,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewToolCache()
			for _, env := range tt.envs {
				c.Apply(env)
			}
			got, age, ok := c.Lookup("fs", "h1", t0.Add(10*time.Minute))
			if ok != tt.ok || age != tt.age {
				t.Errorf("Lookup = age %v ok %v, want age %v ok %v", age, ok, tt.age, tt.ok)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("tools mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestToolCacheTTL(t *testing.T) {
	c := NewToolCache()
	c.Apply(listedEnv("a", 1, t0, "fs", "h", defs("x", 1)))
	if _, age, ok := c.Lookup("fs", "h", t0.Add(DefaultCacheTTL)); !ok || age != DefaultCacheTTL {
		t.Errorf("at exactly the TTL: age %v ok %v, want a hit", age, ok)
	}
	if _, _, ok := c.Lookup("fs", "h", t0.Add(DefaultCacheTTL+time.Second)); ok {
		t.Error("an entry older than 30 days was a hit")
	}
	if _, age, ok := c.Lookup("fs", "h", t0.Add(-time.Hour)); !ok || age != 0 {
		t.Errorf("clock behind the entry: age %v ok %v, want 0 and a hit", age, ok)
	}
	c.TTL = time.Hour
	if _, _, ok := c.Lookup("fs", "h", t0.Add(2*time.Hour)); ok {
		t.Error("TTL field ignored")
	}
	if n := c.Prune(t0.Add(2 * time.Hour)); n != 1 {
		t.Errorf("Prune dropped %d, want 1", n)
	}
}

func TestToolCacheLookupReturnsCopy(t *testing.T) {
	c := NewToolCache()
	c.Apply(listedEnv("a", 1, t0, "fs", "h", defs("x", 2)))
	got, _, _ := c.Lookup("fs", "h", t0)
	got[0].Name = "changed"
	again, _, _ := c.Lookup("fs", "h", t0)
	if again[0].Name != "x_0" {
		t.Error("modifying a Lookup result changed the cache")
	}
}

func TestToolCacheCountsAndLastSeq(t *testing.T) {
	c := NewToolCache()
	r := newRecorder("a", 0)
	c.Apply(r.add(&events.ConnectStarted{Server: "fs"}))
	c.Apply(r.raw(events.TypeToolsListed, 1, `{"server":`))
	c.Apply(r.raw("Mystery", 1, `{}`))
	c.Apply(listedEnv("a", 9, t0, "fs", "h", defs("x", 1)))
	c.Apply(listedEnv("a", 7, t0, "fs", "h", defs("y", 1)))
	want := Counts{Applied: 2, Ignored: 1, Unknown: 1, Undecodable: 1}
	if diff := cmp.Diff(want, c.Counts()); diff != "" {
		t.Errorf("counts mismatch (-want +got):\n%s", diff)
	}
	if c.LastSeq() != 9 {
		t.Errorf("LastSeq = %d, want 9", c.LastSeq())
	}
}

func TestToolCacheSnapshotRoundTrip(t *testing.T) {
	c := NewToolCache()
	c.Apply(listedEnv("a", 1, t0, "fs", "h1", defs("fs", 3)))
	c.Apply(listedEnv("a", 2, t0.Add(time.Second), "git", "h2", defs("git", 2)))
	c.Apply(listedEnv("a", 3, t0, "web", "h3", defs("web", 1)))
	c.Apply(listedEnv("a", 4, t0, "web", "h3", nil)) // tombstone
	if c.Name() != "toolcache/v3" {
		t.Errorf("Name = %q", c.Name())
	}
	data, err := c.MarshalSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.MarshalSnapshot()
	if err != nil || string(again) != string(data) {
		t.Errorf("MarshalSnapshot not deterministic")
	}

	seq, viaSnapshot, err := c.Snapshot()
	if err != nil || seq != 4 || string(viaSnapshot) != string(data) {
		t.Errorf("Snapshot = seq %d, err %v, same bytes %v; want 4, nil, true", seq, err, string(viaSnapshot) == string(data))
	}

	r := NewToolCache()
	if err := r.UnmarshalSnapshot(data); err != nil {
		t.Fatal(err)
	}
	if r.LastSeq() != 4 {
		t.Errorf("restored LastSeq = %d, want 4", r.LastSeq())
	}
	now := t0.Add(time.Hour)
	for _, key := range [][2]string{{"fs", "h1"}, {"git", "h2"}, {"web", "h3"}, {"fs", "nope"}} {
		wantTools, wantAge, wantOK := c.Lookup(key[0], key[1], now)
		gotTools, gotAge, gotOK := r.Lookup(key[0], key[1], now)
		if diff := cmp.Diff(wantTools, gotTools); diff != "" || wantAge != gotAge || wantOK != gotOK {
			t.Errorf("%v after restore: age %v ok %v, want %v %v; tools (-want +got):\n%s", key, gotAge, gotOK, wantAge, wantOK, diff)
		}
	}
	// The restored entries still keep older writes out.
	r.Apply(listedEnv("a", 3, t0, "web", "h3", defs("web", 1)))
	r.Apply(listedEnv("a", 1, t0, "git", "h2", defs("stale", 1)))
	if _, _, ok := r.Lookup("web", "h3", now); ok {
		t.Error("an older write revived a restored tombstone")
	}
	if got, _, _ := r.Lookup("git", "h2", now); len(got) != 2 {
		t.Errorf("an older write replaced a restored entry: %v", names(got))
	}
}

func TestToolCacheUnmarshalSnapshotErrors(t *testing.T) {
	c := NewToolCache()
	c.Apply(listedEnv("a", 1, t0, "fs", "h", defs("x", 1)))
	for _, data := range []string{`{"version":`, `{"version":2,"entries":[]}`, `{"version":4,"entries":[]}`} {
		err := c.UnmarshalSnapshot([]byte(data))
		if err == nil || !strings.Contains(err.Error(), "toolcache/v3") {
			t.Errorf("UnmarshalSnapshot(%s) = %v, want an error naming the snapshot", data, err)
		}
	}
	if _, _, ok := c.Lookup("fs", "h", t0); !ok || c.LastSeq() != 1 {
		t.Error("a failed UnmarshalSnapshot changed the cache")
	}
}

// TestToolCacheConcurrent runs Apply and Lookup together; -race checks it.
func TestToolCacheConcurrent(t *testing.T) {
	c := NewToolCache()
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 500 {
			c.Apply(listedEnv("a", uint64(i+1), t0, "fs", "h", defs("x", 1+i%3)))
		}
	})
	wg.Go(func() {
		for range 500 {
			c.Lookup("fs", "h", t0)
			_, _ = c.MarshalSnapshot()
		}
	})
	wg.Wait()
	if got, _, ok := c.Lookup("fs", "h", t0); !ok || len(got) != 1+499%3 {
		t.Errorf("after concurrent applies: %d tools, ok %v; want the last list", len(got), ok)
	}
}
