package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// With --eager-cache, a second run serves a slow server's cached tools at
// once, even under a long gate that would otherwise wait for its list.
func TestRunEagerCache(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	cfg := writeConfig(t, map[string][]string{"slow": {"only=echo", "slow-list=1s"}})
	db := filepath.Join(t.TempDir(), "e.db")
	cwd := t.TempDir()
	// The first run lists the server, which fills the tool cache.
	if code, out, _ := runCmd(t, "--db", db, "run", "--once", "--gate", "1m", "--cwd", cwd, "--config", cfg); code != 0 || !strings.Contains(out, "slow=ready") {
		t.Fatalf("first run: exit %d\n%s", code, out)
	}
	code, out, _ := runCmd(t, "--db", db, "run", "--once", "--gate", "1m", "--eager-cache", "--cwd", cwd, "--config", cfg)
	if code != 0 || !strings.Contains(out, "slow=deferred") {
		t.Fatalf("run --eager-cache: exit %d, want the cached tools deferred at the gate\n%s", code, out)
	}
}
