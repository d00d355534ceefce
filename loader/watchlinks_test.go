package loader

import (
	"os"
	"path/filepath"
	"testing"
)

// retarget points the symbolic link at link to target the way `ln -sfn`
// with a rename does (GNU stow, home-manager, a "current" release link):
// a new link renamed over the old one.
func retarget(t *testing.T, link, target string) {
	t.Helper()
	tmp := link + ".new"
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
}

// A config reached through a directory symlink reports the link's
// retargeting, and afterwards follows the file the link now leads to:
// <cwd>/.mcp.json -> current/mcp.json with current -> gen1, then
// current -> gen2.
func TestWatcherDirectorySymlinkRetargeted(t *testing.T) {
	forEachWatcherBackend(t, func(t *testing.T, opts WatcherOptions) {
		root := t.TempDir()
		for _, g := range []string{"gen1", "gen2"} {
			mkdirAll(t, filepath.Join(root, g))
			writeFile(t, filepath.Join(root, g, "mcp.json"), `{"mcpServers": {"`+g+`": {"command": "x"}}}`)
		}
		current := filepath.Join(root, "current")
		if err := os.Symlink(filepath.Join(root, "gen1"), current); err != nil {
			t.Skipf("symlink: %v", err)
		}
		link := filepath.Join(root, "proj", ".mcp.json")
		mkdirAll(t, filepath.Dir(link))
		if err := os.Symlink(filepath.Join(current, "mcp.json"), link); err != nil {
			t.Fatal(err)
		}
		wt := startWatcher(t, []string{link}, opts)

		retarget(t, current, filepath.Join(root, "gen2"))
		wt.expect(link)
		// The file the link leads to now is watched.
		writeFile(t, filepath.Join(root, "gen2", "mcp.json"), `{"mcpServers": {}}`)
		wt.expect(link)
	})
}

// A symbolic link two levels above a watched config (~/.config pointing
// into a dotfiles generation) reports its retargeting too.
func TestWatcherAncestorSymlinkRetargeted(t *testing.T) {
	forEachWatcherBackend(t, func(t *testing.T, opts WatcherOptions) {
		root := t.TempDir()
		for _, g := range []string{"gen1", "gen2"} {
			mkdirAll(t, filepath.Join(root, "dotfiles", g, "mcplife"))
			writeFile(t, filepath.Join(root, "dotfiles", g, "mcplife", "mcp.json"), `{"mcpServers": {"`+g+`": {"command": "x"}}}`)
		}
		mkdirAll(t, filepath.Join(root, "home"))
		configDir := filepath.Join(root, "home", ".config")
		if err := os.Symlink(filepath.Join(root, "dotfiles", "gen1"), configDir); err != nil {
			t.Skipf("symlink: %v", err)
		}
		path := filepath.Join(configDir, "mcplife", "mcp.json")
		wt := startWatcher(t, []string{path}, opts)

		retarget(t, configDir, filepath.Join(root, "dotfiles", "gen2"))
		wt.expect(path)
		writeFile(t, filepath.Join(root, "dotfiles", "gen2", "mcplife", "mcp.json"), `{"mcpServers": {}}`)
		wt.expect(path)
	})
}

// Paths that reach one directory by different names (current/ and the
// generation it points to) share one watch; once the link is retargeted,
// the directory left behind is still watched for the path that names it
// directly, and the new one for the path through the link.
func TestWatcherSharedDirectoryRetargeted(t *testing.T) {
	forEachWatcherBackend(t, func(t *testing.T, opts WatcherOptions) {
		root := t.TempDir()
		for _, g := range []string{"gen1", "gen2"} {
			mkdirAll(t, filepath.Join(root, g))
			writeFile(t, filepath.Join(root, g, "mcp.json"), `{}`)
		}
		current := filepath.Join(root, "current")
		if err := os.Symlink(filepath.Join(root, "gen1"), current); err != nil {
			t.Skipf("symlink: %v", err)
		}
		viaLink := filepath.Join(current, "mcp.json")
		direct := filepath.Join(root, "gen1", "other.json")
		wt := startWatcher(t, []string{viaLink, direct}, opts)

		writeFile(t, direct, `{}`)
		wt.expect(direct)
		writeFile(t, filepath.Join(root, "gen1", "mcp.json"), `{"mcpServers": {}}`)
		wt.expect(viaLink)

		retarget(t, current, filepath.Join(root, "gen2"))
		wt.expect(viaLink)
		writeFile(t, direct, `{"mcpServers": {}}`)
		wt.expect(direct)
		writeFile(t, filepath.Join(root, "gen2", "mcp.json"), `{"mcpServers": {}}`)
		wt.expect(viaLink)
		// gen1's mcp.json is no longer what the link leads to.
		writeFile(t, filepath.Join(root, "gen1", "mcp.json"), `{}`)
		writeFile(t, direct, `{}`)
		wt.expect(direct)
	})
}
