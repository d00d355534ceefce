package manager

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/events"
)

func TestValidateConfigMessages(t *testing.T) {
	tests := []struct {
		name string
		cfg  events.ServerConfig
		want string
	}{
		{"ok", events.ServerConfig{Command: "x"}, ""},
		{"both", events.ServerConfig{Command: "x", URL: "http://h"}, `Server "both": both "command" and "url" are set - server should be either stdio (command) OR http/sse (url), not both`},
		{"nocmd", events.ServerConfig{Type: "stdio"}, `Server "nocmd": stdio server requires "command" field`},
		{"nourl", events.ServerConfig{Type: "sse"}, `Server "nourl": sse server requires "url" field`},
		{"nourlh", events.ServerConfig{Type: "http"}, `Server "nourlh": http server requires "url" field`},
		{"weird", events.ServerConfig{Type: "ws", URL: "ws://h"}, `Server "weird": unknown server type "ws"`},
		{"bad name!", events.ServerConfig{Command: "x"}, `Server "bad name!": invalid server name (must match ^[A-Za-z0-9_.:-]{1,100}$)`},
	}
	for _, tt := range tests {
		err := validateConfig(tt.name, tt.cfg)
		got := ""
		if err != nil {
			got = err.Error()
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%s: %v does not wrap ErrInvalidConfig", tt.name, err)
			}
		}
		if got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

func TestScrubberRemovesResolvedValues(t *testing.T) {
	res := resolveConfig(context.Background(), "s", events.ServerConfig{
		Env:     map[string]string{"A": "TOKEN_VAR", "B": "x"},
		Headers: map[string]string{"Authorization": "Bearer sekrit-123"},
	}, resolverFunc(func(_ context.Context, v string) (string, error) {
		if v == "TOKEN_VAR" {
			return "resolved-secret-value", nil
		}
		return v, nil
	}), discardLogger())
	if res.env["A"] != "resolved-secret-value" || res.headers["Authorization"] != "Bearer sekrit-123" {
		t.Fatalf("resolved %v %v", res.env, res.headers)
	}
	got := res.scrubText("boom: resolved-secret-value and Bearer sekrit-123 via https://h/?token=abc")
	for _, s := range []string{"resolved-secret-value", "sekrit", "abc"} {
		if strings.Contains(got, s) {
			t.Errorf("scrubbed text %q still contains %q", got, s)
		}
	}
}

// A header's credential is a secret on its own too: a server that says
// back the token of "Authorization: Bearer …" without the scheme, in an
// error or in what it tells about itself, does not get it recorded.
func TestScrubberRemovesHeaderCredential(t *testing.T) {
	t.Setenv("MYVAR", "Hh7Plain9Tok2")
	res := resolveConfig(context.Background(), "s", events.ServerConfig{
		Headers: map[string]string{"Authorization": "Bearer Lit4Bearer8Tok", "X-Other": "Token ${MYVAR}"},
	}, resolverFunc(func(_ context.Context, v string) (string, error) {
		return os.ExpandEnv(v), nil
	}), discardLogger())
	text := "token Lit4Bearer8Tok, other Hh7Plain9Tok2"
	for name, got := range map[string]string{"scrubText": res.scrubText(text), "scrubListed": res.scrubListed(text)} {
		for _, s := range []string{"Lit4Bearer8Tok", "Hh7Plain9Tok2"} {
			if strings.Contains(got, s) {
				t.Errorf("%s = %q: still contains %q", name, got, s)
			}
		}
	}
}

func TestResolverErrorOmitsTheEntry(t *testing.T) {
	res := resolveConfig(context.Background(), "s", events.ServerConfig{
		Env: map[string]string{"KEEP": "v1", "DROP": "!fail"},
	}, resolverFunc(func(_ context.Context, v string) (string, error) {
		if v == "!fail" {
			return "", errors.New("command failed")
		}
		return v, nil
	}), discardLogger())
	if _, ok := res.env["DROP"]; ok || res.env["KEEP"] != "v1" {
		t.Fatalf("env %v", res.env)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
