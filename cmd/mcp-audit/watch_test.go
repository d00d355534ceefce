package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
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
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int)
	go func() {
		var errb strings.Builder
		done <- Run(ctx, []string{"--db", db, "run", "--cwd", t.TempDir(), "--config", cfg}, pw, &errb)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	waitLine := func(want ...string) string {
		t.Helper()
		for lines.Scan() {
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(lines.Text(), w)
			}
			if ok {
				return lines.Text()
			}
		}
		t.Fatalf("output ended before a line with %q", want)
		return ""
	}
	waitLine("watching for changes and config edits")

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
	waitLine("config changed (" + cfg + "): added extra")
	waitLine("extra", "connected", "1 tools")

	rewriteConfig(t, cfg, "{")
	waitLine("config change not applied", cfg, "servers keep running")

	cancel()
	waitLine("disconnecting all servers")
	go io.Copy(io.Discard, pr)
	if code := <-done; code != 0 {
		t.Fatalf("exit %d", code)
	}
	code, out, _ := runCmd(t, "--db", db, "replay", "last")
	if code != 0 || !strings.Contains(out, "ConfigChanged") || !strings.Contains(out, "added=[extra]") || !strings.Contains(out, "extra reason=requested") {
		t.Fatalf("replay: %d\n%s", code, out)
	}
	if strings.Contains(out, "steady reason=config changed") {
		t.Errorf("steady was disconnected by an edit that left it alone:\n%s", out)
	}
}
