// Package conformance runs the official MCP conformance suite's client
// scenarios against mcp-audit: the suite starts a test server for each
// scenario and runs a client command with the server's URL appended; the
// command here is a small wrapper that writes a config naming that server
// and runs `mcp-audit run --once`, calling the tool the scenario expects.
package conformance

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/internal/peers"
)

// scenarios are the suite's client scenarios this test runs, with the
// tool call each expects (none for initialize). `conformance list
// --client` names them; the auth/* family joins when mcplife speaks OAuth.
var scenarios = map[string]struct{ tool, args string }{
	"initialize":                          {},
	"tools_call":                          {"c/add_numbers", `{"a":2,"b":3}`},
	"elicitation-sep1034-client-defaults": {"c/test_client_elicitation_defaults", "{}"},
	"sse-retry":                           {"c/test_reconnection", "{}"},
}

// wrapper is the client command: the suite appends the server's URL.
const wrapper = `#!/bin/sh
set -e
url=$(eval echo "\${$#}")
dir=$(mktemp -d)
printf '{"mcpServers":{"c":{"type":"http","url":"%s"}}}' "$url" >"$dir/config.json"
set -- --db "$dir/events.db" run --once --elicit accept-defaults --cwd "$dir" --no-project-config --config "$dir/config.json"
if [ -n "$CALL_TOOL" ]; then
	set -- "$@" --call "$CALL_TOOL" --args "$CALL_ARGS"
fi
exec "$MCP_AUDIT" "$@"
`

func TestClientScenarios(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("the wrapper is a POSIX shell script")
	}
	node, suite := peers.Conformance(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "mcp-audit")
	build := exec.Command("go", "build", "-o", bin, "github.com/mcplife/mcplife/cmd/mcp-audit")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build mcp-audit: %v\n%s", err, out)
	}
	wrap := filepath.Join(dir, "client.sh")
	if err := os.WriteFile(wrap, []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, call := range scenarios {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(node, suite, "client", "--scenario", name, "--command", wrap, "-o", t.TempDir())
			cmd.Env = append(os.Environ(), "MCP_AUDIT="+bin, "CALL_TOOL="+call.tool, "CALL_ARGS="+call.args, "HOME="+t.TempDir())
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "OVERALL: PASSED") {
				t.Fatalf("scenario %s: %v\n%s", name, err, out)
			}
		})
	}
}
