package main

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// run --root gives the servers that directory as their root instead of
// the session's cwd; a relative one is taken from the directory mcp-audit
// runs in, and one that is not a directory is a usage error naming it.
func TestRunRoot(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	cfg := writeConfig(t, map[string][]string{"fx": {"only=roots", "roots-on-init"}})
	db := filepath.Join(t.TempDir(), "e.db")
	root, cwd := t.TempDir(), t.TempDir()
	code, out, errOut := runCmd(t, "--db", db, "--json", "run", "--once", "--gate", "1m", "--cwd", cwd, "--config", cfg,
		"--root", root, "--call", "fx/roots")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	want := (&url.URL{Scheme: "file", Path: root}).String()
	if !strings.Contains(out, want) || strings.Contains(out, (&url.URL{Scheme: "file", Path: cwd}).String()) {
		t.Errorf("roots answered: %s, want %s alone", out, want)
	}

	// Relative: from the directory mcp-audit runs in, not from --cwd.
	t.Chdir(filepath.Dir(root))
	if code, out, errOut = runCmd(t, "--db", db, "--json", "run", "--once", "--gate", "1m", "--cwd", cwd, "--config", cfg,
		"--root", filepath.Base(root), "--call", "fx/roots"); code != 0 || !strings.Contains(out, want) {
		t.Errorf("relative --root: exit %d, %s %s", code, out, errOut)
	}

	missing := filepath.Join(t.TempDir(), "nope")
	code, _, errOut = runCmd(t, "--db", db, "run", "--once", "--cwd", cwd, "--config", cfg, "--root", missing)
	if code != 2 || !strings.Contains(errOut, "--root "+missing+": no such directory") {
		t.Errorf("missing --root: exit %d, %q", code, errOut)
	}
	file := filepath.Join(root, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut = runCmd(t, "--db", db, "run", "--once", "--cwd", cwd, "--config", cfg, "--root", file); code != 2 || !strings.Contains(errOut, "not a directory") {
		t.Errorf("file as --root: exit %d, %q", code, errOut)
	}
}
