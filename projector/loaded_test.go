package projector

import (
	"slices"
	"testing"

	"github.com/mcplife/mcplife/events"
)

func loadedNames(v *ToolView) []string {
	var out []string
	for _, t := range v.LoadedTools() {
		out = append(out, t.Name)
	}
	return out
}

// TestLoadedToolsFold follows one loaded tool through the events that keep
// it loaded (a drop, a reconnect, an unchanged re-list) and the ones that
// unload it (a list without it, a filter that hides it).
func TestLoadedToolsFold(t *testing.T) {
	r := newRecorder("s", 0)
	v := NewToolView("s")
	apply := func(ev events.Event) { v.Apply(r.add(ev)) }
	connect := func(server string, tools []events.ToolDef) {
		apply(&events.ConnectStarted{Server: server, Attempt: 1})
		apply(&events.ServerConnected{Server: server})
		apply(listed(server, tools))
	}
	cfg := events.ServerConfig{Command: "fs"}
	apply(discovered("fs", cfg))
	apply(discovered("git", events.ServerConfig{Command: "git"}))
	connect("fs", defs("fs", 3))
	connect("git", defs("git", 2))
	version := v.Version()

	apply(&events.ToolsActivated{Tools: []string{"mcp_fs_1", "mcp_git_0", "mcp_nope_x"}, By: events.ActivatedBySearch})
	if got, want := loadedNames(v), []string{"mcp_fs_1", "mcp_git_0"}; !slices.Equal(got, want) {
		t.Fatalf("loaded = %v, want %v (an unknown name loads nothing)", got, want)
	}
	if v.Version() != version {
		t.Error("ToolsActivated moved Version: the tool list did not change")
	}
	if !v.IsLoaded("mcp_fs_1") || v.IsLoaded("mcp_fs_0") {
		t.Error("IsLoaded disagrees with LoadedTools")
	}

	// A drop takes the tools out of the view but keeps them loaded: the
	// reconnect's list brings them back loaded.
	apply(&events.Disconnected{Server: "fs", Reason: events.ReasonProcessExited})
	if got := loadedNames(v); !slices.Equal(got, []string{"mcp_git_0"}) {
		t.Fatalf("after the drop loaded = %v", got)
	}
	apply(&events.ConnectStarted{Server: "fs", Attempt: 2})
	apply(&events.CachedToolsServed{Server: "fs", Tools: defs("fs", 3), Count: 3})
	apply(&events.ServerConnected{Server: "fs"})
	apply(listed("fs", defs("fs", 3)))
	if got := loadedNames(v); !slices.Equal(got, []string{"mcp_fs_1", "mcp_git_0"}) {
		t.Fatalf("after the reconnect loaded = %v", got)
	}

	// A re-list without the tool unloads it; listing it again later does
	// not load it again.
	apply(&events.ToolListChanged{Server: "fs"})
	apply(listed("fs", defs("fs", 1)))
	apply(listed("fs", defs("fs", 3)))
	if got := loadedNames(v); !slices.Equal(got, []string{"mcp_git_0"}) {
		t.Fatalf("after a list without it loaded = %v", got)
	}

	// A filter that hides a loaded tool unloads it.
	apply(discovered("git", events.ServerConfig{Command: "git", DisabledTools: []string{"git_0"}}))
	if got := loadedNames(v); len(got) != 0 {
		t.Fatalf("after the filter loaded = %v", got)
	}

	// A clone keeps its own loaded set.
	apply(&events.ToolsActivated{Tools: []string{"mcp_fs_2"}, By: events.ActivatedByHost})
	c := v.Clone()
	apply(listed("fs", defs("fs", 1)))
	if got := loadedNames(c); !slices.Equal(got, []string{"mcp_fs_2"}) {
		t.Errorf("clone loaded = %v", got)
	}
	if got := loadedNames(v); len(got) != 0 {
		t.Errorf("loaded = %v after a list without it", got)
	}
	if c := v.Counts(); c.Unknown != 0 || c.Undecodable != 0 {
		t.Errorf("counts = %+v", c)
	}
}
