package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/internal/peers"
)

// asAuditEnv makes the test binary run as mcp-audit (see
// runAsAuditIfAsked), so that a test can start `mcp-audit mock` as a
// stdio server.
const asAuditEnv = "MCPLIFE_TEST_AS_MCP_AUDIT"

func runAsAuditIfAsked() {
	if os.Getenv(asAuditEnv) != "1" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// mockCommand returns the command line of `mcp-audit ARGS`.
func mockCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), asAuditEnv+"=1")
	return cmd
}

const (
	mockToolDef = `{"name":"lookup","title":"Look up","description":"Looks a thing up.","inputSchema":{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"number"}},"required":["q"]},"annotations":{"readOnlyHint":true,"openWorldHint":false},"icons":[{"src":"https://example.com/lookup.png","mimeType":"image/png"}]}`
)

// recordForMock runs a session against a fixture server whose transcript
// is kept, calling lookup once, and returns the database.
func recordForMock(t *testing.T) string {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	cmd, args := fixturetest.Command(t, "only=echo", "tool-def="+mockToolDef, "resources=2", "resource-templates", "prompts=1", "instructions=Use lookup for things.", "name=recorded-server", "version=1.2.3")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"rec": map[string]any{"command": cmd, "args": args, "record": "transcript"}}})
	cfg := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(cfg, b, 0o600)
	db := filepath.Join(t.TempDir(), "e.db")
	code, out, errOut := runCmd(t, "--db", db, "run", "--once", "--cwd", t.TempDir(), "--config", cfg,
		"--call", "rec/lookup", "--args", `{"q":"moon","n":1}`)
	if code != 0 {
		t.Fatalf("record: exit %d\n%s\n%s", code, out, errOut)
	}
	return db
}

// The mock serves what the recorded server listed, to mcplife's own
// client (mcp-audit run, through the manager, with the mock as a stdio
// server) and to the go-sdk's: the same tools with their schemas,
// annotations and icons, resources, templates, prompts, instructions.
// A call recorded in the transcript gets its recorded result, whatever
// the order of its arguments' keys; any other an error result.
func TestMockServesRecording(t *testing.T) {
	db := recordForMock(t)

	// The go-sdk's client sees the recorded listing.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: mockCommand(t, "--db", db, "mock", "last", "--server", "rec")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	init := cs.InitializeResult()
	if init.Instructions != "Use lookup for things." || init.ServerInfo.Name != "recorded-server" || init.ServerInfo.Version != "1.2.3" {
		t.Errorf("initialize: instructions %q, server %+v", init.Instructions, init.ServerInfo)
	}
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var lookup *mcp.Tool
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.Name == "lookup" {
			lookup = tl
		}
	}
	if diff := cmp.Diff([]string{"echo", "lookup"}, names); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}
	got, _ := json.Marshal(lookup)
	var wantV, gotV any
	json.Unmarshal([]byte(mockToolDef), &wantV)
	json.Unmarshal(got, &gotV)
	// The go-sdk always sends idempotentHint, whose default is false.
	if a, ok := gotV.(map[string]any)["annotations"].(map[string]any); ok && a["idempotentHint"] == false {
		delete(a, "idempotentHint")
	}
	if diff := cmp.Diff(wantV, gotV); diff != "" {
		t.Errorf("lookup as served (-recorded +served):\n%s", diff)
	}
	res, err := cs.ListResources(t.Context(), nil)
	if err != nil || len(res.Resources) != 2 {
		t.Errorf("resources %+v, %v", res, err)
	}
	tpls, err := cs.ListResourceTemplates(t.Context(), nil)
	if err != nil || len(tpls.ResourceTemplates) != 1 {
		t.Errorf("templates %+v, %v", tpls, err)
	}
	prompts, err := cs.ListPrompts(t.Context(), nil)
	if err != nil || len(prompts.Prompts) != 1 {
		t.Errorf("prompts %+v, %v", prompts, err)
	}
	call, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "lookup", Arguments: map[string]any{"n": 1, "q": "moon"}})
	if err != nil || call.IsError || !strings.Contains(callText(call), "moon") {
		t.Errorf("recorded call: %+v, %v", call, err)
	}
	call, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "lookup", Arguments: map[string]any{"q": "sun"}})
	if err != nil || !call.IsError || !strings.Contains(callText(call), "no recording matches") {
		t.Errorf("unrecorded call: %+v, %v", call, err)
	}

	// mcp-audit run (the manager) with the mock as a stdio server, in
	// both protocol eras: the default offer, the oldest revision and the
	// stateless one.
	mock := mockCommand(t, "--db", db, "mock", "last", "--server", "rec")
	for _, pv := range []string{"", "2024-11-05", "2026-07-28"} {
		entry := map[string]any{"command": mock.Path, "args": mock.Args[1:], "env": map[string]string{asAuditEnv: "1"}}
		if pv != "" {
			entry["protocolVersion"] = pv
		}
		b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"offline": entry}})
		cfg := filepath.Join(t.TempDir(), "servers.json")
		os.WriteFile(cfg, b, 0o600)
		db2 := filepath.Join(t.TempDir(), "e2.db")
		code, out, errOut := runCmd(t, "--db", db2, "--json", "run", "--once", "--cwd", t.TempDir(), "--config", cfg,
			"--call", "offline/lookup", "--args", `{ "n": 1, "q": "moon" }`)
		if code != 0 || !strings.Contains(out, `"isError": false`) || !strings.Contains(out, "moon") {
			t.Errorf("protocol %q: run against the mock: exit %d\n%s\n%s", pv, code, out, errOut)
		}
		if _, rep, _ := runCmd(t, "--db", db2, "--json", "replay", "last"); pv != "" && !strings.Contains(rep, `"protocolVersion":"`+pv+`"`) {
			t.Errorf("protocol %q not negotiated:\n%s", pv, rep)
		}
		code, out, errOut = runCmd(t, "--db", db2, "--json", "run", "--once", "--cwd", t.TempDir(), "--config", cfg,
			"--call", "offline/lookup", "--args", `{"q":"sun"}`)
		if !strings.Contains(out, `"isError": true`) || !strings.Contains(out, "no recording matches") {
			t.Errorf("protocol %q: unrecorded call through run: exit %d\n%s\n%s", pv, code, out, errOut)
		}
	}
}

