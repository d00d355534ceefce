package manager

import (
	"context"
	"slices"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
)

// seedSurface records resources and prompts for server under cfg's hash in
// another session, as an earlier run (or another host) would have.
func seedSurface(t *testing.T, e *env, cfg events.ServerConfig) {
	t.Helper()
	res := []events.ResourceDef{{URI: "file:///notes.md", Name: "notes"}}
	prompts := []events.PromptDef{{Name: "review", Arguments: []events.PromptArgument{{Name: "pr", Required: true}}}}
	_, err := e.j.Append(context.Background(), "earlier",
		&events.ResourcesListed{Server: cfg.Name, ConfigHash: cfg.Hash(), Resources: res, Count: 1, Cause: events.CauseInitial},
		&events.PromptsListed{Server: cfg.Name, ConfigHash: cfg.Hash(), Prompts: prompts, Count: 1, Cause: events.CauseInitial})
	if err != nil {
		t.Fatal(err)
	}
}

// A deferred server's cached resources and prompts are in the session's
// view at the gate, recorded with cause cache; when the server connects
// without them, empty lists replace them.
func TestGateServesCachedResourcesAndPrompts(t *testing.T) {
	e := newEnv(t, &Options{Gate: 1})
	ctx := testCtx(t)
	g := fixturetest.NewGate(t)
	slow := stdio(t, "slow", "only=echo", g.Arg("block-list-until"))
	seedCache(t, e, slow, "echo")
	seedSurface(t, e, slow)
	updates, err := e.m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{slow}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Gate.Outcomes["slow"] != events.OutcomeDeferred {
		t.Fatalf("outcomes %v", res.Gate.Outcomes)
	}
	st, _ := e.m.View().Server("slow")
	if len(st.Resources) != 1 || st.Resources[0].URI != "file:///notes.md" || len(st.Prompts) != 1 || st.Prompts[0].Name != "review" {
		t.Fatalf("view at the gate: resources %+v prompts %+v; want the cached ones", st.Resources, st.Prompts)
	}
	served := ofType[*events.PromptsListed](e, "s1")
	if len(served) != 1 || served[0].Cause != events.CauseCache || served[0].Count != 1 {
		t.Fatalf("PromptsListed at the gate %+v", served)
	}
	types := e.serverTypes("s1", "slow")
	if i := slices.Index(types, "PromptsListed"); i < 0 || types[i-2] != "CachedToolsServed" {
		t.Fatalf("the cached lists do not follow the cached tools: %v", types)
	}

	g.Release()
	waitFor(t, ctx, updates, func() bool {
		st, _ := e.m.View().Server("slow")
		return len(st.Resources) == 0 && len(st.Prompts) == 0 && !slices.ContainsFunc(e.m.Tools(), func(t *Tool) bool { return t.Deferred })
	})
	listed := ofType[*events.ResourcesListed](e, "s1")
	if len(listed) != 2 || listed[1].Cause != events.CauseInitial || listed[1].Count != 0 {
		t.Fatalf("ResourcesListed %+v; want the cached list, then the server's empty one", listed)
	}
	// The cache now holds the server's own (empty) lists: nothing is
	// served next time.
	if _, _, _, ok := e.m.cache.LookupResources("slow", slow.Hash(), e.m.now()); ok {
		t.Error("the cache still serves resources the server no longer has")
	}
}
