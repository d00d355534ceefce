package loader

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestToolTimeoutMapping checks the per-server tool-call timeout of every
// format that defines one, and that the formats whose "timeout" bounds
// only the connect (or the tool listing) leave it unset.
func TestToolTimeoutMapping(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		content string
		// want maps server name to ToolTimeoutMs; -1 stands for nil.
		want map[string]int64
		// connect maps server name to TimeoutMs; -1 stands for nil.
		connect map[string]int64
	}{
		{
			name: "native toolTimeoutMs",
			path: "~/.config/mcplife/mcp.json",
			content: `{"mcpServers": {
  "slow": {"command": "x", "toolTimeoutMs": 300000},
  "text": {"command": "x", "toolTimeoutMs": "1500"},
  "none": {"command": "x", "toolTimeoutMs": 0, "timeout": 2000},
  "unset": {"command": "x", "timeout": 2000}
}}`,
			want:    map[string]int64{"slow": 300000, "text": 1500, "none": 0, "unset": -1},
			connect: map[string]int64{"slow": -1, "text": -1, "none": 2000, "unset": 2000},
		},
		{
			name:    "plain mcp.json reads the native fields",
			path:    "./mcp.json",
			content: `{"mcpServers": {"p": {"command": "x", "toolTimeoutMs": 45000}}}`,
			want:    map[string]int64{"p": 45000},
			connect: map[string]int64{"p": -1},
		},
		{
			name: "codex tool_timeout_sec in seconds",
			path: "~/.codex/config.toml",
			content: `[mcp_servers.whole]
command = "x"
tool_timeout_sec = 120
startup_timeout_sec = 20

[mcp_servers.fraction]
command = "x"
tool_timeout_sec = 2.5

[mcp_servers.unset]
command = "x"
startup_timeout_ms = 1500
`,
			want:    map[string]int64{"whole": 120000, "fraction": 2500, "unset": -1},
			connect: map[string]int64{"whole": 20000, "fraction": -1, "unset": 1500},
		},
		{
			name: "gemini timeout bounds the connect and every call",
			path: "~/.gemini/settings.json",
			content: `{"mcpServers": {
  "g": {"command": "x", "timeout": 600000},
  "unset": {"command": "x"}
}}`,
			want:    map[string]int64{"g": 600000, "unset": -1},
			connect: map[string]int64{"g": 600000, "unset": -1},
		},
		{
			name:    "claude code timeout is the connect timeout only",
			path:    "~/.claude.json",
			content: `{"mcpServers": {"c": {"command": "x", "timeout": 7000, "toolTimeoutMs": 9000}}}`,
			want:    map[string]int64{"c": -1},
			connect: map[string]int64{"c": 7000},
		},
		{
			name:    "opencode timeout bounds listing tools, not calls",
			path:    "~/.config/opencode/opencode.json",
			content: `{"mcp": {"o": {"type": "local", "command": ["x"], "timeout": 5000}}}`,
			want:    map[string]int64{"o": -1},
			connect: map[string]int64{"o": 5000},
		},
		{
			name:    "crush timeout bounds the connect only",
			path:    "~/.config/crush/crush.json",
			content: `{"mcp": {"k": {"type": "stdio", "command": "x", "timeout": 30}}}`,
			want:    map[string]int64{"k": -1},
			connect: map[string]int64{"k": 30000},
		},
	}
	ptr := func(p *int64) int64 {
		if p == nil {
			return -1
		}
		return *p
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.write(tt.path, tt.content)
			d := w.load()
			if len(d.Errors) > 0 || len(d.Skipped) > 0 {
				t.Fatalf("errors %v, skipped %v", d.Errors, skips(d))
			}
			got, connect := map[string]int64{}, map[string]int64{}
			for _, s := range d.Servers {
				got[s.Config.Name] = ptr(s.Config.ToolTimeoutMs)
				connect[s.Config.Name] = ptr(s.Config.TimeoutMs)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ToolTimeoutMs mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.connect, connect); diff != "" {
				t.Errorf("TimeoutMs mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestToolTimeoutInvalid checks that a negative or non-numeric tool
// timeout makes its entry invalid with a message naming the server and the
// field as the file spells it, the entry's source naming the file; the
// file's other entries still load.
func TestToolTimeoutInvalid(t *testing.T) {
	w := newWorld(t)
	native := w.write("~/.config/mcplife/mcp.json", `{"mcpServers": {
  "neg": {"command": "x", "toolTimeoutMs": -1},
  "word": {"command": "x", "toolTimeoutMs": "soon"},
  "ok": {"command": "x", "toolTimeoutMs": 10}
}}`)
	codex := w.write("~/.codex/config.toml", "[mcp_servers.cneg]\ncommand = \"x\"\ntool_timeout_sec = -5\n")
	gemini := w.write("~/.gemini/settings.json", `{"mcpServers": {"gneg": {"command": "x", "timeout": -3}}}`)
	d := w.load()
	if diff := cmp.Diff([]string{"ok"}, names(d)); diff != "" {
		t.Errorf("servers mismatch (-want +got):\n%s", diff)
	}
	want := []skipView{
		{"neg", "invalid", `Server "neg": "toolTimeoutMs" must be a non-negative number`},
		{"word", "invalid", `Server "word": "toolTimeoutMs" must be a number`},
		{"cneg", "invalid", `Server "cneg": "tool_timeout_sec" must be a non-negative number`},
		// One field in the file, one message, though it sets two timeouts.
		{"gneg", "invalid", `Server "gneg": "timeout" must be a non-negative number`},
	}
	if diff := cmp.Diff(want, skips(d)); diff != "" {
		t.Fatalf("skipped mismatch (-want +got):\n%s", diff)
	}
	files := []string{native, native, codex, gemini}
	for i, s := range d.Skipped {
		if s.Source.Path != files[i] || !strings.HasPrefix(s.Position, files[i]) {
			t.Errorf("%s: source %s at %s, want %s", s.Name, s.Source.Path, s.Position, files[i])
		}
	}
	if got := d.Skipped[0].Position; got != native+":2:10" {
		t.Errorf("position of neg = %q, want line and column", got)
	}
}
