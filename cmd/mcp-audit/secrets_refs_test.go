package main

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
)

// ${VAR} references in a command's arguments and in a URL's path are
// resolved at connect time only: the servers get the values, while the
// database, its WAL, every other file written and every command's output
// keep the reference. A server that prints its environment and its
// arguments to stderr and fails, and a connect error quoting a URL with a
// token in its path, are scrubbed of the substituted values and of
// credential-like variables the server inherited from the host.
func TestReferencesInArgsAndURLNeverRecorded(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	const (
		argSecret       = "arg-secret-5e1c"
		headerArgSecret = "header-arg-secret-0b7d"
		pathSecret      = "path-secret-c4f2"
		deadPathSecret  = "dead-path-secret-8a31"
		hostSecret      = "inherited-pat-93d0"
		hostKeySecret   = "inherited-key-6f27"
	)
	t.Setenv("ARG_TOKEN", argSecret)
	t.Setenv("HEADER_TOKEN", headerArgSecret)
	t.Setenv("PATH_SECRET", pathSecret)
	t.Setenv("DEAD_SECRET", deadPathSecret)
	t.Setenv("GITHUB_PAT", hostSecret)
	t.Setenv("ACME_API_KEY", hostKeySecret)

	var mu sync.Mutex
	var paths []string
	base := fixturetest.Serve(t, &fixturetest.HTTPOptions{OnRequest: func(r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		paths = append(paths, r.URL.Path)
	}}, "only=echo")
	base = strings.TrimSuffix(base, "/mcp")
	cmd, args := fixturetest.Command(t, "only=echo", "stderr=started with --api-key ${ARG_TOKEN}")
	servers := map[string]any{
		// The fixture's stderr line is its own argument: it reaches the
		// process expanded.
		"local":  map[string]any{"command": cmd, "args": args},
		"remote": map[string]any{"type": "http", "url": base + "/s/${PATH_SECRET}/mcp"},
		"dead":   map[string]any{"type": "http", "url": "http://127.0.0.1:1/s/${DEAD_SECRET}/mcp", "timeout": 5000},
		"echoer": map[string]any{"command": "sh", "args": []string{"-c", `env >&2; echo "argv: $*" >&2; exit 3`, "sh",
			"--api-key", "${ARG_TOKEN}", "--header", "Authorization: Bearer ${HEADER_TOKEN}"}},
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": servers})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.json")
	os.WriteFile(cfg, b, 0o600)
	db := filepath.Join(dir, "e.db")

	var outputs []string
	code, out, errOut := runCmd(t, "--db", db, "run", "--once", "--settle", "10s", "--cwd", t.TempDir(), "--config", cfg,
		"--call", "remote/echo", "--args", `{"text":"hi"}`)
	outputs = append(outputs, out, errOut)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	mu.Lock()
	if !containsString(paths, "/s/"+pathSecret+"/mcp") {
		t.Errorf("the remote server was not asked at the resolved path; paths: %q", paths)
	}
	mu.Unlock()
	// The failing servers' errors were recorded, scrubbed.
	if !strings.Contains(out, "echoer") || !strings.Contains(out, "dead") {
		t.Fatalf("run output lacks the failing servers:\n%s", out)
	}

	for _, a := range [][]string{{"replay", "last"}, {"--json", "replay", "last"}, {"sessions"}, {"--json", "inspect", "last", "--seq", "1000"},
		{"inspect", "last", "--seq", "1000"}, {"discover", "--config", cfg}, {"--json", "discover", "--config", cfg}} {
		_, o, e := runCmd(t, append([]string{"--db", db}, a...)...)
		outputs = append(outputs, o, e)
	}
	var files strings.Builder
	for _, root := range []string{dir, home} {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && p != cfg {
				b, _ := os.ReadFile(p)
				files.Write(b)
			}
			return nil
		})
	}
	recorded := files.String()
	if !strings.Contains(recorded, events.TypeConnectFailed) {
		t.Fatal("no connect failure was recorded")
	}
	if !strings.Contains(recorded, "${ARG_TOKEN}") || !strings.Contains(recorded, "${PATH_SECRET}") {
		t.Error("the recorded configuration does not keep the references")
	}
	for _, secret := range []string{argSecret, headerArgSecret, pathSecret, deadPathSecret, hostSecret, hostKeySecret} {
		if strings.Contains(recorded, secret) {
			t.Errorf("%s is in a file the run wrote", secret)
		}
		for i, o := range outputs {
			if strings.Contains(o, secret) {
				t.Errorf("%s is in output %d:\n%s", secret, i, o)
			}
		}
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