func callText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// tsView is what testdata/mockclient.mjs prints.
type tsView struct {
	ServerInfo   struct{ Name, Version string }
	Instructions string
	Tools        []map[string]any
	Resources    []map[string]any
	Templates    []map[string]any
	Prompts      []map[string]any
	Recorded     mcpResultView
	Unrecorded   mcpResultView
}

type mcpResultView struct {
	IsError bool `json:"isError"`
	Content []struct{ Text string }
}

// runTSClient runs the TypeScript SDK's client script with args.
func runTSClient(t *testing.T, args ...string) tsView {
	t.Helper()
	root := peers.RepoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Fatalf("the MCP TypeScript SDK is not installed (run npm ci in %s): %v", root, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), node, append([]string{filepath.Join("testdata", "mockclient.mjs")}, args...)...)
	cmd.Env = append(os.Environ(), asAuditEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("TypeScript client: %v\n%s", err, stderr.String())
	}
	var v tsView
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("TypeScript client output: %v\n%s", err, out)
	}
	return v
}

func checkTSView(t *testing.T, how string, v tsView) {
	t.Helper()
	if v.ServerInfo.Name != "recorded-server" || v.Instructions != "Use lookup for things." {
		t.Errorf("%s: server %+v, instructions %q", how, v.ServerInfo, v.Instructions)
	}
	var lookup map[string]any
	for _, tl := range v.Tools {
		if tl["name"] == "lookup" {
			lookup = tl
		}
	}
	if len(v.Tools) != 2 || lookup == nil || lookup["title"] != "Look up" || lookup["icons"] == nil ||
		lookup["annotations"].(map[string]any)["readOnlyHint"] != true || lookup["inputSchema"].(map[string]any)["required"] == nil {
		t.Errorf("%s: tools %v", how, v.Tools)
	}
	if len(v.Resources) != 2 || len(v.Templates) != 1 || len(v.Prompts) != 1 {
		t.Errorf("%s: resources %v templates %v prompts %v", how, v.Resources, v.Templates, v.Prompts)
	}
	if v.Recorded.IsError || len(v.Recorded.Content) == 0 || !strings.Contains(v.Recorded.Content[0].Text, "moon") {
		t.Errorf("%s: recorded call %+v", how, v.Recorded)
	}
	if !v.Unrecorded.IsError || len(v.Unrecorded.Content) == 0 || !strings.Contains(v.Unrecorded.Content[0].Text, "no recording matches") {
		t.Errorf("%s: unrecorded call %+v", how, v.Unrecorded)
	}
}

// The MCP TypeScript SDK's client sees the recording through the mock,
// over stdio and over streamable HTTP.
func TestMockWithTypeScriptClient(t *testing.T) {
	db := recordForMock(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	checkTSView(t, "stdio", runTSClient(t, "stdio", exe, "--db", db, "mock", "last", "--server", "rec"))

	mock := mockCommand(t, "--db", db, "mock", "last", "--server", "rec", "--http", "127.0.0.1:0")
	stderr, err := mock.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := mock.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		mock.Process.Signal(syscall.SIGTERM)
		mock.Wait()
	}()
	line, err := bufio.NewReader(stderr).ReadString('\n')
	_, url, ok := strings.Cut(strings.TrimSpace(line), " at ")
	if err != nil || !ok {
		t.Fatalf("mock --http said %q, %v", line, err)
	}
	checkTSView(t, "http", runTSClient(t, "http", url))
}
