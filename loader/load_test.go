package loader

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcplife/mcplife/events"
)

func TestPrecedenceAcrossProviders(t *testing.T) {
	w := newWorld(t)
	w.write("./mcp.json", `{"mcpServers": {"shared": {"command": "from-mcp-json"}, "only-plain": {"command": "p"}}}`)
	w.write("./.vscode/mcp.json", `{"servers": {"shared": {"command": "from-vscode"}}}`)
	w.write("~/.cursor/mcp.json", `{"mcpServers": {"shared": {"command": "from-cursor"}, "tie": {"command": "cursor-tie"}}}`)
	w.write("~/.codeium/windsurf/mcp_config.json", `{"mcpServers": {"tie": {"command": "windsurf-tie"}}}`)
	w.write("~/.codex/config.toml", "[mcp_servers.shared]\ncommand = \"from-codex\"\n")
	w.write("~/.claude.json", `{"mcpServers": {"shared": {"command": "from-claude"}}}`)
	d := w.load()

	if diff := cmp.Diff([]string{"shared", "tie", "only-plain"}, names(d)); diff != "" {
		t.Errorf("servers mismatch (-want +got):\n%s", diff)
	}
	if got := d.Servers[0].Config.Command; got != "from-claude" {
		t.Errorf("shared comes from %q, want Claude Code (priority 80)", got)
	}
	if got := d.Servers[1].Config.Command; got != "cursor-tie" {
		t.Errorf("tie comes from %q, want Cursor (equal priority, listed first)", got)
	}
	claude := w.path("~/.claude.json")
	cursor := w.path("~/.cursor/mcp.json")
	want := []skipView{
		{"shared", "shadowed", "shadowed by Claude Code (user) " + claude},
		{"shared", "shadowed", "shadowed by Claude Code (user) " + claude},
		{"tie", "shadowed", "shadowed by Cursor (user) " + cursor},
		{"shared", "shadowed", "shadowed by Claude Code (user) " + claude},
		{"shared", "shadowed", "shadowed by Claude Code (user) " + claude},
	}
	if diff := cmp.Diff(want, skips(d)); diff != "" {
		t.Errorf("skipped mismatch (-want +got):\n%s", diff)
	}
	var order []string
	for _, s := range d.Skipped {
		order = append(order, s.Source.Provider)
	}
	if diff := cmp.Diff([]string{"codex", "cursor", "windsurf", "vscode", "mcp-json"}, order); diff != "" {
		t.Errorf("skipped order mismatch (-want +got):\n%s", diff)
	}
}

func TestInvalidDoesNotShadowValid(t *testing.T) {
	w := newWorld(t)
	native := w.write("~/.config/mcplife/mcp.json", `{"mcpServers": {
  "api": {"type": "http"},
  "both": {"command": "x", "url": "http://y"},
  "weird": {"type": "websocket", "command": "x"},
  "bad name!": {"command": "x"},
  "args": {"command": "x", "args": "not-an-array", "env": {"A": ["no"]}}
}}`)
	w.write("~/.claude.json", `{"mcpServers": {"api": {"type": "http", "url": "https://api.example.com/mcp"}}}`)
	d := w.load()
	if diff := cmp.Diff([]string{"api"}, names(d)); diff != "" {
		t.Fatalf("servers mismatch (-want +got):\n%s", diff)
	}
	if d.Servers[0].Source.Provider != ProviderClaudeCode {
		t.Errorf("api from %s, want the valid lower-priority entry", d.Servers[0].Source.Provider)
	}
	want := []skipView{
		{"api", "invalid", `Server "api": http server requires "url" field`},
		{"both", "invalid", `Server "both": both "command" and "url" are set - server should be either stdio (command) OR http/sse (url), not both`},
		{"weird", "invalid", `Server "weird": unknown server type "websocket"`},
		{"bad name!", "invalid", `Server "bad name!": invalid server name (must match ^[A-Za-z0-9_.:-]{1,100}$)`},
		{"args", "invalid", `Server "args": "args" must be an array of strings; Server "args": "env.A" must be a string`},
	}
	if diff := cmp.Diff(want, skips(d)); diff != "" {
		t.Errorf("skipped mismatch (-want +got):\n%s", diff)
	}
	if got := d.Skipped[1].Position; got != native+":3:11" {
		t.Errorf("position = %q", got)
	}
}

