package loader

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcplife/mcplife/events"
)

// A value that happens to be the name of a set variable is literal in
// every agent's format except mcplife's own (where the reference runtime's
// rule applies unless the entry says envPolicy "literal") and Codex's
// env_vars; a reference in the format's own syntax is still expanded.
func TestValuesAreLiteralOutsideFormatsThatNameVariables(t *testing.T) {
	env := map[string]string{"DEBUG": "host-debug-value", "TOKEN": "tok"}
	stdio := `"command": "srv", "env": {"LOG_LEVEL": "DEBUG", "REF": "${TOKEN}"}`
	http := `"url": "https://example.com/mcp", "headers": {"X-Mode": "DEBUG", "Authorization": "Bearer ${TOKEN}"}`
	tests := []struct {
		name, path, file string
		// literal: DEBUG stays DEBUG.
		literal bool
	}{
		{"native", "~/.config/mcplife/mcp.json", `{"mcpServers": {"s": {` + stdio + `}, "h": {` + http + `}}}`, false},
		{"native envPolicy literal", "~/.config/mcplife/mcp.json", `{"mcpServers": {"s": {"envPolicy": "literal", ` + stdio + `}, "h": {"envPolicy": "literal", ` + http + `}}}`, true},
		{"claude code", "./.mcp.json", `{"mcpServers": {"s": {` + stdio + `}, "h": {"type": "http", ` + http + `}}}`, true},
		{"cursor", "~/.cursor/mcp.json", `{"mcpServers": {"s": {` + stdio + `}, "h": {` + http + `}}}`, true},
		{"windsurf", "~/.codeium/windsurf/mcp_config.json", `{"mcpServers": {"s": {` + stdio + `}, "h": {` + http + `}}}`, true},
		{"gemini", "~/.gemini/settings.json", `{"mcpServers": {"s": {` + stdio + `}, "h": {"httpUrl": "https://example.com/mcp", "headers": {"X-Mode": "DEBUG", "Authorization": "Bearer $TOKEN"}}}}`, true},
		{"crush", "~/.config/crush/crush.json", `{"mcp": {"s": {"type": "stdio", ` + stdio + `}, "h": {"type": "http", ` + http + `}}}`, true},
		{"opencode", "~/.config/opencode/opencode.json", `{"mcp": {"s": {"type": "local", "command": ["srv"], "environment": {"LOG_LEVEL": "DEBUG", "REF": "{env:TOKEN}"}}, "h": {"type": "remote", ` + http + `}}}`, true},
		{"vscode", "./.vscode/mcp.json", `{"servers": {"s": {` + stdio + `}, "h": {"type": "http", ` + http + `}}}`, true},
		{"claude desktop", "~/.config/Claude/claude_desktop_config.json", `{"mcpServers": {"s": {` + stdio + `}}}`, true},
		{"plain", "./mcp.json", `{"mcpServers": {"s": {` + stdio + `}, "h": {` + http + `}}}`, true},
		{"codex", "~/.codex/config.toml", "[mcp_servers.s]\ncommand = \"srv\"\nenv = { LOG_LEVEL = \"DEBUG\", REF = \"${TOKEN}\" }\n" +
			"[mcp_servers.h]\nurl = \"https://example.com/mcp\"\nhttp_headers = { \"X-Mode\" = \"DEBUG\" }\nbearer_token_env_var = \"TOKEN\"\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			for k, v := range env {
				w.env[k] = v
			}
			w.write(tt.path, tt.file)
			d := w.load(func(o *Options) { o.GOOS = "linux" })
			if len(d.Errors) > 0 || len(d.Skipped) > 0 {
				t.Fatalf("errors %v, skipped %+v", d.Errors, d.Skipped)
			}
			want := "DEBUG"
			if !tt.literal {
				want = env["DEBUG"]
			}
			r := ResolverFor(w.opts(), nil)
			for _, s := range d.Servers {
				got, err := r.ResolveConfig(context.Background(), s.Config)
				if err != nil {
					t.Fatal(err)
				}
				lit, ref := got.Env["LOG_LEVEL"], got.Env["REF"]
				if s.Config.Transport() != events.TransportStdio {
					lit, ref = got.Headers["X-Mode"], strings.TrimPrefix(got.Headers["Authorization"], "Bearer ")
				}
				if lit != want || ref != "tok" {
					t.Errorf("server %s: literal value resolved to %q (want %q), reference to %q (want tok)", s.Config.Name, lit, want, ref)
				}
			}
		})
	}
}

func TestEnvPolicyMustBeKnown(t *testing.T) {
	w := newWorld(t)
	w.write("~/.config/mcplife/mcp.json", `{"mcpServers": {"s": {"command": "srv", "envPolicy": "verbatim"}}}`)
	d := w.load()
	if diff := cmp.Diff([]skipView{{"s", "invalid", `Server "s": "envPolicy" must be "names" or "literal", not "verbatim"`}}, skips(d)); diff != "" {
		t.Errorf("skipped mismatch (-want +got):\n%s", diff)
	}
}

// A working directory that does not exist and a URL that is not an
// http(s) URL make the entry invalid at discovery, with a message naming
// the server and quoting the value as written; the entry's position names
// the file. References are expanded for the check only.
func TestCwdAndURLCheckedAtDiscovery(t *testing.T) {
	w := newWorld(t)
	w.env["TOOLS"] = w.proj
	w.env["SECRET"] = "s3cr3t"
	w.write("./tools/.keep", "")
	p := w.write("~/.config/mcplife/mcp.json", `{"mcpServers": {
  "ok-rel": {"command": "srv", "cwd": "tools"},
  "ok-ref": {"command": "srv", "cwd": "${TOOLS}/tools"},
  "no-dir": {"command": "srv", "cwd": "missing/dir"},
  "file-dir": {"command": "srv", "cwd": "tools/.keep"},
  "no-scheme": {"url": "example.com/mcp"},
  "ftp": {"type": "sse", "url": "ftp://example.com/${SECRET}/sse"},
  "no-host": {"type": "http", "url": "http:///mcp"},
  "ok-url": {"url": "https://example.com/${SECRET}/mcp"}
}}`)
	d := w.load()
	var names []string
	for _, s := range d.Servers {
		names = append(names, s.Config.Name)
	}
	if diff := cmp.Diff([]string{"ok-rel", "ok-ref", "ok-url"}, names); diff != "" {
		t.Errorf("servers mismatch (-want +got):\n%s", diff)
	}
	want := []skipView{
		{"no-dir", "invalid", `Server "no-dir": "cwd" "missing/dir" does not exist`},
		{"file-dir", "invalid", `Server "file-dir": "cwd" "tools/.keep" is not a directory`},
		{"no-scheme", "invalid", `Server "no-scheme": "url" "example.com/mcp" must start with http:// or https://`},
		{"ftp", "invalid", `Server "ftp": "url" "ftp://example.com/${SECRET}/sse" must start with http:// or https://`},
		{"no-host", "invalid", `Server "no-host": "url" "http:///mcp" has no host`},
	}
	if diff := cmp.Diff(want, skips(d)); diff != "" {
		t.Errorf("skipped mismatch (-want +got):\n%s", diff)
	}
	for _, s := range d.Skipped {
		if !strings.HasPrefix(s.Position, p+":") {
			t.Errorf("%s: position %q does not name the file", s.Name, s.Position)
		}
	}
}
