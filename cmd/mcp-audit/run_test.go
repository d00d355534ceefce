package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
)

func TestMain(m *testing.M) {
	fixture.RunIfChild()
	runAsAuditIfAsked()
	os.Exit(m.Run())
}

// writeConfig writes a native config file naming fixture servers.
func writeConfig(t *testing.T, servers map[string][]string) string {
	t.Helper()
	all := map[string]any{}
	for name, behaviours := range servers {
		cmd, args := fixturetest.Command(t, behaviours...)
		all[name] = map[string]any{"command": cmd, "args": args, "env": map[string]string{"API_TOKEN": "s3cr3t-value"}}
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": all})
	path := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunOnceJSONShape(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	cfg := writeConfig(t, map[string][]string{"good": {"only=echo"}, "bad": {"fail-init"}})
	db := filepath.Join(t.TempDir(), "e.db")
	// A gate longer than any start on a loaded machine: each server's
	// outcome is then its own (ready or failed), never "awaited".
	code, out, errOut := runCmd(t, "--db", db, "--json", "run", "--once", "--gate", "1m", "--cwd", t.TempDir(), "--config", cfg,
		"--call", "good/echo", "--args", `{"text":"ping"}`)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	var got struct {
		Session string `json:"session"`
		Gate    struct {
			ElapsedMs float64           `json:"elapsedMs"`
			Outcomes  map[string]string `json:"outcomes"`
		} `json:"gate"`
		Servers []struct {
			Name, Status, Transport string
			Source                  struct{ Provider, ProviderName, Path, Level string }
			Tools                   int
			ReadyMs                 *float64
			Error                   string
		} `json:"servers"`
		Tools []struct {
			Name, Server, Tool string
			Deferred           bool
		} `json:"tools"`
		Errors []struct{ Path, Error string } `json:"errors"`
		Call   struct {
			Server, Tool string
			IsError      bool
			Content      []map[string]any
		} `json:"call"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.Session == "" || got.Gate.Outcomes["good"] != "ready" || got.Gate.Outcomes["bad"] != "failed" {
		t.Errorf("gate = %+v", got.Gate)
	}
	if len(got.Servers) != 2 || got.Servers[1].Name != "good" || got.Servers[1].Status != "connected" || got.Servers[1].ReadyMs == nil || got.Servers[1].Source.Level != "native" {
		t.Errorf("servers = %+v", got.Servers)
	}
	if len(got.Tools) != 1 || got.Tools[0].Name != "mcp_good_echo" {
		t.Errorf("tools = %+v", got.Tools)
	}
	if len(got.Errors) != 1 || got.Errors[0].Path != "mcp:bad" {
		t.Errorf("errors = %+v", got.Errors)
	}
	if got.Call.Server != "good" || got.Call.IsError || len(got.Call.Content) == 0 || got.Call.Content[0]["text"] != "ping" {
		t.Errorf("call = %+v", got.Call)
	}
	// The store and the output never hold the env value.
	raw, _ := os.ReadFile(db)
	for _, f := range []string{db, db + "-wal"} {
		b, _ := os.ReadFile(f)
		raw = append(raw, b...)
	}
	if strings.Contains(string(raw), "s3cr3t-value") || strings.Contains(out, "s3cr3t-value") {
		t.Error("a secret reached the store or the output")
	}
	// The recorded session verifies.
	if code, out, _ := runCmd(t, "--db", db, "verify", "--all"); code != 0 {
		t.Errorf("verify: %d %s", code, out)
	}
}

func TestRunOnceFailsWhenNothingConnects(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	cfg := writeConfig(t, map[string][]string{"bad": {"fail-init"}})
	db := filepath.Join(t.TempDir(), "e.db")
	if code, out, _ := runCmd(t, "--db", db, "run", "--once", "--cwd", t.TempDir(), "--config", cfg); code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	if code, _, _ := runCmd(t, "--db", db, "run", "--once", "--config", filepath.Join(t.TempDir(), "missing.json")); code != 2 {
		t.Fatalf("missing --config: exit %d, want 2", code)
	}
}

// The one end-to-end test of the built binary: the README's demo command,
// then the inspection commands a new user would run.
func TestDemoBinaryEndToEnd(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "mcp-audit")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	db := filepath.Join(t.TempDir(), "events.db")
	run := func(args ...string) (int, string) {
		cmd := exec.CommandContext(t.Context(), bin, args...)
		cmd.Env = append(os.Environ(), "MCP_AUDIT_DB="+db, "NO_COLOR=1")
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, string(out)
	}
	code, out := run("demo")
	if code != 0 {
		t.Fatalf("demo: exit %d\n%s", code, out)
	}
	for _, want := range []string{"slow=awaited", "slow=deferred", "failing=failed", "flaky", "process exited", "ordering invariants hold", "ReloadCompleted"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	if code, out := run("verify", "--all"); code != 0 || !strings.Contains(out, "verified 2 session(s)") {
		t.Errorf("verify --all: %d %s", code, out)
	}
	svg := filepath.Join(t.TempDir(), "t.svg")
	if code, out := run("timeline", "last", "-o", svg); code != 0 || !strings.Contains(out, "4 server rows") {
		t.Errorf("timeline: %d %s", code, out)
	}
}
