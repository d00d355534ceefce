package loader

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWatchPaths(t *testing.T) {
	w := newWorld(t)
	claude := w.write("~/.claude.json", `{"mcpServers": {"a": {"command": "a"}}}`)
	broken := w.write("~/.cursor/mcp.json", `{`)
	vscode := w.write("./.vscode/mcp.json", `{"servers": {}}`)
	d := w.load()
	for _, p := range []string{claude, broken, vscode} {
		if !slices.Contains(d.FoundFiles, p) {
			t.Errorf("FoundFiles %q lacks %s", d.FoundFiles, p)
		}
	}
	for _, p := range []string{w.path("./.mcp.json"), w.path("~/.codex/config.toml"), w.path("./.mcplife/mcp.json"), w.path("~/.config/mcplife/mcp.json"), w.path("./mcp.json")} {
		if !slices.Contains(d.MissingFiles, p) {
			t.Errorf("MissingFiles %q lacks %s", d.MissingFiles, p)
		}
	}
	if !slices.IsSorted(d.FoundFiles) || !slices.IsSorted(d.MissingFiles) {
		t.Error("FoundFiles or MissingFiles not sorted")
	}
	all := d.WatchPaths()
	if len(all) != len(d.FoundFiles)+len(d.MissingFiles) || !slices.IsSorted(all) {
		t.Errorf("WatchPaths = %q, want FoundFiles and MissingFiles sorted", all)
	}
	for _, p := range all {
		if slices.Contains(d.FoundFiles, p) && slices.Contains(d.MissingFiles, p) {
			t.Errorf("%s is both found and missing", p)
		}
	}

	// With project configs disabled, project files are not looked at.
	d = w.load(noProject)
	for _, p := range d.WatchPaths() {
		if strings.HasPrefix(p, w.proj+string(filepath.Separator)) {
			t.Errorf("project path %s watched with project configs disabled", p)
		}
	}
	if !slices.Contains(d.FoundFiles, claude) {
		t.Errorf("FoundFiles %q lacks %s", d.FoundFiles, claude)
	}

	// An extra config that does not exist is an error, and watched for.
	extra := filepath.Join(w.home, "extra.json")
	d = w.load(func(o *Options) { o.ExtraConfigs = []string{extra} })
	if !slices.Contains(d.MissingFiles, extra) {
		t.Errorf("MissingFiles %q lacks the missing extra config %s", d.MissingFiles, extra)
	}
}

// A file created at a path discovery looked for is reported, and the next
// discovery finds its server.
func TestWatcherOnDiscoveryPaths(t *testing.T) {
	forEachWatcherBackend(t, func(t *testing.T, opts WatcherOptions) {
		w := newWorld(t)
		w.write("~/.claude.json", `{"mcpServers": {"a": {"command": "a"}}}`)
		d := w.load()
		wt := startWatcher(t, d.WatchPaths(), opts)

		created := w.write("./.mcp.json", `{"mcpServers": {"b": {"command": "b"}}}`)
		wt.expect(created)
		if diff := cmp.Diff([]string{"b", "a"}, names(w.load())); diff != "" {
			t.Errorf("servers after the change mismatch (-want +got):\n%s", diff)
		}
	})
}
