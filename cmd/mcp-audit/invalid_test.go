package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every error run prints for an invalid entry names the config file (with
// line and column) and the server; a missing working directory and a URL
// without scheme are caught at discovery, before anything is started.
func TestRunNamesTheFileOfInvalidEntries(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	cfg := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(cfg, []byte(`{"mcpServers": {
  "nodir": {"command": "srv", "cwd": "/nonexistent/mcplife-dir"},
  "noscheme": {"url": "example.com/mcp"},
  "nourl": {"type": "sse"}
}}`), 0o600)
	db := filepath.Join(t.TempDir(), "e.db")
	_, out, errOut := runCmd(t, "--db", db, "--json", "run", "--once", "--cwd", t.TempDir(), "--config", cfg)
	var got struct {
		Errors []struct{ Path, Error string } `json:"errors"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errOut)
	}
	want := map[string]string{
		"mcp:nodir":    `Server "nodir": "cwd" "/nonexistent/mcplife-dir" does not exist`,
		"mcp:noscheme": `Server "noscheme": "url" "example.com/mcp" must start with http:// or https://`,
		"mcp:nourl":    `Server "nourl": sse server requires "url" field`,
	}
	if len(got.Errors) != len(want) {
		t.Fatalf("errors = %+v", got.Errors)
	}
	for _, e := range got.Errors {
		if !strings.HasPrefix(e.Error, cfg+":") || !strings.HasSuffix(e.Error, want[e.Path]) {
			t.Errorf("%s: %q does not name %s and say %q", e.Path, e.Error, cfg, want[e.Path])
		}
	}
	_, out, _ = runCmd(t, "--db", db, "run", "--once", "--cwd", t.TempDir(), "--config", cfg)
	for _, w := range want {
		if !strings.Contains(out, cfg+":") || !strings.Contains(out, w) {
			t.Errorf("text output lacks %q or the file:\n%s", w, out)
		}
	}
}
