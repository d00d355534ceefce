// Package conformance runs the official MCP conformance suite's client
// scenarios against mcp-audit: the suite starts a test server for each
// scenario and runs a client command with the server's URL appended; the
// command here is a small wrapper that writes a config naming that server
// and runs `mcp-audit run --once`, calling the tool the scenario expects;
// for the auth/* scenarios it logs in with `mcp-audit auth login` first.
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
// --client` names them.
var scenarios = map[string]struct{ tool, args string }{
	"initialize":                          {},
	"tools_call":                          {"c/add_numbers", `{"a":2,"b":3}`},
	"elicitation-sep1034-client-defaults": {"c/test_client_elicitation_defaults", "{}"},
	"sse-retry":                           {"c/test_reconnection", "{}"},
}

// authScenarios are the suite's auth/* client scenarios. Each logs in with
// `mcp-audit auth login` (the browser being a command that follows the
// authorization server's redirects to the loopback listener), then runs
// `run --once --login --call c/test-tool` on the stored token; --login
// lets the run step up when a call needs more scopes. Scenarios where the
// client must refuse (resource mismatch) or stop retrying (retry limit)
// let the client fail.
var authScenarios = []string{
	"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
	"auth/basic-cimd",
	"auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined",
	"auth/scope-step-up", "auth/scope-retry-limit",
	"auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
	"auth/resource-mismatch", "auth/pre-registration",
	"auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
	"auth/client-credentials-jwt", "auth/client-credentials-basic",
}

// wrapper is the client command: the suite appends the server's URL.
// With AUTH set it writes the server's oauth settings from the
// scenario's context (MCP_CONFORMANCE_CONTEXT: a pre-registered client,
// client credentials, a private key), logs in, and runs with the stored
// token; every token lives in the scenario's own $XDG_CONFIG_HOME.
const wrapper = `#!/bin/sh
set -e
url=$(eval echo "\${$#}")
dir=$(mktemp -d)
export XDG_CONFIG_HOME="$dir/config"
if [ -n "$AUTH" ]; then
	node "$HELPER" config "$url" >"$dir/config.json"
	export MCPLIFE_BROWSER="node $HELPER follow"
	"$MCP_AUDIT" --db "$dir/events.db" auth login c --cwd "$dir" --no-project-config --config "$dir/config.json" || true
	set -- --db "$dir/events.db" run --once --login --cwd "$dir" --no-project-config --config "$dir/config.json"
else
	printf '{"mcpServers":{"c":{"type":"http","url":"%s"}}}' "$url" >"$dir/config.json"
	set -- --db "$dir/events.db" run --once --elicit accept-defaults --cwd "$dir" --no-project-config --config "$dir/config.json"
fi
if [ -n "$CALL_TOOL" ]; then
	set -- "$@" --call "$CALL_TOOL" --args "$CALL_ARGS"
fi
exec "$MCP_AUDIT" "$@"
`

// helper is the wrapper's node script: "follow URL" is the browser (it
// fetches the authorization URL and follows its redirects to the
// loopback listener); "config URL" prints the config of the scenario's
// server. The Client ID Metadata Document URL is the one the suite's
// authorization server expects where it supports such documents.
const helper = `const [mode, arg] = process.argv.slice(2);
if (mode === 'follow') {
  fetch(arg, { redirect: 'follow' }).then((r) => r.text()).then(
    () => process.exit(0),
    (e) => { console.error(e.message); process.exit(1); });
} else if (mode === 'config') {
  const ctx = process.env.MCP_CONFORMANCE_CONTEXT ? JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT) : {};
  const oauth = { clientMetadataUrl: 'https://conformance-test.local/client-metadata.json' };
  if (ctx.client_id) oauth.clientId = ctx.client_id;
  if (ctx.client_secret) oauth.clientSecret = ctx.client_secret;
  if (ctx.private_key_pem) { oauth.privateKey = ctx.private_key_pem; oauth.signingAlgorithm = ctx.signing_algorithm; }
  if ((process.env.MCP_CONFORMANCE_SCENARIO || '').startsWith('auth/client-credentials')) oauth.grant = 'client_credentials';
  process.stdout.write(JSON.stringify({ mcpServers: { c: { type: 'http', url: arg, oauth } } }));
}
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
	help := filepath.Join(dir, "helper.js")
	if err := os.WriteFile(help, []byte(helper), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, name string, env ...string) {
		cmd := exec.Command(node, suite, "client", "--scenario", name, "--command", wrap, "-o", t.TempDir())
		cmd.Env = append(os.Environ(), append([]string{"MCP_AUDIT=" + bin, "HELPER=" + help, "HOME=" + t.TempDir(), "PATH=" + filepath.Dir(node) + ":" + os.Getenv("PATH")}, env...)...)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "OVERALL: PASSED") {
			t.Fatalf("scenario %s: %v\n%s", name, err, out)
		}
	}
	for name, call := range scenarios {
		t.Run(name, func(t *testing.T) { run(t, name, "CALL_TOOL="+call.tool, "CALL_ARGS="+call.args) })
	}
	for _, name := range authScenarios {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // after the timing-sensitive sse-retry, which runs alone
			run(t, name, "AUTH=1", "CALL_TOOL=c/test-tool", "CALL_ARGS={}")
		})
	}
}