func TestValidateMessages(t *testing.T) {
	tests := []struct {
		cfg  events.ServerConfig
		want string
	}{
		{events.ServerConfig{Name: "a", Command: "x"}, ""},
		{events.ServerConfig{Name: "a", URL: "http://x"}, ""},
		{events.ServerConfig{Name: "a:b.c-d_e", Type: "streamableHttp", URL: "http://x"}, ""},
		{events.ServerConfig{Name: "a", Type: "streamable-http", URL: "http://x"}, ""},
		{events.ServerConfig{Name: "a"}, `Server "a": stdio server requires "command" field`},
		{events.ServerConfig{Name: "a", Type: "stdio", URL: "http://x"}, `Server "a": stdio server requires "command" field`},
		{events.ServerConfig{Name: "a", Type: "sse"}, `Server "a": sse server requires "url" field`},
		{events.ServerConfig{Name: "a", Type: "http", Command: "x"}, `Server "a": http server requires "url" field`},
		{events.ServerConfig{Name: "a", Type: "sse", Command: "x", URL: "http://x"}, `Server "a": both "command" and "url" are set - server should be either stdio (command) OR http/sse (url), not both`},
		{events.ServerConfig{Name: "a", Type: "ws"}, `Server "a": unknown server type "ws"`},
		{events.ServerConfig{Name: strings.Repeat("x", 101), Command: "x"}, `Server "` + strings.Repeat("x", 101) + `": invalid server name (must match ^[A-Za-z0-9_.:-]{1,100}$)`},
		{events.ServerConfig{Name: "a", Command: "x", TimeoutMs: ms(-1)}, `Server "a": "timeout" must not be negative`},
		{events.ServerConfig{Name: "a", Command: "x", ToolTimeoutMs: ms(-1)}, `Server "a": "toolTimeoutMs" must not be negative`},
		{events.ServerConfig{Name: "a", Command: "x", TimeoutMs: ms(-1), ToolTimeoutMs: ms(-2)}, `Server "a": "timeout" must not be negative; Server "a": "toolTimeoutMs" must not be negative`},
	}
	for _, tt := range tests {
		if got := strings.Join(validate(tt.cfg, nil), "; "); got != tt.want {
			t.Errorf("validate(%+v) = %q, want %q", tt.cfg, got, tt.want)
		}
	}
}

