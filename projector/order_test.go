package projector

import (
	"slices"
	"testing"

	"github.com/mcplife/mcplife/events"
)

func toolNames(ts []Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

func def(name string) events.ToolDef { return events.ToolDef{Name: name} }

// Tools keep the order of their first exposure: a late server's tools and
// a re-list's new tool come last, whatever their names; a removed tool or
// server leaves the others in place; a server that comes back, or a tool
// served from the cache and then listed live, keeps its place; a load is
// ranked when it happens. Replaying the events gives the same order and
// ranks, and a clone ranks independently of its original.
func TestToolsInOrder(t *testing.T) {
	r := newRecorder("s", 0)
	v := NewToolView("s")
	apply := func(ev events.Event) { v.Apply(r.add(ev)) }
	connect := func(server string, tools ...events.ToolDef) {
		apply(&events.ConnectStarted{Server: server, Attempt: 1})
		apply(&events.ServerConnected{Server: server})
		apply(listed(server, tools))
	}
	check := func(step string, want ...string) {
		t.Helper()
		if got := toolNames(v.ToolsInOrder()); !slices.Equal(got, want) {
			t.Errorf("%s: order %v, want %v", step, got, want)
		}
	}
	apply(discovered("zeta", events.ServerConfig{Command: "z"}))
	apply(discovered("alpha", events.ServerConfig{Command: "a"}))
	apply(discovered("slow", events.ServerConfig{Command: "s"}))
	// slow is served from the cache while it connects.
	apply(&events.ConnectStarted{Server: "slow", Attempt: 1})
	apply(&events.CachedToolsServed{Server: "slow", Tools: []events.ToolDef{def("wait")}, Count: 1})
	connect("zeta", def("write"), def("read"))
	check("first server", "mcp_slow_wait", "mcp_zeta_write", "mcp_zeta_read")
	connect("alpha", def("go"))
	check("late server", "mcp_slow_wait", "mcp_zeta_write", "mcp_zeta_read", "mcp_alpha_go")
	apply(&events.ServerConnected{Server: "slow"})
	apply(listed("slow", []events.ToolDef{def("wait"), def("again")}))
	check("cached list replaced live", "mcp_slow_wait", "mcp_zeta_write", "mcp_zeta_read", "mcp_alpha_go", "mcp_slow_again")
	apply(&events.ToolsListed{Server: "zeta", Tools: []events.ToolDef{def("read"), def("append")}, Count: 2, Cause: events.CauseListChanged})
	check("re-list drops write, adds append", "mcp_slow_wait", "mcp_zeta_read", "mcp_alpha_go", "mcp_slow_again", "mcp_zeta_append")
	apply(&events.Disconnected{Server: "alpha", Reason: events.ReasonRequested})
	check("server gone", "mcp_slow_wait", "mcp_zeta_read", "mcp_slow_again", "mcp_zeta_append")
	connect("alpha", def("go"), def("stop"))
	check("server back", "mcp_slow_wait", "mcp_zeta_read", "mcp_alpha_go", "mcp_slow_again", "mcp_zeta_append", "mcp_alpha_stop")

	before, _ := v.Rank("mcp_zeta_read")
	c := v.Clone()
	apply(&events.ToolsActivated{Tools: []string{"mcp_zeta_read"}, By: events.ActivatedBySearch})
	after, ok := v.Rank("mcp_zeta_read")
	if !ok || after.Listed != before.Listed || after.Loaded == 0 {
		t.Errorf("rank of a loaded tool = %+v (before %+v), want its listed rank kept and a load rank", after, before)
	}
	if last, _ := v.Rank("mcp_alpha_stop"); after.Loaded <= last.Listed {
		t.Errorf("load rank %d not after the last listed rank %d", after.Loaded, last.Listed)
	}
	if cr, _ := c.Rank("mcp_zeta_read"); cr.Loaded != 0 {
		t.Errorf("the clone took its original's load: %+v", cr)
	}
	if _, ok := v.Rank("mcp_zeta_write"); ok {
		t.Error("a tool no longer exposed has a rank")
	}

	replay := NewToolView("s")
	for _, env := range r.envs {
		replay.Apply(env)
	}
	if got, want := toolNames(replay.ToolsInOrder()), toolNames(v.ToolsInOrder()); !slices.Equal(got, want) {
		t.Errorf("replayed order %v, live %v", got, want)
	}
	for _, tool := range v.Tools() {
		live, _ := v.Rank(tool.Name)
		if got, _ := replay.Rank(tool.Name); got != live {
			t.Errorf("%s: replayed rank %+v, live %+v", tool.Name, got, live)
		}
	}
}
