package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
	"github.com/mcplife/mcplife/internal/fixture/oauthfixture"
)

// TestAuthLoginStatusRunLogout drives the OAuth commands against the
// local authorization server and protected MCP server: run reports the
// server as needs-auth (gate outcome too) and still exits 0 for the other
// server; auth login runs the authorization code grant with PKCE and
// dynamic registration through $MCPLIFE_BROWSER (a command that follows
// the redirects); auth status lists it; run uses the stored token for a
// call; auth logout revokes (RFC 7009) and deletes. No token, code or
// client secret appears in any output or any file but the token store.
func TestAuthLoginStatusRunLogout(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatalf("the browser of this test is curl: %v", err)
	}
	fx, err := oauthfixture.Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fx.Close()
	root := t.TempDir()
	home, xdg := filepath.Join(root, "home"), filepath.Join(root, "xdg")
	os.MkdirAll(home, 0o700)
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", xdg)
	t.Setenv("XDG_STATE_HOME", filepath.Join(root, "state"))
	t.Setenv("MCPLIFE_BROWSER", curl+" -s -L -o /dev/null")
	cmd, args := fixturetest.Command(t, "only=echo")
	cfgBytes, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"tracker": map[string]any{"url": fx.URL},
		"local":   map[string]any{"command": cmd, "args": args},
	}})
	cfg := filepath.Join(root, "mcp.json")
	if err := os.WriteFile(cfg, cfgBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(root, "events.db")
	disc := []string{"--cwd", root, "--no-project-config", "--config", cfg}
	var outputs []string
	mcpAudit := func(want int, args ...string) string {
		t.Helper()
		code, out, errOut := runCmd(t, append([]string{"--db", db}, args...)...)
		outputs = append(outputs, out, errOut)
		if code != want {
			t.Fatalf("mcp-audit %s: exit %d, want %d\n%s\n%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out
	}
	type runOut struct {
		Gate    struct{ Outcomes map[string]string }
		Servers []struct{ Name, Status, Error string }
		Call    *struct{ IsError bool }
	}
	var before runOut
	json.Unmarshal([]byte(mcpAudit(0, append([]string{"--json", "run", "--once", "--gate", "1m"}, disc...)...)), &before)
	if before.Gate.Outcomes["tracker"] != "needs-auth" || before.Gate.Outcomes["local"] != "ready" {
		t.Fatalf("gate outcomes = %v", before.Gate.Outcomes)
	}
	for _, s := range before.Servers {
		if s.Name == "tracker" && (s.Status != "needs-auth" || !strings.Contains(s.Error, "mcp-audit auth login tracker")) {
			t.Fatalf("tracker before login: %+v", s)
		}
	}
	if len(fx.Authorizations()) != 0 {
		t.Fatal("run opened the browser without --login")
	}

	out := mcpAudit(0, append([]string{"auth", "login", "tracker"}, disc...)...)
	if !strings.Contains(out, "logged in to tracker at "+fx.Issuer) || !strings.Contains(out, "scopes: read") {
		t.Fatalf("auth login: %s", out)
	}
	var st []struct {
		Server, Status, ExpiresAt string
		Scopes                    []string
	}
	json.Unmarshal([]byte(mcpAudit(0, append([]string{"--json", "auth", "status"}, disc...)...)), &st)
	if len(st) != 1 || st[0].Server != "tracker" || st[0].Status != "authenticated" || st[0].ExpiresAt == "" || strings.Join(st[0].Scopes, " ") != "read" {
		t.Fatalf("auth status = %+v", st)
	}
	var after runOut
	json.Unmarshal([]byte(mcpAudit(0, append([]string{"--json", "run", "--once", "--gate", "1m", "--call", "tracker/read"}, disc...)...)), &after)
	if after.Call == nil || after.Call.IsError || after.Gate.Outcomes["tracker"] != "ready" {
		t.Fatalf("run after login: %+v", after)
	}
	out = mcpAudit(0, append([]string{"auth", "logout", "tracker"}, disc...)...)
	if !strings.Contains(out, "revoked") || len(fx.Revoked()) != 1 {
		t.Fatalf("auth logout: %s (revoked %d)", out, len(fx.Revoked()))
	}
	json.Unmarshal([]byte(mcpAudit(0, append([]string{"--json", "auth", "status"}, disc...)...)), &st)
	if st[0].Status != "none" {
		t.Fatalf("status after logout = %+v", st)
	}
	mcpAudit(0, "replay", "last")

	// Every output, and every file but the token store itself.
	texts := map[string]string{"outputs": strings.Join(outputs, "\n")}
	store := filepath.Join(xdg, "mcplife", "oauth.json")
	if fi, err := os.Stat(store); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token store: %v %v", err, fi)
	}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && p != store {
			b, _ := os.ReadFile(p)
			texts[p] = string(b)
		}
		return nil
	})
	for where, text := range texts {
		for _, s := range fx.Issued() {
			if strings.Contains(text, s) {
				t.Errorf("%s holds an issued secret (%s…)", where, s[:8])
			}
		}
	}
}
