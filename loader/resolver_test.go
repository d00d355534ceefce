//go:build unix

package loader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcplife/mcplife/events"
)

func TestResolveValues(t *testing.T) {
	r := NewResolver(MapEnv(map[string]string{"TOKEN": "tok", "EMPTY": "", "HOST": "h"}), nil)
	tests := []struct {
		in, want string
		err      error
	}{
		{"literal value", "literal value", nil},
		{"TOKEN", "TOKEN", nil}, // a bare name is literal; discovery writes ${TOKEN:-TOKEN} where it is not
		{"${TOKEN:-TOKEN}", "tok", nil},
		{"${EMPTY:-EMPTY}", "EMPTY", nil},
		{"${UNSET_NAME:-UNSET_NAME}", "UNSET_NAME", nil},
		{"UNSET_NAME", "UNSET_NAME", nil},
		{"Bearer ${TOKEN}", "Bearer tok", nil},
		{"${env:HOST}:${PORT:-8080}", "h:8080", nil},
		{"${EMPTY:-d}", "d", nil},
		{"x${EMPTY}y", "xy", nil},
		{"Bearer ${MISSING}", "", ErrUnsetVariable},
		{"${input:id}", "${input:id}", nil},
		{"!printf '  out \\n'", "out", nil},
		{"!true", "", ErrEmptyOutput},
		{"!echo leaked-output; exit 3", "", ErrCommandFailed},
		{"!", "", ErrCommandFailed},
	}
	for _, tt := range tests {
		got, err := r.Resolve(context.Background(), tt.in)
		if !errors.Is(err, tt.err) || got != tt.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.err)
		}
		if err != nil && (strings.Contains(err.Error(), "leaked-output") || strings.Contains(err.Error(), "echo")) {
			t.Errorf("error %q quotes the command or its output", err)
		}
	}
}

// fifo creates a named pipe: a command reading it blocks until the test
// writes, and the test's open for writing blocks until the command reads.
func fifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return p
}

func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func TestResolveCommandTimeout(t *testing.T) {
	block := fifo(t)
	r := NewResolver(nil, &ResolverOptions{CommandTimeout: 50 * time.Millisecond})
	_, err := r.Resolve(context.Background(), "!cat "+block)
	if !errors.Is(err, ErrCommandTimeout) {
		t.Fatalf("err = %v, want timeout", err)
	}
	if !strings.Contains(err.Error(), "50ms") {
		t.Errorf("error %q does not name the limit", err)
	}
}

func TestResolveCommandCachedAndSingleFlight(t *testing.T) {
	block := fifo(t)
	runs := filepath.Join(t.TempDir(), "runs")
	value := fmt.Sprintf("!echo run >> %s; cat %s", runs, block)
	r := NewResolver(nil, nil)

	const callers = 8
	var wg sync.WaitGroup
	results := make([]string, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() { results[i], errs[i] = r.Resolve(context.Background(), value) })
	}
	// Opening the pipe for writing waits until the one command reads it.
	f, err := os.OpenFile(block, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "shared-value")
	f.Close()
	wg.Wait()
	for i := range callers {
		if errs[i] != nil || results[i] != "shared-value" {
			t.Errorf("caller %d: %q, %v", i, results[i], errs[i])
		}
	}
	// Cached: resolving again does not run the command. (Were it run, it
	// would block on the pipe until this bound and fail.)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if v, err := r.Resolve(ctx, value); err != nil || v != "shared-value" {
		t.Errorf("cached: %q, %v", v, err)
	}
	if n := lines(t, runs); n != 1 {
		t.Errorf("command ran %d times, want 1", n)
	}
}

