package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunCallOverTheOutputBudget: `run --once --call --json` of a result
// over the output budget shows "truncated" and "fullOutput", a file under
// $XDG_STATE_HOME/mcplife/outputs/ holding the whole text; the text output
// prints the marker; replay shows the recorded size.
func TestRunCallOverTheOutputBudget(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	cfg := writeConfig(t, map[string][]string{"big": {"only=big_result,media"}})
	db := filepath.Join(t.TempDir(), "e.db")
	run := func(args ...string) string {
		t.Helper()
		code, out, errOut := runCmd(t, append([]string{"--db", db}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s %s", args, code, out, errOut)
		}
		return out
	}
	out := run("--json", "run", "--once", "--cwd", t.TempDir(), "--config", cfg, "--call", "big/big_result", "--args", `{"bytes":300000}`)
	var got struct {
		Call struct {
			Truncated  bool             `json:"truncated"`
			FullOutput string           `json:"fullOutput"`
			Content    []map[string]any `json:"content"`
		} `json:"call"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%.500s", err, out)
	}
	c := got.Call
	if !c.Truncated || filepath.Dir(c.FullOutput) != filepath.Join(state, "mcplife", "outputs") {
		t.Fatalf("call truncated %t fullOutput %q, want a file under %s", c.Truncated, c.FullOutput, state)
	}
	if len(c.Content) != 2 || !strings.Contains(c.Content[1]["text"].(string), c.FullOutput) {
		t.Fatalf("content %d items, marker %v", len(c.Content), c.Content[len(c.Content)-1]["text"])
	}
	if b, err := os.ReadFile(c.FullOutput); err != nil || len(b) != 300000 {
		t.Fatalf("full output %d bytes, %v", len(b), err)
	}

	out = run("run", "--once", "--cwd", t.TempDir(), "--config", cfg, "--call", "big/big_result", "--args", `{"bytes":300000}`)
	if !strings.Contains(out, "[mcplife: output cut to 262144 of 300000 bytes of text") {
		t.Errorf("text output has no marker:\n%.3000s", out)
	}
	if out := run("replay", "last"); !strings.Contains(out, "truncated=true outputBytes=300000") {
		t.Errorf("replay does not show the cut:\n%s", out)
	}

	// Under the budget: neither field, and every content kind kept.
	out = run("--json", "run", "--once", "--cwd", t.TempDir(), "--config", cfg, "--call", "big/media")
	if strings.Contains(out, `"truncated"`) || strings.Contains(out, `"fullOutput"`) {
		t.Errorf("a small result shows the cut fields:\n%s", out)
	}
	for _, kind := range []string{`"type":"image"`, `"type":"audio"`, `"type":"resource_link"`, `"type":"resource"`, `"icons"`, `"_meta"`, `"annotations"`, `"structuredContent"`} {
		if !strings.Contains(strings.ReplaceAll(out, `": `, `":`), kind) {
			t.Errorf("media call output lacks %s", kind)
		}
	}
}
