package events

import "testing"

// Roots are part of a server's config: setting or changing them changes
// the hash (so a live config change reconnects the server), leaving them
// unset hashes as before, and Clone copies them.
func TestRootsInConfigHash(t *testing.T) {
	base := ServerConfig{Name: "fs", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem"}}
	if got := (ServerConfig{Name: "fs", Command: "npx", Args: base.Args, Roots: []string{}}).Hash(); got != base.Hash() {
		t.Errorf("empty roots hash %s, want the unset hash %s", got, base.Hash())
	}
	a, b := base.Clone(), base.Clone()
	a.Roots, b.Roots = []string{"/srv/a"}, []string{"/srv/b"}
	if a.Hash() == base.Hash() || a.Hash() == b.Hash() {
		t.Errorf("roots do not change the hash: %s %s %s", base.Hash(), a.Hash(), b.Hash())
	}
	c := a.Clone()
	c.Roots[0] = "/elsewhere"
	if a.Roots[0] != "/srv/a" {
		t.Error("Clone shares the roots")
	}
}
