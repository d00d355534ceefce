package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/internal/peers"
)

// run --once --json with --read and --prompt against server-everything:
// the server entry counts its resources and prompts and names its pid, and
// the read and the prompt come back whole.
func TestRunReadsAResourceAndGetsAPrompt(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	node, script := peers.Everything(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mcp.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": map[string]any{"command": node, "args": []string{script}}}})
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	const uri = "demo://resource/static/document/architecture.md"
	code, out, errOut := runCmd(t, "--db", filepath.Join(dir, "e.db"), "--json", "run", "--once", "--cwd", dir, "--no-project-config", "--config", cfg,
		"--read", "everything:"+uri, "--prompt", "everything/args-prompt", "--prompt-args", `{"city":"Paris"}`)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var got struct {
		Servers []struct {
			Name               string
			Resources, Prompts int
			Pid                int
		}
		Read struct {
			Server, URI string
			Contents    []struct{ URI, Text string }
		}
		Prompt struct {
			Server, Name string
			Messages     []struct {
				Role    string
				Content struct{ Type, Text string }
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got.Servers) != 1 || got.Servers[0].Resources == 0 || got.Servers[0].Prompts == 0 || got.Servers[0].Pid == 0 {
		t.Errorf("servers %+v: want resources, prompts and a pid counted", got.Servers)
	}
	if got.Read.Server != "everything" || got.Read.URI != uri || len(got.Read.Contents) != 1 || !strings.Contains(got.Read.Contents[0].Text, "Architecture") {
		t.Errorf("read %+v", got.Read)
	}
	if got.Prompt.Name != "args-prompt" || len(got.Prompt.Messages) == 0 || !strings.Contains(got.Prompt.Messages[0].Content.Text, "Paris") {
		t.Errorf("prompt %+v", got.Prompt)
	}

	// inspect replays the same counts just before the teardown.
	code, out, errOut = runCmd(t, "--db", filepath.Join(dir, "e.db"), "--json", "replay", "last")
	before := uint64(0)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct {
			Seq  uint64
			Type string
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "Disconnected" && before == 0 {
			before = ev.Seq - 1
		}
	}
	if code != 0 || before == 0 {
		t.Fatalf("replay: exit %d, no Disconnected in\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCmd(t, "--db", filepath.Join(dir, "e.db"), "--json", "inspect", "last", "--seq", strconv.FormatUint(before, 10))
	var seen struct {
		Servers []struct{ Resources, Prompts int }
	}
	if code != 0 || json.Unmarshal([]byte(out), &seen) != nil || len(seen.Servers) != 1 ||
		seen.Servers[0].Resources != got.Servers[0].Resources || seen.Servers[0].Prompts != got.Servers[0].Prompts {
		t.Errorf("inspect: exit %d %s %s", code, out, errOut)
	}

	code, _, errOut = runCmd(t, "--db", filepath.Join(dir, "e.db"), "run", "--once", "--cwd", dir, "--config", cfg, "--read", "no-colon")
	if code != 2 || !strings.Contains(errOut, "want SERVER:URI") {
		t.Errorf("--read without a colon: exit %d, %s", code, errOut)
	}
}
