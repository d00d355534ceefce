package validation

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/lifecycletest"
	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/manager"
)

// refusals connects each configuration in its own round and returns, by
// server, the error ConnectServers returned and the error its recorded
// ServerInvalid holds; it fails the test unless both match
// manager.ErrInvalidConfig and agree.
func refusals(t *testing.T, cfgs ...events.ServerConfig) map[string]string {
	t.Helper()
	e := lifecycletest.New(t, "validation")
	ctx := lifecycletest.Context(t)
	got := map[string]string{}
	for _, cfg := range cfgs {
		res := e.Connect(ctx, cfg)
		err := res.Errors[cfg.Name]
		if !errors.Is(err, manager.ErrInvalidConfig) {
			t.Fatalf("%s: error %v, want one matching ErrInvalidConfig", cfg.Name, err)
		}
		inv := lifecycletest.LastOf[*events.ServerInvalid](e, cfg.Name)
		if inv == nil || inv.Error != err.Error() {
			t.Fatalf("%s: recorded %+v, returned %q", cfg.Name, inv, err)
		}
		got[cfg.Name] = err.Error()
	}
	return got
}

// TestManagerRefusesWhatDiscoveryRefuses gives the manager each entry
// discovery found invalid, as discovery mapped it, and checks that both
// say the same.
func TestManagerRefusesWhatDiscoveryRefuses(t *testing.T) {
	home := t.TempDir()
	native := filepath.Join(home, ".config", "mcplife", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(native), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(native, []byte(`{"mcpServers": {
  "both": {"command": "x", "url": "https://h/mcp"},
  "ws": {"type": "ws", "url": "ws://h/mcp"},
  "no-url": {"type": "sse"},
  "ftp": {"url": "ftp://h/mcp"},
  "no-host": {"url": "http:///mcp"},
  "bad name": {"command": "x"},
  "no-command": {"type": "stdio"}
}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := loader.LoadConfigs(t.Context(), loader.Options{Cwd: t.TempDir(), Home: home, Env: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	var cfgs []events.ServerConfig
	for _, s := range d.Skipped {
		if s.Reason == events.SkipInvalid {
			want[s.Name] = s.Detail
			cfgs = append(cfgs, s.Config)
		}
	}
	if len(want) != 7 {
		t.Fatalf("discovery refused %d entries, want 7: %+v", len(want), d.Skipped)
	}
	if diff := cmp.Diff(want, refusals(t, cfgs...)); diff != "" {
		t.Errorf("messages mismatch (-discovery +manager):\n%s", diff)
	}
}

// TestNegativeLimitsRefused: a negative timeout, tool timeout or output
// budget in a configuration given directly is refused by the manager with
// the message of the validation discovery applies, never taken as no
// limit (0 says that).
func TestNegativeLimitsRefused(t *testing.T) {
	neg := func(v int64) *int64 { return &v }
	cfgs := []events.ServerConfig{
		{Name: "timeout", Command: "x", TimeoutMs: neg(-1)},
		{Name: "tool-timeout", Command: "x", ToolTimeoutMs: neg(-1000)},
		{Name: "budget", Command: "x", MaxOutputBytes: neg(-5)},
		{Name: "all", URL: "https://h/mcp", TimeoutMs: neg(-1), ToolTimeoutMs: neg(-1), MaxOutputBytes: neg(-1)},
	}
	want := map[string]string{
		"timeout":      `Server "timeout": "timeout" must not be negative`,
		"tool-timeout": `Server "tool-timeout": "toolTimeoutMs" must not be negative`,
		"budget":       `Server "budget": "maxOutputBytes" must not be negative`,
		"all": `Server "all": "timeout" must not be negative; ` +
			`Server "all": "toolTimeoutMs" must not be negative; ` +
			`Server "all": "maxOutputBytes" must not be negative`,
	}
	for _, cfg := range cfgs {
		if err := cfg.Validate(); err == nil || err.Error() != want[cfg.Name] {
			t.Errorf("%s: Validate = %v, want %q", cfg.Name, err, want[cfg.Name])
		}
	}
	if diff := cmp.Diff(want, refusals(t, cfgs...)); diff != "" {
		t.Errorf("manager's messages mismatch (-want +got):\n%s", diff)
	}
}
