package projector

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcplife/mcplife/events"
)

func resourcesEnv(seq uint64, t time.Time, server, hash string, cause events.ListCause, n int) events.Envelope {
	ev := &events.ResourcesListed{Server: server, ConfigHash: hash, Resources: []events.ResourceDef{}, Cause: cause}
	for i := range n {
		ev.Resources = append(ev.Resources, events.ResourceDef{URI: fmt.Sprintf("file:///%s/%d", server, i), Name: fmt.Sprint(i)})
	}
	if n > 0 {
		ev.Templates = []events.ResourceTemplateDef{{URITemplate: "file:///{path}", Name: "file"}}
	}
	env := events.MustNew("s", ev, t)
	env.Seq = seq
	return env
}

func promptsEnv(seq uint64, t time.Time, server, hash string, cause events.ListCause, names ...string) events.Envelope {
	ev := &events.PromptsListed{Server: server, ConfigHash: hash, Prompts: []events.PromptDef{}, Cause: cause}
	for _, n := range names {
		ev.Prompts = append(ev.Prompts, events.PromptDef{Name: n, Arguments: []events.PromptArgument{{Name: "x", Required: true}}})
	}
	env := events.MustNew("s", ev, t)
	env.Seq = seq
	return env
}

// The cache keeps the newest resource and prompt lists per server and
// config, like tools: by seq, an empty list a tombstone, lists served from
// a cache ignored, and all of it through a checkpoint.
func TestToolCacheResourcesAndPrompts(t *testing.T) {
	c := NewToolCache()
	c.Apply(resourcesEnv(2, t0, "fs", "h1", events.CauseInitial, 3))
	c.Apply(resourcesEnv(1, t0, "fs", "h1", events.CauseInitial, 1)) // older, late
	c.Apply(resourcesEnv(3, t0, "fs", "h1", events.CauseCache, 7))   // served, not listed
	c.Apply(promptsEnv(4, t0, "fs", "h1", events.CauseListChanged, "review", "explain"))
	c.Apply(promptsEnv(5, t0, "git", "h2", events.CauseInitial, "commit"))
	c.Apply(promptsEnv(6, t0, "git", "h2", events.CauseListChanged)) // tombstone
	c.Apply(listedEnv("s", 7, t0, "fs", "h1", defs("fs", 2)))

	now := t0.Add(time.Minute)
	check := func(t *testing.T, c *ToolCache) {
		t.Helper()
		res, tpl, age, ok := c.LookupResources("fs", "h1", now)
		if !ok || len(res) != 3 || len(tpl) != 1 || age != time.Minute {
			t.Errorf("LookupResources(fs) = %d resources, %d templates, age %v, %v; want 3, 1, 1m, true", len(res), len(tpl), age, ok)
		}
		prompts, _, ok := c.LookupPrompts("fs", "h1", now)
		if got := promptNames(prompts); !ok || !cmp.Equal(got, []string{"review", "explain"}) {
			t.Errorf("LookupPrompts(fs) = %v, %v", got, ok)
		}
		if p, _, ok := c.LookupPrompts("git", "h2", now); ok {
			t.Errorf("an empty prompt list did not replace the older one: %v", promptNames(p))
		}
		if _, _, _, ok := c.LookupResources("fs", "other", now); ok {
			t.Error("another config hash hit")
		}
		if _, _, ok := c.Lookup("fs", "h1", now); !ok {
			t.Error("tools missing")
		}
		if _, _, _, ok := c.LookupResources("fs", "h1", t0.Add(DefaultCacheTTL+time.Hour)); ok {
			t.Error("resources older than the TTL hit")
		}
	}
	check(t, c)
	if got := c.Counts(); got.Applied != 6 || got.Ignored != 1 {
		t.Errorf("counts %+v, want 6 applied, 1 ignored (the served list)", got)
	}
	data, err := c.MarshalSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	r := NewToolCache()
	if err := r.UnmarshalSnapshot(data); err != nil {
		t.Fatal(err)
	}
	check(t, r)
	r.Apply(promptsEnv(5, t0, "git", "h2", events.CauseInitial, "commit"))
	if _, _, ok := r.LookupPrompts("git", "h2", now); ok {
		t.Error("an older write revived a restored prompt tombstone")
	}
	if n := r.Prune(now); n != 1 {
		t.Errorf("Prune dropped %d entries, want the one tombstone", n)
	}
}

func promptNames(ps []events.PromptDef) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}
