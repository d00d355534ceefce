package loader

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/mcplife/mcplife/events"
)

// TestProviders loads each provider's files, written the way that tool
// writes them, and checks the mapped configurations.
func TestProviders(t *testing.T) {
	type server struct {
		cfg events.ServerConfig
		// src is provider, path, level.
		src [3]string
	}
	tests := []struct {
		name     string
		files    map[string]string
		env      map[string]string
		goos     string
		want     []server
		skipped  []skipView
		warnings []string // substrings, one per warning, in order
	}{
		{
			name: "native user and project",
			files: map[string]string{
				"~/.config/mcplife/mcp.json": `{
  "$schema": "https://mcplife.dev/mcp.schema.json",
  "mcpServers": {
    "git": {"command": "uvx", "args": ["mcp-server-git", "--repository", "${HOME}/src"], "timeout": 5000, "enabledTools": ["git_*"], "disabledTools": ["git_push"]},
    "docs": {"type": "streamable-http", "url": "https://docs.example.com/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}, "protocolVersion": "2025-06-18", "alwaysLoad": true, "toolTimeoutMs": 300000},
  },
}`,
				"./.mcplife/mcp.json": `{
  // the project pins its own git server
  "mcpServers": {"git": {"command": "./bin/git-mcp", "cwd": "tools", "enabled": "true"}}
}`,
				"./tools/.keep": "",
			},
			env: map[string]string{"HOME": "/home/u", "DOCS_TOKEN": "s3cret"},
			want: []server{
				{events.ServerConfig{Name: "git", Command: "./bin/git-mcp", Cwd: "tools", Enabled: new(true)}, [3]string{"native", "./.mcplife/mcp.json", "project"}},
				{events.ServerConfig{Name: "docs", Type: "http", URL: "https://docs.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${DOCS_TOKEN}"}, ToolTimeoutMs: ms(300000), ProtocolVersion: "2025-06-18", AlwaysLoad: true}, [3]string{"native", "~/.config/mcplife/mcp.json", "user"}},
			},
			skipped: []skipView{{"git", "shadowed", "shadowed by mcplife (project) {{PROJ}}/.mcplife/mcp.json"}},
		},
		{
			name: "claude code scopes",
			files: map[string]string{
				"~/.claude.json": `{
  "numStartups": 42,
  "mcpServers": {
    "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/", "headers": {"Authorization": "Bearer ${GITHUB_PAT}"}},
    "memory": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {}}
  },
  "projects": {
    "{{PROJ}}": {
      "allowedTools": [],
      "mcpServers": {
        "local-db": {"type": "stdio", "command": "uvx", "args": ["mcp-server-sqlite", "--db-path", "${DATA_DIR:-/var/data}/db.sqlite"], "env": {}},
        "memory": {"type": "stdio", "command": "node", "args": ["memory-local.js"]}
      },
      "enabledMcpjsonServers": [],
      "disabledMcpjsonServers": ["rejected"],
      "hasTrustDialogAccepted": true
    },
    "/somewhere/else": {"mcpServers": {"other-project": {"command": "x"}}}
  }
}`,
				"./.mcp.json": `{
  "mcpServers": {
    "sentry": {"type": "sse", "url": "https://mcp.sentry.dev/sse", "alwaysLoad": true},
    "rejected": {"command": "run-me"},
    "api": {"type": "http", "url": "${API_BASE_URL:-https://api.example.com}/mcp", "headers": {"Authorization": "Bearer ${API_KEY}"}}
  }
}`,
				"~/.claude/mcp.json": `{"mcpServers": {"fetch": {"command": "uvx", "args": ["mcp-server-fetch"]}}}`,
			},
			env: map[string]string{"GITHUB_PAT": "ghp_x", "API_KEY": "k"},
			want: []server{
				{events.ServerConfig{Name: "local-db", Type: "stdio", Command: "uvx", Args: []string{"mcp-server-sqlite", "--db-path", "${DATA_DIR:-/var/data}/db.sqlite"}, Env: map[string]string{}}, [3]string{"claude-code", "~/.claude.json", "user"}},
				{events.ServerConfig{Name: "memory", Type: "stdio", Command: "node", Args: []string{"memory-local.js"}}, [3]string{"claude-code", "~/.claude.json", "user"}},
				{events.ServerConfig{Name: "sentry", Type: "sse", URL: "https://mcp.sentry.dev/sse", AlwaysLoad: true}, [3]string{"claude-code", "./.mcp.json", "project"}},
				{events.ServerConfig{Name: "api", Type: "http", URL: "${API_BASE_URL:-https://api.example.com}/mcp", Headers: map[string]string{"Authorization": "Bearer ${API_KEY}"}}, [3]string{"claude-code", "./.mcp.json", "project"}},
				{events.ServerConfig{Name: "github", Type: "http", URL: "https://api.githubcopilot.com/mcp/", Headers: map[string]string{"Authorization": "Bearer ${GITHUB_PAT}"}}, [3]string{"claude-code", "~/.claude.json", "user"}},
				{events.ServerConfig{Name: "fetch", Command: "uvx", Args: []string{"mcp-server-fetch"}}, [3]string{"claude-code", "~/.claude/mcp.json", "user"}},
			},
			skipped: []skipView{
				{"rejected", "disabled", "rejected in Claude Code (disabledMcpjsonServers in {{HOME}}/.claude.json)"},
				{"memory", "shadowed", "shadowed by Claude Code (user) {{HOME}}/.claude.json"},
			},
		},
		{
			name: "codex toml",
			files: map[string]string{
				"~/.codex/config.toml": `model = "gpt-5-codex"
approval_policy = "on-request"

[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]
env_vars = ["HTTPS_PROXY", "UNSET_PROXY", { name = "NO_PROXY", source = "local" }]
startup_timeout_sec = 20
tool_timeout_sec = 60

[mcp_servers.context7.env]
LOG_LEVEL = "info"

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
bearer_token_env_var = "FIGMA_OAUTH_TOKEN"
http_headers = { "X-Figma-Region" = "us-east-1" }
env_http_headers = { "X-Api-Key" = "FIGMA_API_KEY" }
enabled_tools = ["get_*"]
disabled_tools = ["delete_file"]

[mcp_servers.off]
command = "off-server"
enabled = false
`,
				"./.codex/config.toml": `[mcp_servers.repo-tools]
command = "./scripts/mcp.sh"
cwd = "{{PROJ}}/repo"
startup_timeout_ms = 1500
`,
				"./repo/.keep": "",
			},
			env: map[string]string{"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "localhost", "FIGMA_OAUTH_TOKEN": "tok"},
			want: []server{
				{events.ServerConfig{Name: "repo-tools", Command: "./scripts/mcp.sh", Cwd: "{{PROJ}}/repo", TimeoutMs: ms(1500)}, [3]string{"codex", "./.codex/config.toml", "project"}},
				{events.ServerConfig{Name: "context7", Command: "npx", Args: []string{"-y", "@upstash/context7-mcp"}, Env: map[string]string{"LOG_LEVEL": "info", "HTTPS_PROXY": "${HTTPS_PROXY}", "NO_PROXY": "${NO_PROXY}"}, TimeoutMs: ms(20000), ToolTimeoutMs: ms(60000)}, [3]string{"codex", "~/.codex/config.toml", "user"}},
				{events.ServerConfig{Name: "figma", URL: "https://mcp.figma.com/mcp", Headers: map[string]string{"X-Figma-Region": "us-east-1", "X-Api-Key": "${FIGMA_API_KEY}", "Authorization": "Bearer ${FIGMA_OAUTH_TOKEN}"}, EnabledTools: []string{"get_*"}, DisabledTools: []string{"delete_file"}}, [3]string{"codex", "~/.codex/config.toml", "user"}},
			},
			skipped:  []skipView{{"off", "disabled", "disabled in {{HOME}}/.codex/config.toml"}},
			warnings: []string{`server "figma": headers.X-Api-Key: environment variable FIGMA_API_KEY is not set`},
		},
		{
			name: "gemini settings",
			files: map[string]string{
				"~/.gemini/settings.json": `{
  "theme": "Default",
  "mcpServers": {
    "pythonTools": {
      "command": "python",
      "args": ["-m", "my_mcp_server", "--port", "8080"],
      "cwd": "./mcp-servers/python",
      "env": {"DATABASE_URL": "$DB_CONNECTION_STRING", "API_KEY": "${EXTERNAL_API_KEY}"},
      "timeout": 15000
    },
    "httpServer": {"httpUrl": "http://localhost:3000/mcp", "timeout": 5000, "includeTools": ["safe_tool"], "excludeTools": ["dangerous_tool"]},
    "sseServer": {"url": "http://localhost:8080/sse", "headers": {"Authorization": "Bearer $TOKEN"}, "trust": false},
    "experimental": {"command": "exp"}
  },
  "mcp": {"excluded": ["experimental"]}
}`,
				"./mcp-servers/python/.keep": "",
			},
			env: map[string]string{"DB_CONNECTION_STRING": "postgres://", "EXTERNAL_API_KEY": "k", "TOKEN": "t"},
			want: []server{
				{events.ServerConfig{Name: "pythonTools", Command: "python", Args: []string{"-m", "my_mcp_server", "--port", "8080"}, Cwd: "./mcp-servers/python", Env: map[string]string{"DATABASE_URL": "${DB_CONNECTION_STRING}", "API_KEY": "${EXTERNAL_API_KEY}"}, TimeoutMs: ms(15000), ToolTimeoutMs: ms(15000)}, [3]string{"gemini", "~/.gemini/settings.json", "user"}},
				{events.ServerConfig{Name: "httpServer", Type: "http", URL: "http://localhost:3000/mcp", TimeoutMs: ms(5000), ToolTimeoutMs: ms(5000), EnabledTools: []string{"safe_tool"}, DisabledTools: []string{"dangerous_tool"}}, [3]string{"gemini", "~/.gemini/settings.json", "user"}},
				{events.ServerConfig{Name: "sseServer", Type: "sse", URL: "http://localhost:8080/sse", Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}}, [3]string{"gemini", "~/.gemini/settings.json", "user"}},
			},
			skipped: []skipView{{"experimental", "disabled", "listed in mcp.excluded of {{HOME}}/.gemini/settings.json"}},
		},
		{
			name: "opencode",
			files: map[string]string{
				"~/.config/opencode/opencode.json": `{
  "$schema": "https://opencode.ai/config.json",
  "mcp": {
    "my-local": {"type": "local", "command": ["npx", "-y", "my-mcp-command"], "enabled": true, "environment": {"MY_ENV_VAR": "my_env_var_value"}},
    "my-remote": {"type": "remote", "url": "https://my-mcp-server.com", "enabled": true, "headers": {"Authorization": "Bearer {env:MY_API_KEY}"}},
    "off": {"type": "local", "command": ["bun", "x", "thing"], "enabled": false},
    "odd": {"type": "websocket", "url": "wss://x"}
  }
}`,
			},
			env: map[string]string{"MY_API_KEY": "k"},
			want: []server{
				{events.ServerConfig{Name: "my-local", Type: "stdio", Command: "npx", Args: []string{"-y", "my-mcp-command"}, Env: map[string]string{"MY_ENV_VAR": "my_env_var_value"}, Enabled: new(true)}, [3]string{"opencode", "~/.config/opencode/opencode.json", "user"}},
				{events.ServerConfig{Name: "my-remote", Type: "http", URL: "https://my-mcp-server.com", Headers: map[string]string{"Authorization": "Bearer ${MY_API_KEY}"}, Enabled: new(true)}, [3]string{"opencode", "~/.config/opencode/opencode.json", "user"}},
			},
			skipped: []skipView{
				{"off", "disabled", "disabled in {{HOME}}/.config/opencode/opencode.json"},
				{"odd", "invalid", `Server "odd": unknown server type "websocket"`},
			},
		},
		{
			name: "cursor",
			files: map[string]string{
				"~/.cursor/mcp.json": `{"mcpServers": {
  "mcp-server": {"command": "npx", "args": ["-y", "mcp-server"], "env": {"API_KEY": "${env:CURSOR_API_KEY}"}},
  "remote": {"url": "https://example.com/mcp", "headers": {"API_KEY": "value"}, "alwaysLoad": true}
}}`,
				"./.cursor/mcp.json": `{"mcpServers": {"ws": {"command": "node", "args": ["${workspaceFolder}/server.js", "--home", "${userHome}"]}}}`,
			},
			want: []server{
				{events.ServerConfig{Name: "ws", Command: "node", Args: []string{"{{PROJ}}/server.js", "--home", "{{HOME}}"}}, [3]string{"cursor", "./.cursor/mcp.json", "project"}},
				{events.ServerConfig{Name: "mcp-server", Command: "npx", Args: []string{"-y", "mcp-server"}, Env: map[string]string{"API_KEY": "${env:CURSOR_API_KEY}"}}, [3]string{"cursor", "~/.cursor/mcp.json", "user"}},
				{events.ServerConfig{Name: "remote", URL: "https://example.com/mcp", Headers: map[string]string{"API_KEY": "value"}}, [3]string{"cursor", "~/.cursor/mcp.json", "user"}},
			},
			warnings: []string{`server "mcp-server": env.API_KEY: environment variable CURSOR_API_KEY is not set`},
		},
		{
			name: "windsurf",
			files: map[string]string{
				"~/.codeium/windsurf/mcp_config.json": `{
  "mcpServers": {
    "tidewave": {"serverUrl": "http://localhost:4000/tidewave/mcp"},
    "git": {"command": "py", "args": ["-m", "mcp_server_git"], "disabled": true, "env": {}},
    "figma": {"command": "npx", "args": ["-y", "figma-developer-mcp", "--stdio"], "env": {"FIGMA_API_KEY": "${env:FIGMA_KEY}"}, "disabledTools": ["get_image"]}
  }
}`,
			},
			env: map[string]string{"FIGMA_KEY": "f"},
			want: []server{
				{events.ServerConfig{Name: "tidewave", Type: "http", URL: "http://localhost:4000/tidewave/mcp"}, [3]string{"windsurf", "~/.codeium/windsurf/mcp_config.json", "user"}},
				{events.ServerConfig{Name: "figma", Command: "npx", Args: []string{"-y", "figma-developer-mcp", "--stdio"}, Env: map[string]string{"FIGMA_API_KEY": "${env:FIGMA_KEY}"}, DisabledTools: []string{"get_image"}}, [3]string{"windsurf", "~/.codeium/windsurf/mcp_config.json", "user"}},
			},
			skipped: []skipView{{"git", "disabled", "disabled in {{HOME}}/.codeium/windsurf/mcp_config.json"}},
		},
		{
			name: "crush",
			files: map[string]string{
				"~/.config/crush/crush.json": `{
  "$schema": "https://charm.land/crush.json",
  "mcp": {
    "filesystem": {"type": "stdio", "command": "node", "args": ["$HOME/mcp/server.js", "$UNSET_DIR", "${HOME}"], "timeout": 120, "disabled": false, "disabled_tools": ["some-tool-name"], "env": {"NODE_ENV": "production"}},
    "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/", "timeout": 120, "headers": {"Authorization": "Bearer $GH_PAT"}},
    "streaming-service": {"type": "sse", "url": "https://example.com/mcp/sse", "disabled": true, "headers": {"API-Key": "$(echo $API_KEY)"}}
  }
}`,
				"./.crush.json": `{"mcp": {"github": {"type": "http", "url": "https://ghe.example.com/mcp/"}}}`,
			},
			env: map[string]string{"HOME": "/home/u", "GH_PAT": "p"},
			want: []server{
				{events.ServerConfig{Name: "github", Type: "http", URL: "https://ghe.example.com/mcp/"}, [3]string{"crush", "./.crush.json", "project"}},
				{events.ServerConfig{Name: "filesystem", Type: "stdio", Command: "node", Args: []string{"${HOME}/mcp/server.js", "${UNSET_DIR}", "${HOME}"}, Env: map[string]string{"NODE_ENV": "production"}, TimeoutMs: ms(120000), DisabledTools: []string{"some-tool-name"}}, [3]string{"crush", "~/.config/crush/crush.json", "user"}},
			},
			skipped: []skipView{
				{"github", "shadowed", "shadowed by Crush (project) {{PROJ}}/.crush.json"},
				{"streaming-service", "disabled", "disabled in {{HOME}}/.config/crush/crush.json"},
			},
			warnings: []string{`server "filesystem": args[1]: environment variable UNSET_DIR is not set`, `server "streaming-service": headers.API-Key: $(...) is not run`},
		},
		{
			name: "claude desktop linux",
			files: map[string]string{
				"~/.config/Claude/claude_desktop_config.json": `{
  "mcpServers": {
    "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/u/Desktop"]},
    "remote": {"url": "https://example.com/mcp"}
  },
  "globalShortcut": ""
}`,
			},
			want: []server{
				{events.ServerConfig{Name: "filesystem", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/home/u/Desktop"}}, [3]string{"claude-desktop", "~/.config/Claude/claude_desktop_config.json", "user"}},
			},
			skipped: []skipView{{"remote", "invalid", `Server "remote": Claude Desktop's config file supports only stdio servers (command); "url" is ignored; Server "remote": stdio server requires "command" field`}},
		},
		{
			name: "claude desktop macos",
			goos: "darwin",
			files: map[string]string{
				"~/Library/Application Support/Claude/claude_desktop_config.json": `{"mcpServers": {"weather": {"command": "uv", "args": ["--directory", "/ABS/weather", "run", "weather.py"]}}}`,
				"~/.config/Claude/claude_desktop_config.json":                     `{"mcpServers": {"linux-only": {"command": "x"}}}`,
			},
			want: []server{
				{events.ServerConfig{Name: "weather", Command: "uv", Args: []string{"--directory", "/ABS/weather", "run", "weather.py"}}, [3]string{"claude-desktop", "~/Library/Application Support/Claude/claude_desktop_config.json", "user"}},
			},
		},
		{
			name: "vscode",
			files: map[string]string{
				"./.vscode/mcp.json": `{
  // 💡 Inputs are prompted on first server start, then stored securely by VS Code.
  "inputs": [
    {"type": "promptString", "id": "perplexity-key", "description": "Perplexity API Key", "password": true}
  ],
  "servers": {
    // https://github.com/ppl-ai/modelcontextprotocol/
    "Perplexity": {"type": "stdio", "command": "npx", "args": ["-y", "server-perplexity-ask"], "env": {"PERPLEXITY_API_KEY": "${input:perplexity-key}"}},
    "fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"]},
    "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"},
    "workspace": {"command": "node", "args": ["${workspaceFolder}/tools/server.js"], "env": {"TOKEN": "${env:WS_TOKEN}"}},
  },
}`,
			},
			env: map[string]string{"WS_TOKEN": "w"},
			want: []server{
				{events.ServerConfig{Name: "fetch", Type: "stdio", Command: "uvx", Args: []string{"mcp-server-fetch"}}, [3]string{"vscode", "./.vscode/mcp.json", "project"}},
				{events.ServerConfig{Name: "github", Type: "http", URL: "https://api.githubcopilot.com/mcp/"}, [3]string{"vscode", "./.vscode/mcp.json", "project"}},
				{events.ServerConfig{Name: "workspace", Command: "node", Args: []string{"{{PROJ}}/tools/server.js"}, Env: map[string]string{"TOKEN": "${env:WS_TOKEN}"}}, [3]string{"vscode", "./.vscode/mcp.json", "project"}},
			},
			skipped: []skipView{{"Perplexity", "invalid", `Server "Perplexity": env.PERPLEXITY_API_KEY: ${input:perplexity-key} cannot be prompted for outside VS Code; put the value in the environment and use ${env:VAR}`}},
		},
		{
			name: "plain mcp.json",
			files: map[string]string{
				"./mcp.json": `{"mcpServers": {"plain": {"command": "plain-server", "timeout": "2500", "toolTimeoutMs": "90000"}}}`,
			},
			want: []server{
				{events.ServerConfig{Name: "plain", Command: "plain-server", TimeoutMs: ms(2500), ToolTimeoutMs: ms(90000)}, [3]string{"mcp-json", "./mcp.json", "project"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			for p, c := range tt.files {
				w.write(p, c)
			}
			for k, v := range tt.env {
				w.env[k] = v
			}
			d := w.load(func(o *Options) {
				if tt.goos != "" {
					o.GOOS = tt.goos
				}
			})
			if len(d.Errors) > 0 {
				t.Fatalf("errors: %v", d.Errors)
			}
			fill := strings.NewReplacer("{{PROJ}}", w.proj, "{{HOME}}", w.home)
			var want []Server
			for _, s := range tt.want {
				cfg := s.cfg.Clone()
				for i, a := range cfg.Args {
					cfg.Args[i] = fill.Replace(a)
				}
				cfg.Cwd = fill.Replace(cfg.Cwd)
				want = append(want, Server{Config: cfg, Source: w.src(s.src[0], s.src[1], s.src[2])})
			}
			if diff := cmp.Diff(want, d.Servers, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("servers mismatch (-want +got):\n%s", diff)
			}
			var wantSkips []skipView
			for _, s := range tt.skipped {
				s.Detail = fill.Replace(s.Detail)
				wantSkips = append(wantSkips, s)
			}
			if diff := cmp.Diff(wantSkips, skips(d)); diff != "" {
				t.Errorf("skipped mismatch (-want +got):\n%s", diff)
			}
			if len(d.Warnings) != len(tt.warnings) {
				t.Fatalf("warnings = %q, want %d matching %q", d.Warnings, len(tt.warnings), tt.warnings)
			}
			for i, sub := range tt.warnings {
				if !strings.Contains(d.Warnings[i], sub) {
					t.Errorf("warning %q does not contain %q", d.Warnings[i], sub)
				}
			}
		})
	}
}
