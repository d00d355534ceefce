package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
)

// writeServers writes a native config file with the given server
// entries (command, args) as they are.
func writeServers(t *testing.T, servers map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"mcpServers": servers})
	path := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// fixtureAs returns a server entry that runs a fixture server through a
// link to the test binary named name (say "npx"), so the command looks
// like that program.
func fixtureAs(t *testing.T, name string, behaviours ...string) map[string]any {
	t.Helper()
	cmd, args := fixturetest.Command(t, behaviours...)
	link := filepath.Join(t.TempDir(), name)
	if err := os.Symlink(cmd, link); err != nil {
		t.Fatal(err)
	}
	return map[string]any{"command": link, "args": args}
}

func fixtureServer(t *testing.T, behaviours ...string) map[string]any {
	t.Helper()
	cmd, args := fixturetest.Command(t, behaviours...)
	return map[string]any{"command": cmd, "args": args}
}

// While the gate waits, run prints a line per server as it connects or
// fails, and "installing…" for a server started by a package runner that
// is still starting; the held server's line follows once it connects.
func TestRunShowsProgressWhileTheGateWaits(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	hold := fixturetest.NewGate(t)
	cfg := writeServers(t, map[string]any{
		"good": fixtureServer(t, "only=echo"),
		"bad":  fixtureServer(t, "fail-init"),
		"pkg":  fixtureAs(t, "npx", "only=echo,add", hold.Arg("block-init-until")),
	})
	db := filepath.Join(t.TempDir(), "e.db")
	pr, pw := io.Pipe()
	var stdout bytes.Buffer
	done := make(chan int, 1)
	go func() {
		// A gate longer than the test: it returns when pkg is released.
		g := &globals{stdout: &stdout, stderr: pw, forceProgress: true, installAfter: time.Millisecond}
		done <- runWith(t.Context(), []string{"--db", db, "run", "--once", "--gate", "10m", "--cwd", t.TempDir(), "--config", cfg}, g)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	var seen []string
	want := map[string]bool{"connecting": false, "good": false, "bad": false, "pkg installing": false}
	for lines.Scan() {
		l := lines.Text()
		seen = append(seen, l)
		f := strings.Fields(l)
		switch {
		case strings.HasPrefix(l, "connecting 3 servers (startup gate 10m0s)…"):
			want["connecting"] = true
		case len(f) > 1 && f[0] == "good" && strings.HasPrefix(l, "  good  connected, 1 tool after "):
			want["good"] = true
		case len(f) > 1 && f[0] == "bad" && strings.Contains(l, "failed after ") && strings.Contains(l, "fail-init") && !strings.Contains(l, `MCP server "bad"`):
			want["bad"] = true
		case len(f) > 1 && f[0] == "pkg" && strings.Contains(l, "installing… (npx is still starting after 1.0ms"):
			want["pkg installing"] = true
		}
		if want["good"] && want["bad"] && want["pkg installing"] {
			break
		}
	}
	if !want["connecting"] || !want["good"] || !want["bad"] || !want["pkg installing"] {
		t.Fatalf("progress %v:\n%s", want, strings.Join(seen, "\n"))
	}
	hold.Release()
	var rest []string
	for lines.Scan() {
		rest = append(rest, lines.Text())
	}
	if code := <-done; code != 0 {
		t.Fatalf("exit %d\n%s", code, stdout.String())
	}
	if len(rest) != 1 || !strings.HasPrefix(rest[0], "  pkg   connected, 2 tools after ") {
		t.Errorf("after the release, stderr %q", rest)
	}
	// stdout is what it was: the session line, then the gate line.
	out := stdout.String()
	if !strings.HasPrefix(out, "session ") || !strings.Contains(out, "startup gate 10m0s returned after") || strings.Contains(out, "installing") {
		t.Errorf("stdout:\n%s", out)
	}
}

// Progress is for a person at a terminal: with --json, or when stderr is
// no terminal, stderr stays empty.
func TestRunShowsNoProgressOffATerminalOrWithJSON(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	cfg := writeServers(t, map[string]any{"good": fixtureServer(t, "only=echo")})
	for _, forced := range []bool{false, true} {
		db := filepath.Join(t.TempDir(), "e.db")
		args := []string{"--db", db, "run", "--once", "--gate", "1m", "--cwd", t.TempDir(), "--config", cfg}
		if forced {
			args = append([]string{"--json"}, args...)
		}
		var out, errb bytes.Buffer
		g := &globals{stdout: &out, stderr: &errb, forceProgress: forced, installAfter: time.Millisecond}
		if code := runWith(t.Context(), args, g); code != 0 || errb.Len() != 0 {
			t.Errorf("forced %t: exit %d, stderr %q", forced, code, errb.String())
		}
		if forced && !json.Valid(out.Bytes()) {
			t.Errorf("--json output is no longer one JSON document:\n%s", out.String())
		}
	}
}

func TestPackageRunner(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		args []string
		want string
	}{
		{"npx", []string{"-y", "@modelcontextprotocol/server-everything"}, "npx"},
		{"/usr/local/bin/uvx", []string{"mcp-server-fetch"}, "uvx"},
		{"bunx", nil, "bunx"},
		{"pnpm", []string{"dlx", "x"}, "pnpm dlx"},
		{"pnpm", []string{"run", "x"}, ""},
		{"yarn", []string{"dlx", "x"}, "yarn dlx"},
		{"npm", []string{"exec", "x"}, "npm exec"},
		{"bun", []string{"x", "x"}, "bun x"},
		{"pipx", []string{"run", "x"}, "pipx run"},
		{"uv", []string{"tool", "run", "x"}, "uv tool run"},
		{"C:\\node\\npx.cmd", nil, "npx"},
		{"cmd", []string{"/c", "npx", "-y", "x"}, "npx"},
		{"docker", []string{"run", "-i", "mcp/fetch"}, "docker run"},
		{"node", []string{"server.js"}, ""},
		{"python", []string{"-m", "server"}, ""},
	} {
		if got := packageRunner(c.cmd, c.args); got != c.want {
			t.Errorf("packageRunner(%q, %q) = %q, want %q", c.cmd, c.args, got, c.want)
		}
	}
}