func TestFilterOrder(t *testing.T) {
	w := newWorld(t)
	w.write("~/.config/mcplife/mcp.json", `{
  "disabledServers": ["denied", "both-lists"],
  "enabledServers": ["forced", "both-lists"],
  "mcpServers": {
    "off": {"command": "x", "enabled": false},
    "forced": {"command": "x", "enabled": false},
    "both-lists": {"command": "x", "enabled": false},
    "exa-off": {"url": "https://mcp.exa.ai/mcp?exaApiKey=disabled-key", "enabled": false}
  }
}`)
	w.write("./.mcplife/mcp.json", `{
  "disabledServers": ["kept"],
  "mcpServers": {"denied": {"command": "project-denied"}, "project-only": {"command": "run-me"}}
}`)
	w.write("~/.claude.json", `{"mcpServers": {"kept": {"command": "k"}, "denied": {"command": "d"}}}`)
	w.write("~/.gemini/settings.json", `{"mcpServers": {"exa": {"command": "npx", "args": ["-y", "exa-mcp-server"], "env": {"EXA_API_KEY": "from-env"}}}}`)

	t.Run("project enabled", func(t *testing.T) {
		d := w.load()
		if diff := cmp.Diff([]string{"project-only", "forced"}, names(d)); diff != "" {
			t.Errorf("servers mismatch (-want +got):\n%s", diff)
		}
		if e := d.Servers[1].Config.Enabled; e != nil {
			t.Errorf("forced server still has enabled = %v", *e)
		}
		user := w.path("~/.config/mcplife/mcp.json")
		proj := w.path("./.mcplife/mcp.json")
		want := []skipView{
			{"denied", "disabled", "listed in disabledServers of " + user},
			{"off", "disabled", "disabled in " + user},
			{"both-lists", "disabled", "listed in disabledServers of " + user},
			{"exa-off", "disabled", "disabled in " + user},
			{"kept", "disabled", "listed in disabledServers of " + proj},
			{"denied", "shadowed", "shadowed by mcplife (project) " + proj},
			{"exa", "exa", "Exa servers are replaced by the built-in Exa tools; API key collected"},
		}
		if diff := cmp.Diff(want, skips(d)); diff != "" {
			t.Errorf("skipped mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"from-env"}, d.ExaAPIKeys); diff != "" {
			t.Errorf("exa keys mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("project disabled", func(t *testing.T) {
		d := w.load(noProject)
		// The project's file is not read: its disabledServers list is
		// ignored with the rest of it, and its entries hide nothing.
		if diff := cmp.Diff([]string{"forced", "kept"}, names(d)); diff != "" {
			t.Errorf("servers mismatch (-want +got):\n%s", diff)
		}
		for _, s := range d.Skipped {
			if s.Source.Level == events.LevelProject {
				t.Errorf("project-level entry %q reported: %+v", s.Name, s)
			}
		}
		want := w.path("./.mcplife/mcp.json") + " not read: project-level configs are disabled"
		if !slices.Contains(d.Warnings, want) {
			t.Errorf("warnings = %q, want %q", d.Warnings, want)
		}
	})
	t.Run("exa filter off", func(t *testing.T) {
		d := w.load(func(o *Options) { o.KeepExa = true })
		if !strings.Contains(strings.Join(names(d), ","), "exa") || len(d.ExaAPIKeys) != 0 {
			t.Errorf("servers %v keys %d: want exa kept, no keys", names(d), len(d.ExaAPIKeys))
		}
	})
}

func TestExaFilteringAndKeys(t *testing.T) {
	w := newWorld(t)
	w.env["EXA_KEY"] = "key-from-var"
	w.env["EXA_API_KEY"] = "named-var"
	w.write("~/.config/mcplife/mcp.json", `{"mcpServers": {
  "EXA": {"command": "npx", "args": ["-y", "exa-mcp-server"]},
  "search": {"url": "https://mcp.exa.ai/mcp?exaApiKey=url-key&tools=web_search"},
  "remote-proxy": {"command": "npx", "args": ["-y", "mcp-remote", "https://MCP.EXA.AI/mcp?exaApiKey=arg-key"]},
  "env-ref": {"url": "https://mcp.exa.ai/mcp", "env": {"EXA_API_KEY": "${EXA_KEY}"}},
  "env-named": {"command": "exa", "args": ["mcp.exa.ai"], "env": {"EXA_API_KEY": "EXA_API_KEY"}},
  "env-cmd": {"command": "x", "args": ["mcp.exa.ai"], "env": {"EXA_API_KEY": "!cat /secret"}},
  "dup": {"url": "https://mcp.exa.ai/?exaApiKey=url-key"},
  "not-exa": {"url": "https://example.com/mcp?exa=1"}
}}`)
	d := w.load()
	if diff := cmp.Diff([]string{"not-exa"}, names(d)); diff != "" {
		t.Errorf("servers mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"url-key", "arg-key", "key-from-var", "named-var"}, d.ExaAPIKeys); diff != "" {
		t.Errorf("keys mismatch (-want +got):\n%s", diff)
	}
	for _, s := range d.Skipped {
		if s.Reason != events.SkipExa {
			t.Errorf("%s skipped as %s", s.Name, s.Reason)
		}
	}
	if got := d.Report().ExaKeys; got != 4 {
		t.Errorf("report exaKeys = %d", got)
	}
}

func TestMalformedFileYieldsOneErrorOthersLoad(t *testing.T) {
	w := newWorld(t)
	bad := w.write("~/.cursor/mcp.json", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"}\n    \"b\": {}\n  }\n}")
	badTOML := w.write("~/.codex/config.toml", "[mcp_servers.x]\ncommand = \"x\"\nargs = [\"a\",\n")
	w.write("~/.claude.json", `{"mcpServers": {"good": {"command": "g"}}}`)
	w.write("./mcp.json", `{"mcpServers": {"also-good": {"command": "g"}}}`)
	notObject := w.write("~/.gemini/settings.json", `{"mcpServers": ["x"]}`)
	if err := os.MkdirAll(w.path("~/.config/crush/crush.json"), 0o755); err != nil { // unreadable: a directory
		t.Fatal(err)
	}
	d := w.load()
	if diff := cmp.Diff([]string{"good", "also-good"}, names(d)); diff != "" {
		t.Errorf("servers mismatch (-want +got):\n%s", diff)
	}
	want := []FileError{
		{badTOML, badTOML + ":3:13: toml: array is incomplete"},
		{notObject, notObject + `:1:16: "mcpServers" must be an object`},
		{bad, bad + ":4:5: invalid character '\"' after object key:value pair"},
		{w.path("~/.config/crush/crush.json"), w.path("~/.config/crush/crush.json") + ": "},
	}
	if len(d.Errors) != len(want) {
		t.Fatalf("errors = %+v", d.Errors)
	}
	for i, e := range d.Errors {
		if e.Path != want[i].Path || !strings.HasPrefix(e.Error, want[i].Error) {
			t.Errorf("error %d = %+v, want path %s and prefix %q", i, e, want[i].Path, want[i].Error)
		}
	}
}

func TestUnsetVariableWarnings(t *testing.T) {
	w := newWorld(t)
	w.env["SET"] = "v"
	w.env["EMPTY"] = ""
	p := w.write("~/.config/mcplife/mcp.json", `{"mcpServers": {
  "s": {
    "command": "${BIN_DIR}/server",
    "args": ["--a=${SET}", "--b=${MISSING:-dflt}", "--c=${EMPTY:-dflt2}", "--d=${EMPTY}", "--e=${ALSO_MISSING}"],
    "env": {"TOKEN": "${SECRET_TOKEN}", "CMD": "!echo ${NOT_CHECKED}", "OK": "${SET}"}
  },
  "h": {"url": "${BASE:-https://x}/mcp", "headers": {"Authorization": "Bearer ${env:API_TOKEN}"}}
}}`)
	d := w.load()
	s := d.Servers[0].Config
	if diff := cmp.Diff("${BIN_DIR}/server", s.Command); diff != "" {
		t.Error(diff)
	}
	// Discovery keeps every reference as written; the resolver expands
	// them at connect time.
	written := []string{"--a=${SET}", "--b=${MISSING:-dflt}", "--c=${EMPTY:-dflt2}", "--d=${EMPTY}", "--e=${ALSO_MISSING}"}
	if diff := cmp.Diff(written, s.Args); diff != "" {
		t.Errorf("args must stay unexpanded (-want +got):\n%s", diff)
	}
	r := NewResolver(MapEnv(w.env), nil)
	var expanded []string
	for _, a := range s.Args {
		x, _ := r.Expand(a)
		expanded = append(expanded, x)
	}
	if diff := cmp.Diff([]string{"--a=v", "--b=dflt", "--c=dflt2", "--d=", "--e=${ALSO_MISSING}"}, expanded); diff != "" {
		t.Errorf("expanded args mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"TOKEN": "${SECRET_TOKEN}", "CMD": "!echo ${NOT_CHECKED}", "OK": "${SET}"}, s.Env); diff != "" {
		t.Errorf("env values must stay unresolved (-want +got):\n%s", diff)
	}
	if got := d.Servers[1].Config.URL; got != "${BASE:-https://x}/mcp" {
		t.Errorf("url = %q", got)
	}
	if got, _ := r.Expand(d.Servers[1].Config.URL); got != "https://x/mcp" {
		t.Errorf("expanded url = %q", got)
	}
	want := []string{
		p + `: server "s": command: environment variable BIN_DIR is not set`,
		p + `: server "s": args[4]: environment variable ALSO_MISSING is not set`,
		p + `: server "s": env.TOKEN: environment variable SECRET_TOKEN is not set`,
		p + `: server "h": headers.Authorization: environment variable API_TOKEN is not set`,
	}
	if diff := cmp.Diff(want, d.Warnings); diff != "" {
		t.Errorf("warnings mismatch (-want +got):\n%s", diff)
	}
}

func TestProblemsOfDisabledProjectFilesAreDropped(t *testing.T) {
	w := newWorld(t)
	claude := w.write("./.mcp.json", `{"mcpServers": {"p": {"command": "${NOPE}"}}}`)
	cursor := w.write("./.cursor/mcp.json", `{"mcpServers": {`)
	// Not read, so only named: no warning about their contents, no error.
	notRead := []string{
		claude + " not read: project-level configs are disabled",
		cursor + " not read: project-level configs are disabled",
	}
	if d := w.load(noProject); !cmp.Equal(d.Warnings, notRead) || len(d.Errors) != 0 {
		t.Errorf("warnings = %q, errors = %v", d.Warnings, d.Errors)
	}
	if d := w.load(); len(d.Warnings) != 1 || len(d.Errors) != 1 {
		t.Errorf("warnings = %q, errors = %v", d.Warnings, d.Errors)
	}
}

func TestExtraConfigs(t *testing.T) {
	w := newWorld(t)
	w.write("./.mcplife/mcp.json", `{"mcpServers": {"a": {"command": "project"}}}`)
	extra := w.write("./custom/servers.jsonc", `{
  // passed with --config
  "mcpServers": {"a": {"command": "extra"}, "b": {"command": "extra-b"}},
  "disabledServers": ["c"],
}`)
	w.write("~/.claude.json", `{"mcpServers": {"c": {"command": "c"}}}`)
	d := w.load(func(o *Options) { o.ExtraConfigs = []string{"custom/servers.jsonc", "missing.json"} }, noProject)
	if diff := cmp.Diff([]string{"a", "b"}, names(d)); diff != "" {
		t.Errorf("servers mismatch (-want +got):\n%s", diff)
	}
	want := events.SourceMeta{Provider: "native", ProviderName: "mcplife", Path: extra, Level: "native"}
	if diff := cmp.Diff(want, d.Servers[0].Source); diff != "" {
		t.Errorf("source mismatch (-want +got):\n%s", diff)
	}
	if len(d.Errors) != 1 || d.Errors[0].Path != filepath.Join(w.proj, "missing.json") {
		t.Errorf("errors = %+v, want the missing extra file", d.Errors)
	}
	if got := skips(d); len(got) != 1 || got[0].Reason != "disabled" {
		t.Errorf("skipped = %+v", got)
	}
}

func TestClaudeLocalScopeSurvivesNoProject(t *testing.T) {
	w := newWorld(t)
	w.write("~/.claude.json", `{"projects": {"{{PROJ}}": {"mcpServers": {"mine": {"command": "m"}}}}}`)
	w.write("./.mcp.json", `{"mcpServers": {"theirs": {"command": "t"}}}`)
	d := w.load(noProject)
	if diff := cmp.Diff([]string{"mine"}, names(d)); diff != "" {
		t.Errorf("servers mismatch (-want +got):\n%s", diff)
	}
	if got := d.Servers[0].Source.Level; got != events.LevelUser {
		t.Errorf("local scope level = %s", got)
	}
}

func TestClaudeProjectsKeyMatchesSymlinkedCwd(t *testing.T) {
	w := newWorld(t)
	link := filepath.Join(filepath.Dir(w.proj), "link")
	if err := os.Symlink(w.proj, link); err != nil {
		t.Fatal(err)
	}
	w.write("~/.claude.json", `{"projects": {"{{PROJ}}": {"mcpServers": {"mine": {"command": "m"}}}}}`)
	d := w.load(func(o *Options) { o.Cwd = link })
	if diff := cmp.Diff([]string{"mine"}, names(d)); diff != "" {
		t.Errorf("servers mismatch (-want +got):\n%s", diff)
	}
}

func TestProjectIsHome(t *testing.T) {
	w := newWorld(t)
	w.write("~/.gemini/settings.json", `{"mcpServers": {"g": {"command": "g"}}}`)
	d := w.load(func(o *Options) { o.Cwd = w.home }, noProject)
	if diff := cmp.Diff([]string{"g"}, names(d)); diff != "" {
		t.Errorf("servers mismatch (-want +got):\n%s", diff)
	}
	if len(d.Skipped) != 0 || d.Servers[0].Source.Level != events.LevelUser {
		t.Errorf("the home file is read once, as user level: %+v %+v", d.Servers, d.Skipped)
	}
}

func TestXDGAndCodexHome(t *testing.T) {
	w := newWorld(t)
	xdg := filepath.Join(w.home, "xdg")
	w.env["XDG_CONFIG_HOME"] = xdg
	w.env["CODEX_HOME"] = filepath.Join(w.home, "codex-home")
	w.write("~/xdg/mcplife/mcp.json", `{"mcpServers": {"native": {"command": "n"}}}`)
	w.write("~/codex-home/config.toml", "[mcp_servers.codex]\ncommand = \"c\"\n")
	w.write("~/.config/mcplife/mcp.json", `{"mcpServers": {"ignored": {"command": "n"}}}`)
	d := w.load()
	if diff := cmp.Diff([]string{"native", "codex"}, names(d)); diff != "" {
		t.Errorf("servers mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadConfigsFailsAsAWhole(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w := newWorld(t)
	if _, err := LoadConfigs(ctx, w.opts()); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
	if _, err := LoadConfigs(context.Background(), Options{}); err == nil || !strings.Contains(err.Error(), "Cwd") || !strings.Contains(err.Error(), "Home") {
		t.Errorf("no inputs: err = %v", err)
	}
	if _, err := LoadConfigs(context.Background(), Options{Cwd: filepath.Join(w.proj, "nope"), Home: w.home}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing cwd: err = %v", err)
	}
	file := w.write("~/file", "")
	if _, err := LoadConfigs(context.Background(), Options{Cwd: w.proj, Home: file}); err == nil {
		t.Error("home is a file: no error")
	}
	if _, err := LoadConfigs(context.Background(), Options{Cwd: w.proj, Home: filepath.Join(w.home, "absent")}); err != nil {
		t.Errorf("absent home: %v", err)
	}
	// No files at all is not a failure.
	d := w.load()
	if len(d.Servers)+len(d.Skipped)+len(d.Errors)+len(d.Warnings) != 0 {
		t.Errorf("empty world: %+v", d)
	}
}

func TestEventsAreRedactedOrderedAndDeterministic(t *testing.T) {
	w := newWorld(t)
	w.env["TOKEN"] = "tok-secret"
	w.write("~/.config/mcplife/mcp.json", `{"mcpServers": {
  "web": {"url": "https://api.example.com/mcp?api_key=url-secret&q=1", "headers": {"Authorization": "Bearer ${TOKEN}", "X-Literal": "literal-secret"}},
  "cli": {"command": "srv", "args": ["--token=arg-secret"], "env": {"PASSWORD": "!pass show x", "PLAIN": "plain-secret"}},
  "broken": {"type": "http"}
}}`)
	w.write("~/.claude.json", `{"mcpServers": {"web": {"command": "other"}}}`)
	d := w.load()
	evs := d.Events()
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Type()+":"+e.(events.ServerEvent).ServerName())
	}
	want := []string{"ServerDiscovered:web", "ServerDiscovered:cli", "ServerInvalid:broken", "ServerSkipped:web"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
	sd := evs[0].(*events.ServerDiscovered)
	if sd.ConfigHash != d.Servers[0].Config.Hash() || sd.Transport != "http" || sd.Source.Provider != "native" {
		t.Errorf("discovered = %+v", sd)
	}
	inv := evs[2].(*events.ServerInvalid)
	if inv.Error != `Server "broken": http server requires "url" field` {
		t.Errorf("invalid error = %q", inv.Error)
	}
	sk := evs[3].(*events.ServerSkipped)
	if sk.Reason != events.SkipShadowed || sk.Source.Provider != "claude-code" {
		t.Errorf("skipped = %+v", sk)
	}
	b, err := json.Marshal(evs)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"tok-secret", "url-secret", "literal-secret", "arg-secret", "pass show", "plain-secret", "${TOKEN}"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("events contain %q: %s", secret, b)
		}
	}
	if !reflect.DeepEqual(evs, w.load().Events()) {
		t.Error("events differ between two loads of the same files")
	}
}

func TestReportShape(t *testing.T) {
	w := newWorld(t)
	w.write("~/.config/mcplife/mcp.json", `{"mcpServers": {
  "web": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer s"}, "timeout": 100, "toolTimeoutMs": 120000},
  "off": {"command": "x", "enabled": false}
}}`)
	w.write("./mcp.json", `{`)
	b, err := json.Marshal(w.load().Report())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"servers": []any{map[string]any{
			"name": "web", "transport": "http", "url": "https://x/mcp",
			"headers":       map[string]any{"Authorization": "<redacted>"},
			"timeoutMs":     100.0,
			"toolTimeoutMs": 120000.0,
			"source":        map[string]any{"provider": "native", "providerName": "mcplife", "path": w.path("~/.config/mcplife/mcp.json"), "level": "user"},
		}},
		"skipped": []any{map[string]any{
			"name": "off", "reason": "disabled", "detail": "disabled in " + w.path("~/.config/mcplife/mcp.json"),
			"source": map[string]any{"provider": "native", "providerName": "mcplife", "path": w.path("~/.config/mcplife/mcp.json"), "level": "user"},
		}},
		"errors":  []any{map[string]any{"path": w.path("./mcp.json"), "error": w.path("./mcp.json") + ":1:2: unexpected end of JSON input"}},
		"exaKeys": 0.0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("report mismatch (-want +got):\n%s", diff)
	}
	empty, _ := json.Marshal((&Discovery{}).Report())
	if string(empty) != `{"servers":[],"skipped":[],"errors":[],"exaKeys":0}` {
		t.Errorf("empty report = %s", empty)
	}
}

func TestProvidersTable(t *testing.T) {
	var got []string
	for _, p := range Providers() {
		got = append(got, p.ID+"/"+p.Name)
	}
	want := []string{"native/mcplife", "claude-code/Claude Code", "codex/OpenAI Codex", "gemini/Gemini CLI", "opencode/OpenCode", "cursor/Cursor", "windsurf/Windsurf", "crush/Crush", "claude-desktop/Claude Desktop", "vscode/VS Code", "mcp-json/MCP Config"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("providers mismatch (-want +got):\n%s", diff)
	}
	ps := Providers()
	for i := 1; i < len(ps); i++ {
		if ps[i].Priority > ps[i-1].Priority {
			t.Errorf("%s ranks above %s", ps[i].ID, ps[i-1].ID)
		}
	}
}
