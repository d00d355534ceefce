package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
)

// rewriteConfig replaces the config file at path with raw, as an editor
// saves: a new file renamed over the old one.
func rewriteConfig(t *testing.T, path, raw string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// run without --once applies edits of the config files while it runs: an
// added server connects, a broken edit is reported and changes nothing,
// and each change is a line of the output.
func TestRunWatchesConfig(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	cfg := writeConfig(t, map[string][]string{"steady": {"only=echo"}})
	db := filepath.Join(t.TempDir(), "e.db")
	r := startRun(t, db, cfg)
	r.waitLine("watching for changes and config edits")

	old, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		MCPServers map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(old, &doc); err != nil {
		t.Fatal(err)
	}
	cmd, args := fixturetest.Command(t, "only=add")
	doc.MCPServers["extra"] = map[string]any{"command": cmd, "args": args}
	b, _ := json.Marshal(doc)
	rewriteConfig(t, cfg, string(b))
	r.waitLine("config changed (" + cfg + "): added extra")
	r.waitLine("extra", "connected", "1 tools")

	rewriteConfig(t, cfg, "{")
	r.waitLine("config change not applied", cfg, "servers keep running")

	r.interrupt()
	code, out, _ := runCmd(t, "--db", db, "replay", "last")
	if code != 0 || !strings.Contains(out, "ConfigChanged") || !strings.Contains(out, "added=[extra]") || !strings.Contains(out, "extra reason=requested") {
		t.Fatalf("replay: %d\n%s", code, out)
	}
	if strings.Contains(out, "steady reason=config changed") {
		t.Errorf("steady was disconnected by an edit that left it alone:\n%s", out)
	}
}
