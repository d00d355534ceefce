package loader

import (
	"slices"
	"testing"
)

// The native format's "roots" reach the server's config as written
// (relative ones are resolved against the session's directory when the
// server connects); a roots value of the wrong shape or an empty entry
// makes the entry invalid, naming the server and the field. Other formats
// have no per-server roots.
func TestNativeRoots(t *testing.T) {
	w := newWorld(t)
	w.write("~/.config/mcplife/mcp.json", `{"mcpServers": {
  "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"], "roots": ["/srv/notes", "docs"]},
  "plain": {"command": "x"},
  "bad": {"command": "x", "roots": "/srv"},
  "empty": {"command": "x", "roots": [""]}
}}`)
	w.write("./.mcp.json", `{"mcpServers": {"claude": {"command": "y", "roots": ["/ignored"]}}}`)
	d := w.load()
	got := map[string][]string{}
	for _, s := range d.Servers {
		got[s.Config.Name] = s.Config.Roots
	}
	if !slices.Equal(got["fs"], []string{"/srv/notes", "docs"}) || got["plain"] != nil || got["claude"] != nil {
		t.Errorf("roots = %v", got)
	}
	want := map[string]string{
		"bad":   `Server "bad": "roots" must be an array of strings`,
		"empty": `Server "empty": "roots" entry 0 is empty (want a directory)`,
	}
	for _, s := range skips(d) {
		if w, ok := want[s.Name]; ok {
			if s.Reason != "invalid" || s.Detail != w {
				t.Errorf("%s skipped as %+v, want invalid: %s", s.Name, s, w)
			}
			delete(want, s.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("not skipped: %v (skipped %+v)", want, skips(d))
	}
}
