package manager

import (
	"slices"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/projector"
)

// loggingServer returns the config of a stdio fixture server whose stdout
// also carries log lines, as servers that log to stdout have: a
// bracketed log line and a JSON log record (pino's format) before the
// server starts, and both again after every message it sends.
func loggingServer(t *testing.T, name string, behaviours ...string) events.ServerConfig {
	t.Helper()
	cmd, args := fixturetest.Command(t, behaviours...)
	const script = `
printf '%s\n' '[INFO] Starting MCP server' '{"level":30,"time":1700000000000,"pid":1,"hostname":"h","msg":"starting"}'
"$@" | while IFS= read -r line; do
	printf '%s\n' "$line" '[INFO] handled a message' '{"level":30,"time":1700000000001,"msg":"handled"}' '[1,2,3]'
done`
	return events.ServerConfig{Name: name, Command: "sh", Args: append([]string{"-c", script, "sh", cmd}, args...)}
}

// TestStdoutLogLinesAreSkipped: log lines on a stdio server's stdout,
// before and between its messages, neither end the connection nor disturb
// the calls; they show in the server's stderr excerpt.
func TestStdoutLogLinesAreSkipped(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{loggingServer(t, "chatty", "only=echo,add")}, nil)
	if err != nil || len(res.Errors) > 0 {
		t.Fatal(res.Errors, err)
	}
	for _, text := range []string{"one", "two", "three"} {
		r, err := tool(t, e.m, "mcp_chatty_echo").Call(ctx, map[string]any{"text": text})
		if err != nil || r.Result.IsError || r.Text() != text {
			t.Fatalf("echo %s: %+v %v", text, r, err)
		}
	}
	if r, err := tool(t, e.m, "mcp_chatty_add").Call(ctx, map[string]any{"a": 2, "b": 3}); err != nil || r.Text() != "5" {
		t.Fatalf("add: %+v %v", r, err)
	}
	if st := e.m.Status("chatty"); st != projector.StatusConnected {
		t.Fatalf("status %s", st)
	}
	e.m.mu.Lock()
	tail := e.m.servers["chatty"].conn.proc.StderrTail()
	e.m.mu.Unlock()
	for _, want := range []string{
		"[mcplife: skipped non-JSON-RPC stdout line 1: [INFO] Starting MCP server]\n",
		`[mcplife: skipped non-JSON-RPC stdout line 2: {"level":30,"time":1700000000000,"pid":1,"hostname":"h","msg":"starting"}]`,
		`: {"level":30,"time":1700000000001,"msg":"handled"}]`,
		": [1,2,3]]",
	} {
		contains(t, "stderr", tail, want)
	}
	if err := e.m.DisconnectAll(ctx); err != nil {
		t.Fatal(err)
	}
	if types := e.serverTypes("s1", "chatty"); slices.Contains(types, events.TypeConnectFailed) || lastIndex(types, "Disconnected/requested") != len(types)-1 {
		t.Fatalf("events %v", types)
	}
}

// TestSkippedStdoutLinesInConnectError: a server that fails at
// initialize after logging to stdout has the skipped lines in the stderr
// excerpt of its connect error.
func TestSkippedStdoutLinesInConnectError(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{loggingServer(t, "broken", "fail-init")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cerr := res.Errors["broken"]
	if cerr == nil {
		t.Fatal("connected")
	}
	contains(t, "connect error", cerr.Error(), "stderr: [mcplife: skipped non-JSON-RPC stdout line 1: [INFO] Starting MCP server]")
}
