package loader

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// benchWorld writes one realistic file for every provider (three servers
// each) and returns the world and the list of files.
func benchWorld(b *testing.B) (*world, []string) {
	t := &testing.T{}
	w := newWorld(t)
	w.t = t
	root := b.TempDir()
	w.home, w.proj = root+"/home", root+"/proj"
	servers := func(prefix string) string {
		var parts []string
		for i := range 3 {
			parts = append(parts, fmt.Sprintf(`"%s-%d": {"command": "npx", "args": ["-y", "@scope/server-%d", "${HOME}"], "env": {"TOKEN": "${TOKEN}"}}`, prefix, i, i))
		}
		return strings.Join(parts, ",\n")
	}
	files := map[string]string{
		"~/.config/mcplife/mcp.json":                  `{"mcpServers": {` + servers("native") + `}}`,
		"./.mcplife/mcp.json":                         `{"mcpServers": {` + servers("native-p") + `}}`,
		"~/.claude.json":                              `{"mcpServers": {` + servers("claude") + `}, "projects": {"{{PROJ}}": {"mcpServers": {` + servers("local") + `}}}}`,
		"./.mcp.json":                                 `{"mcpServers": {` + servers("claude-p") + `}}`,
		"~/.gemini/settings.json":                     `{"mcpServers": {` + servers("gemini") + `}}`,
		"~/.config/opencode/opencode.json":            `{"mcp": {` + strings.ReplaceAll(servers("oc"), `"command": "npx", "args": [`, `"type": "local", "command": ["npx", `) + `}}`,
		"~/.cursor/mcp.json":                          `{"mcpServers": {` + servers("cursor") + `}}`,
		"~/.codeium/windsurf/mcp_config.json":         `{"mcpServers": {` + servers("windsurf") + `}}`,
		"~/.config/crush/crush.json":                  `{"mcp": {` + servers("crush") + `}}`,
		"~/.config/Claude/claude_desktop_config.json": `{"mcpServers": {` + servers("desktop") + `}}`,
		"./.vscode/mcp.json":                          `{"servers": {` + servers("vscode") + `}}`,
		"./mcp.json":                                  `{"mcpServers": {` + servers("plain") + `}}`,
		"~/.codex/config.toml":                        "[mcp_servers.codex-0]\ncommand = \"npx\"\nargs = [\"-y\", \"x\"]\n[mcp_servers.codex-1]\nurl = \"https://x/mcp\"\nbearer_token_env_var = \"T\"\n",
	}
	var paths []string
	for p, c := range files {
		paths = append(paths, w.write(p, c))
	}
	if t.Failed() {
		b.Fatal("setup failed")
	}
	w.env["TOKEN"] = "t"
	w.env["HOME"] = w.home
	return w, paths
}

// BenchmarkLoadConfigs measures a full discovery over every provider.
// Baseline: BenchmarkReadAndDecodeBaseline, which only reads the same files
// and decodes them with encoding/json and go-toml.
func BenchmarkLoadConfigs(b *testing.B) {
	w, _ := benchWorld(b)
	opts := w.opts()
	b.ReportAllocs()
	for b.Loop() {
		d, err := LoadConfigs(context.Background(), opts)
		if err != nil || len(d.Servers) == 0 {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadAndDecodeBaseline(b *testing.B) {
	_, paths := benchWorld(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				b.Fatal(err)
			}
			var v map[string]any
			if strings.HasSuffix(p, ".toml") {
				err = toml.Unmarshal(data, &v)
			} else {
				err = json.Unmarshal(data, &v)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// bigClaudeJSON resembles a long-used ~/.claude.json: many projects with
// history.
func bigClaudeJSON() []byte {
	var sb strings.Builder
	sb.WriteString(`{"numStartups": 900, "mcpServers": {"a": {"command": "a"}}, "projects": {`)
	for i := range 2000 {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `"/home/u/src/project-%d": {"allowedTools": [], "history": [{"display": "fix the // comment parser /* here */", "pastedContents": {}}], "mcpServers": {}, "lastCost": 0.12}`, i)
	}
	sb.WriteString(`}}`)
	return []byte(sb.String())
}

// BenchmarkParseClaudeJSON parses a 2,000-project ~/.claude.json.
// Baseline: BenchmarkParseClaudeJSONBaseline (json.Unmarshal into any).
func BenchmarkParseClaudeJSON(b *testing.B) {
	data := bigClaudeJSON()
	pe := fuzzEnv(ProviderClaudeCode, "user")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		local, user, _ := parseClaudeJSON("/h/.claude.json", data, pe, []string{"/home/u/src/project-1999"})
		if local.err != nil || user.err != nil || len(user.entries) != 1 {
			b.Fatal("parse failed")
		}
	}
}

func BenchmarkParseClaudeJSONBaseline(b *testing.B) {
	data := bigClaudeJSON()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
	}
}
