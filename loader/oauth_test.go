package loader

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcplife/mcplife/events"
)

// TestOAuthMapping: each format's own OAuth keys map onto the server's
// oauth settings (the native format: every field; Claude Code: clientId
// and callbackPort; Gemini CLI: clientId, clientSecret and scopes;
// OpenCode: clientId, clientSecret and a space-separated scope), keys a
// format does not define are ignored, and what is recorded redacts the
// client secret and the key.
func TestOAuthMapping(t *testing.T) {
	w := newWorld(t)
	w.write("~/.config/mcplife/mcp.json", `{"mcpServers": {
  "native": {"url": "https://n.example/mcp", "oauth": {"clientId": "n-id", "clientSecret": "${N_SECRET}", "callbackPort": 8765,
    "scopes": ["read"], "clientMetadataUrl": "https://app.example/client.json"}},
  "m2m": {"url": "https://m.example/mcp", "oauth": {"grant": "client_credentials", "clientId": "svc", "privateKey": "PEM", "signingAlgorithm": "ES256"}}
}}`)
	w.write("~/.claude.json", `{"mcpServers": {"claude": {"type": "http", "url": "https://c.example/mcp", "oauth": {"clientId": "c-id", "callbackPort": 9000, "scopes": ["ignored"]}}}}`)
	w.write("~/.gemini/settings.json", `{"mcpServers": {"gemini": {"httpUrl": "https://g.example/mcp", "oauth": {"enabled": true, "clientId": "g-id", "clientSecret": "g-secret", "scopes": ["a", "b"]}}}}`)
	w.write("~/.config/opencode/opencode.json", `{"mcp": {"oc": {"type": "remote", "url": "https://o.example/mcp", "oauth": {"clientId": "o-id", "scope": "x y"}},
  "off": {"type": "remote", "url": "https://off.example/mcp", "oauth": false}}}`)
	d := w.load()
	if len(d.Errors) > 0 || len(d.Skipped) > 0 {
		t.Fatalf("errors %v, skipped %v", d.Errors, skips(d))
	}
	got := map[string]*events.OAuthConfig{}
	for _, s := range d.Servers {
		got[s.Config.Name] = s.Config.OAuth
	}
	want := map[string]*events.OAuthConfig{
		"native": {ClientID: "n-id", ClientSecret: "${N_SECRET}", CallbackPort: 8765, Scopes: []string{"read"}, ClientMetadataURL: "https://app.example/client.json"},
		"m2m":    {Grant: events.GrantClientCredentials, ClientID: "svc", PrivateKey: "PEM", SigningAlgorithm: "ES256"},
		"claude": {ClientID: "c-id", CallbackPort: 9000},
		"gemini": {ClientID: "g-id", ClientSecret: "g-secret", Scopes: []string{"a", "b"}},
		"oc":     {ClientID: "o-id", Scopes: []string{"x", "y"}},
		"off":    nil,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("oauth mismatch (-want +got):\n%s", diff)
	}
	r := d.Servers[0].Config
	for _, s := range d.Servers {
		if s.Config.Name == "gemini" {
			r = s.Config
		}
	}
	if red := r.Redact(); red.OAuth.ClientSecret != events.Redacted || red.OAuth.ClientID != "g-id" {
		t.Errorf("redacted oauth = %+v", red.OAuth)
	}
}

// TestOAuthInvalid: a wrong type or an unknown grant makes the entry
// invalid, naming the field.
func TestOAuthInvalid(t *testing.T) {
	w := newWorld(t)
	w.write("~/.config/mcplife/mcp.json", `{"mcpServers": {
  "port": {"url": "https://p.example/mcp", "oauth": {"callbackPort": 70000}},
  "grant": {"url": "https://g.example/mcp", "oauth": {"grant": "password"}},
  "shape": {"url": "https://s.example/mcp", "oauth": "yes"}
}}`)
	d := w.load()
	if len(d.Servers) != 0 {
		t.Fatalf("servers %v, want none", names(d))
	}
	var all []string
	for _, s := range d.Skipped {
		all = append(all, s.Detail)
	}
	text := strings.Join(all, "\n")
	for _, want := range []string{`"oauth"."callbackPort" must be a port number`, `"oauth"."grant" must be "authorization_code" or "client_credentials"`, `"oauth" must be an object`} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in %s", want, text)
		}
	}
}
