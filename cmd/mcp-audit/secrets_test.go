package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
)

// Secrets in env values, header values and URL query parameters (token,
// exaApiKey) reach the servers but never the database file, its WAL, the
// command's output or its log, whatever the server does with them.
func TestSecretsNeverReachStoreOrOutput(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	const (
		envSecret    = "env-secret-1f3a"
		headerSecret = "header-secret-9c2e"
		tokenSecret  = "query-token-77ab"
		exaSecret    = "exa-key-5d10"
		cmdSecret    = "cmd-output-secret-41"
	)
	var mu sync.Mutex
	var gotAuth string
	url := fixturetest.Serve(t, &fixturetest.HTTPOptions{OnRequest: func(r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if a := r.Header.Get("Authorization"); a != "" {
			gotAuth = a
		}
	}}, "only=echo")
	cmd, args := fixturetest.Command(t, "only=env")
	servers := map[string]any{
		"local": map[string]any{"command": cmd, "args": args, "env": map[string]string{
			"PLAIN_SECRET": envSecret,
			"FROM_COMMAND": "!echo " + cmdSecret,
		}, "record": "transcript"},
		"remote": map[string]any{"type": "http", "url": url + "?token=" + tokenSecret + "&exaApiKey=" + exaSecret,
			"headers": map[string]string{"Authorization": "Bearer " + headerSecret}, "record": "transcript"},
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": servers})
	cfg := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(cfg, b, 0o600)
	db := filepath.Join(t.TempDir(), "e.db")

	var outputs []string
	code, out, errOut := runCmd(t, "--db", db, "run", "--once", "--cwd", t.TempDir(), "--config", cfg,
		"--call", "local/env", "--args", `{"name":"FROM_COMMAND"}`)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	outputs = append(outputs, out, errOut)
	// The servers did receive the resolved values.
	mu.Lock()
	if gotAuth != "Bearer "+headerSecret {
		t.Errorf("server saw Authorization %q", gotAuth)
	}
	mu.Unlock()
	if !strings.Contains(out, cmdSecret) {
		t.Errorf("the env tool did not see the !command result:\n%s", out)
	}
	outputs[0] = strings.ReplaceAll(out, cmdSecret, "") // the tool's own answer, asked for

	// The transcripts are kept, scrubbed like everything else.
	_, tr, _ := runCmd(t, "--db", db, "replay", "last", "--transcript")
	for _, want := range []string{"local → {", "remote → {", `"method":"tools/call"`} {
		if !strings.Contains(tr, want) {
			t.Errorf("replay --transcript lacks %q:\n%s", want, tr)
		}
	}
	// Interleaved by time: a server's initialize is sent before it is
	// recorded as connected, and its tools/call after.
	if i, c, call := strings.Index(tr, `"method":"initialize"`), strings.Index(tr, events.TypeServerConnected), strings.Index(tr, `"method":"tools/call"`); i < 0 || c < i || call < c {
		t.Errorf("replay --transcript not in time order (initialize at %d, connected at %d, call at %d):\n%s", i, c, call, tr)
	}
	_, trj, _ := runCmd(t, "--db", db, "--json", "replay", "last", "--transcript")
	if !strings.Contains(trj, `"type":"Transcript","server":"local","direction":"out","message":"{`) {
		t.Errorf("replay --transcript --json lacks a transcript line:\n%.2000s", trj)
	}
	for _, args := range [][]string{{"replay", "last"}, {"--json", "replay", "last"}, {"replay", "last", "--transcript"}, {"--json", "replay", "last", "--transcript"}, {"sessions"}, {"--json", "inspect", "last", "--seq", "1000"}, {"discover", "--config", cfg}, {"--json", "discover", "--config", cfg}} {
		_, o, e := runCmd(t, append([]string{"--db", db}, args...)...)
		outputs = append(outputs, o, e)
	}
	files := ""
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		b, _ := os.ReadFile(f)
		files += string(b)
	}
	if !strings.Contains(files, events.TypeServerDiscovered) {
		t.Fatal("nothing was recorded")
	}
	for _, secret := range []string{envSecret, headerSecret, tokenSecret, exaSecret, cmdSecret} {
		if strings.Contains(files, secret) {
			t.Errorf("%s is in the database", secret)
		}
		for i, o := range outputs {
			if strings.Contains(o, secret) {
				t.Errorf("%s is in output %d:\n%s", secret, i, o)
			}
		}
	}
}

// A stored row that does not decode is reported by its sequence and type,
// and every other event stays readable.
func TestCorruptRowStaysReadable(t *testing.T) {
	bad := events.MustNew("s", &events.ConnectStarted{Server: "a"}, goodTime())
	bad.Data = json.RawMessage(`{"server":`)
	db := writeHistory(t, "s", &events.SessionStarted{Cwd: "/x"}, rawEnvelope{bad}, &events.SessionClosed{Reason: "bye"})
	code, out, _ := runCmd(t, "--db", db, "replay", "s")
	if code != 0 || !strings.Contains(out, "SessionStarted") || !strings.Contains(out, "reason=bye") {
		t.Fatalf("replay: %d\n%s", code, out)
	}
	code, out, _ = runCmd(t, "--db", db, "verify", "s")
	if code != 1 || !strings.Contains(out, "seq 2") || !strings.Contains(out, "ConnectStarted") {
		t.Fatalf("verify: %d\n%s", code, out)
	}
}

