package manager

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/oauth"
)

// A list's hints are its pages': the smallest ttlMs (an absent one counts
// as 0), private when any page is, else the first page's scope; a
// connection without hints records none.
func TestHintsFold(t *testing.T) {
	lc := &liveConn{authContext: "https://as.example 0123456789abcdef"}
	for _, tc := range []struct {
		name  string
		off   bool
		pages []mcp.Cacheable
		want  events.CacheHints
	}{
		{"one page", false, []mcp.Cacheable{{TTLMs: 500, CacheScope: "public"}}, events.CacheHints{TTLMs: 500, CacheScope: "public"}},
		{"smallest ttl", false, []mcp.Cacheable{{TTLMs: 500, CacheScope: "public"}, {TTLMs: 200, CacheScope: "public"}, {TTLMs: 900}},
			events.CacheHints{TTLMs: 200, CacheScope: "public"}},
		{"absent ttl is 0", false, []mcp.Cacheable{{TTLMs: 500, CacheScope: "public"}, {CacheScope: "public"}}, events.CacheHints{CacheScope: "public"}},
		{"any private page", false, []mcp.Cacheable{{TTLMs: 500, CacheScope: "public"}, {TTLMs: 500, CacheScope: "private"}},
			events.CacheHints{TTLMs: 500, CacheScope: "private", AuthContext: lc.authContext}},
		{"first page's scope", false, []mcp.Cacheable{{TTLMs: 1}, {TTLMs: 1, CacheScope: "public"}}, events.CacheHints{TTLMs: 1}},
		{"negative ttl", false, []mcp.Cacheable{{TTLMs: -5, CacheScope: "public"}}, events.CacheHints{CacheScope: "public"}},
		{"legacy", true, []mcp.Cacheable{{TTLMs: 500, CacheScope: "private"}}, events.CacheHints{}},
	} {
		f := hintsFold{off: tc.off}
		for _, p := range tc.pages {
			f.add(p)
		}
		if got := f.hints(lc); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// jwt returns an unsigned JWT whose payload is claims.
func jwt(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + ".sig"
}

// The authorization context names the issuer and a hash of the token's
// subject (its sub claim, or the client and issuer of an opaque token),
// stays the same when the token is refreshed, differs between users, and
// holds neither the token nor the subject.
func TestAuthContext(t *testing.T) {
	const iss = "https://as.example"
	alice := &oauth.Entry{Issuer: iss, ClientID: "cli", Token: oauth.Token{AccessToken: jwt(`{"sub":"alice","exp":1}`)}}
	aliceLater := &oauth.Entry{Issuer: iss, ClientID: "cli", Token: oauth.Token{AccessToken: jwt(`{"sub":"alice","exp":2}`), RefreshToken: "r"}}
	bob := &oauth.Entry{Issuer: iss, ClientID: "cli", Token: oauth.Token{AccessToken: jwt(`{"sub":"bob"}`)}}
	opaque := &oauth.Entry{Issuer: iss, ClientID: "cli", Token: oauth.Token{AccessToken: "opaque-token-1"}}
	opaqueLater := &oauth.Entry{Issuer: iss, ClientID: "cli", Token: oauth.Token{AccessToken: "opaque-token-2"}}
	other := &oauth.Entry{Issuer: iss, ClientID: "another", Token: oauth.Token{AccessToken: "opaque-token-1"}}

	a := authContextOf(alice)
	if !strings.HasPrefix(a, iss+" ") || len(a) != len(iss)+1+16 {
		t.Errorf("context %q, want the issuer and 16 hex digits", a)
	}
	if authContextOf(aliceLater) != a {
		t.Error("a refreshed token changed the context")
	}
	if authContextOf(bob) == a {
		t.Error("two users share a context")
	}
	if authContextOf(opaque) != authContextOf(opaqueLater) || authContextOf(opaque) == authContextOf(other) || authContextOf(opaque) == a {
		t.Error("opaque tokens: want one context per client and issuer")
	}
	for _, e := range []*oauth.Entry{alice, opaque} {
		if c := authContextOf(e); strings.Contains(c, e.Token.AccessToken) || strings.Contains(c, "alice") || strings.Contains(c, "cli") {
			t.Errorf("context %q quotes the token or subject", c)
		}
	}
	if authContextOf(nil) != "" || authContextOf(&oauth.Entry{Issuer: iss}) != "" {
		t.Error("no token: want no context")
	}
	for _, tok := range []string{"a.b", "a.!!.c", jwt(`not json`), jwt(`{"sub":5}`)} {
		if s := jwtSubject(tok); s != "" {
			t.Errorf("jwtSubject(%q) = %q, want none", tok, s)
		}
	}
}