func TestResolveFailureIsNotCached(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	flag := filepath.Join(dir, "ready")
	value := fmt.Sprintf("!echo run >> %s; cat %s", runs, flag)
	r := NewResolver(nil, nil)
	if _, err := r.Resolve(context.Background(), value); !errors.Is(err, ErrCommandFailed) {
		t.Fatalf("first: %v", err)
	}
	if err := os.WriteFile(flag, []byte("now-ok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if v, err := r.Resolve(context.Background(), value); err != nil || v != "now-ok" {
		t.Fatalf("second: %q, %v", v, err)
	}
	if n := lines(t, runs); n != 2 {
		t.Errorf("ran %d times, want 2", n)
	}
}

func TestResolveCancelledLeaderLetsWaiterRun(t *testing.T) {
	block := fifo(t)
	runs := filepath.Join(t.TempDir(), "runs")
	value := fmt.Sprintf("!echo run >> %s; cat %s", runs, block)
	r := NewResolver(nil, nil)

	ctx, cancel := context.WithCancel(context.Background())
	leaderDone := make(chan error, 1)
	go func() {
		_, err := r.Resolve(ctx, value)
		leaderDone <- err
	}()
	// Wait until the leader's command reads the pipe, then cancel it
	// (leaving the pipe open so the command stays blocked until killed).
	f, err := os.OpenFile(block, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-leaderDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader: %v", err)
	}
	f.Close()
	// Nothing was cached: a later caller runs the command itself.
	got := make(chan string, 1)
	go func() {
		v, _ := r.Resolve(context.Background(), value)
		got <- v
	}()
	f, err = os.OpenFile(block, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "second")
	f.Close()
	if v := <-got; v != "second" {
		t.Errorf("second caller got %q", v)
	}
	if n := lines(t, runs); n != 2 {
		t.Errorf("ran %d times, want 2", n)
	}
}

func TestResolveConfigOmitsFailedEntries(t *testing.T) {
	r := NewResolver(MapEnv(map[string]string{"TOKEN": "tok"}), nil)
	cfg := events.ServerConfig{
		Name:    "srv",
		Command: "x",
		Env:     map[string]string{"A": "${TOKEN}", "B": "!exit 1", "C": "lit"},
		Headers: map[string]string{"Authorization": "Bearer ${TOKEN}", "X-Missing": "${NOPE}"},
	}
	got, err := r.ResolveConfig(context.Background(), cfg)
	want := cfg.Clone()
	want.Env = map[string]string{"A": "tok", "C": "lit"}
	want.Headers = map[string]string{"Authorization": "Bearer tok"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	if cfg.Env["A"] != "${TOKEN}" {
		t.Error("the input configuration was modified")
	}
	msg := fmt.Sprint(err)
	for _, part := range []string{`server "srv": env "B" omitted: shell command failed`, `server "srv": header "X-Missing" omitted: environment variable is not set: NOPE`} {
		if !strings.Contains(msg, part) {
			t.Errorf("error %q lacks %q", msg, part)
		}
	}
	if !errors.Is(err, ErrCommandFailed) || !errors.Is(err, ErrUnsetVariable) {
		t.Errorf("error %v does not wrap the causes", err)
	}
}

// TestTrustBoundary writes project-level files of every format whose
// commands and "!command" values would create marker files. With project
// configs disabled, neither discovery nor resolving everything discovery
// returns may create any of them.
func TestTrustBoundary(t *testing.T) {
	w := newWorld(t)
	markers := t.TempDir()
	m := func(name string) string { return filepath.Join(markers, name) }
	w.write("./.mcp.json", fmt.Sprintf(`{"mcpServers": {"evil": {"command": "sh", "args": ["-c", "touch %s"], "env": {"X": "!touch %s"}}}}`, m("claude-cmd"), m("claude-env")))
	w.write("./.mcplife/mcp.json", fmt.Sprintf(`{"mcpServers": {"evil-native": {"command": "touch", "args": [%q], "env": {"X": "!touch %s"}}}, "enabledServers": ["evil-native"]}`, m("native-cmd"), m("native-env")))
	w.write("./.codex/config.toml", fmt.Sprintf("[mcp_servers.evil-codex]\ncommand = \"touch\"\nargs = [%q]\nenv = { X = \"!touch %s\" }\n", m("codex-cmd"), m("codex-env")))
	w.write("./.gemini/settings.json", fmt.Sprintf(`{"mcpServers": {"evil-gemini": {"command": "touch", "args": [%q], "env": {"X": "!touch %s"}}}}`, m("gemini-cmd"), m("gemini-env")))
	w.write("./opencode.json", fmt.Sprintf(`{"mcp": {"evil-oc": {"type": "local", "command": ["touch", %q], "environment": {"X": "!touch %s"}}}}`, m("oc-cmd"), m("oc-env")))
	w.write("./.cursor/mcp.json", fmt.Sprintf(`{"mcpServers": {"evil-cursor": {"command": "touch", "args": [%q], "env": {"X": "!touch %s"}}}}`, m("cursor-cmd"), m("cursor-env")))
	w.write("./.windsurf/mcp_config.json", fmt.Sprintf(`{"mcpServers": {"evil-ws": {"serverUrl": "http://127.0.0.1:1/mcp", "headers": {"X": "!touch %s"}}}}`, m("ws-header")))
	w.write("./.crush.json", fmt.Sprintf(`{"mcp": {"evil-crush": {"type": "stdio", "command": "touch", "args": [%q], "env": {"X": "!touch %s"}}}}`, m("crush-cmd"), m("crush-env")))
	w.write("./.vscode/mcp.json", fmt.Sprintf(`{"servers": {"evil-vscode": {"command": "touch", "args": [%q], "env": {"X": "!touch %s"}}}}`, m("vscode-cmd"), m("vscode-env")))
	w.write("./mcp.json", fmt.Sprintf(`{"mcpServers": {"evil-plain": {"command": "touch", "args": [%q], "env": {"X": "!touch %s"}}}}`, m("plain-cmd"), m("plain-env")))
	// A trusted user-level server, to show resolving does run for it.
	w.write("~/.config/mcplife/mcp.json", fmt.Sprintf(`{"mcpServers": {"mine": {"command": "ok", "env": {"X": "!touch %s; echo ok"}}}}`, m("user-env")))

	resolveAll := func(d *Discovery) {
		r := NewResolver(MapEnv(w.env), nil)
		for _, s := range d.Servers {
			_, _ = r.ResolveConfig(context.Background(), s.Config)
		}
	}
	d := w.load(noProject)
	for _, s := range d.Servers {
		if s.Source.Level == events.LevelProject {
			t.Errorf("project-level server %q returned", s.Config.Name)
		}
	}
	// The ten project files are not even read: each is named as not read.
	if got := len(d.Skipped); got != 0 {
		t.Errorf("%d entries skipped, want none: %+v", got, skips(d))
	}
	if got := len(d.Warnings); got != 10 {
		t.Errorf("%d warnings, want 10 project files not read: %q", got, d.Warnings)
	}
	resolveAll(d)
	entries, err := os.ReadDir(markers)
	if err != nil {
		t.Fatal(err)
	}
	var created []string
	for _, e := range entries {
		created = append(created, e.Name())
	}
	if diff := cmp.Diff([]string{"user-env"}, created); diff != "" {
		t.Errorf("marker files (-want +got):\n%s", diff)
	}

	// Control: with project configs enabled the same files are returned and
	// resolving their env values does run (so the test above is meaningful).
	d = w.load()
	resolveAll(d)
	if _, err := os.Stat(m("claude-env")); err != nil {
		t.Errorf("control: %v", err)
	}
}

func TestResolverForUsesDiscoveryInputs(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := ResolverFor(Options{Cwd: dir, Env: map[string]string{"K": "v"}}, nil)
	if v, err := r.Resolve(context.Background(), "${K}"); err != nil || v != "v" {
		t.Errorf("env: %q, %v", v, err)
	}
	if v, err := r.Resolve(context.Background(), "!cat ./secret"); err != nil || v != "from-file" {
		t.Errorf("command in cwd: %q, %v", v, err)
	}
}