// Secrets a server says back about itself (instructions, version, tool,
// resource, template and prompt texts, names and URIs) are in neither the
// database nor any output: a configured env value, a !command value and an
// inherited credential-named variable.
func TestServerSuppliedSecretsNeverReachStoreOrOutput(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	const (
		literal   = "LITERALsecret2222"
		command   = "CMDsecret3333"
		inherited = "ghp_INHERITEDsecret1111"
	)
	t.Setenv("GITHUB_TOKEN", inherited)
	cmd, args := fixturetest.Command(t, "only=echo", "echo-env=API_KEY,CMD_TOKEN,GITHUB_TOKEN")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"leaky": map[string]any{
		"command": cmd, "args": args, "env": map[string]string{"API_KEY": literal, "CMD_TOKEN": "!echo " + command}}}})
	cfg := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(cfg, b, 0o600)
	db := filepath.Join(t.TempDir(), "e.db")
	var outputs []string
	code, out, errOut := runCmd(t, "--db", db, "--json", "run", "--once", "--cwd", t.TempDir(), "--config", cfg, "--call", "leaky/echo")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	outputs = append(outputs, out, errOut)
	for _, args := range [][]string{{"replay", "last"}, {"--json", "replay", "last"}, {"--json", "inspect", "last", "--seq", "1000"}} {
		_, o, e := runCmd(t, append([]string{"--db", db}, args...)...)
		outputs = append(outputs, o, e)
	}
	if !strings.Contains(outputs[2], "ResourcesListed") || !strings.Contains(outputs[2], "PromptsListed") {
		t.Fatalf("replay shows no lists:\n%s", outputs[2])
	}
	files := ""
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		b, _ := os.ReadFile(f)
		files += string(b)
	}
	for _, secret := range []string{literal, command, inherited} {
		if strings.Contains(files, secret) {
			t.Errorf("%s is in the database", secret)
		}
		for i, o := range outputs {
			if strings.Contains(o, secret) {
				t.Errorf("%s is in output %d:\n%.2000s", secret, i, o)
			}
		}
	}
}

// Literal secrets in a config's arguments (after --api-key, in an
// Authorization header argument) and in a URL's path are in neither
// discover --json, the database (ServerDiscovered) nor the output of run,
// and the config hash is still the one of the config as written.
func TestLiteralArgAndPathSecretsRedacted(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	cmd, args := fixturetest.Command(t, "only=echo")
	secrets := []string{"sk-live-ARGsecret5555", "ghp_ARGeqsecret6666", "hdrARGsecret7777", "PATHsecret8888"}
	servers := map[string]any{
		"a": map[string]any{"command": cmd, "args": append(args, "--api-key", secrets[0], "--token="+secrets[1], "Authorization: Bearer "+secrets[2])},
		"b": map[string]any{"type": "http", "url": "http://127.0.0.1:1/s/" + secrets[3] + "/mcp"},
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": servers})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.json")
	os.WriteFile(cfg, b, 0o600)
	db := filepath.Join(dir, "e.db")
	var outputs []string
	for _, args := range [][]string{{"--json", "discover"}, {"discover"}, {"run", "--once"}, {"--json", "run", "--once"}} {
		_, o, e := runCmd(t, append(append([]string{"--db", db}, args...), "--cwd", dir, "--no-project-config", "--config", cfg)...)
		outputs = append(outputs, o, e)
	}
	_, o, e := runCmd(t, "--db", db, "--json", "replay", "last")
	outputs = append(outputs, o, e)
	if !strings.Contains(outputs[0], "--api-key") {
		t.Fatalf("discover --json:\n%s", outputs[0])
	}
	files := ""
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		b, _ := os.ReadFile(f)
		files += string(b)
	}
	if !strings.Contains(files, events.TypeServerDiscovered) {
		t.Fatal("nothing was recorded")
	}
	for _, secret := range secrets {
		if strings.Contains(files, secret) {
			t.Errorf("%s is in the database", secret)
		}
		for i, o := range outputs {
			if strings.Contains(o, secret) {
				t.Errorf("%s is in output %d:\n%.3000s", secret, i, o)
			}
		}
	}
	// The hash is over the config as written, not as redacted.
	var got struct {
		Servers []struct {
			Name       string `json:"name"`
			ConfigHash string `json:"configHash"`
		} `json:"servers"`
	}
	json.Unmarshal([]byte(outputs[0]), &got)
	want := events.ServerConfig{Name: "b", URL: "http://127.0.0.1:1/s/" + secrets[3] + "/mcp", Type: "http"}
	for _, s := range got.Servers {
		if s.Name == "b" && s.ConfigHash != "" && s.ConfigHash != want.Hash() {
			t.Errorf("config hash of b %s, want %s (over the unredacted config)", s.ConfigHash, want.Hash())
		}
	}
}
