package transport

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/events"
)

func TestScrubberRemovesResolvedValues(t *testing.T) {
	res := Resolve(context.Background(), "s", events.ServerConfig{
		Env:     map[string]string{"A": "TOKEN_VAR", "B": "x"},
		Headers: map[string]string{"Authorization": "Bearer sekrit-123"},
	}, resolverFunc(func(_ context.Context, v string) (string, error) {
		if v == "TOKEN_VAR" {
			return "resolved-secret-value", nil
		}
		return v, nil
	}), discardLogger())
	if res.Env["A"] != "resolved-secret-value" || res.Headers["Authorization"] != "Bearer sekrit-123" {
		t.Fatalf("resolved %v %v", res.Env, res.Headers)
	}
	got := res.ScrubText("boom: resolved-secret-value and Bearer sekrit-123 via https://h/?token=abc")
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
	res := Resolve(context.Background(), "s", events.ServerConfig{
		Headers: map[string]string{"Authorization": "Bearer Lit4Bearer8Tok", "X-Other": "Token ${MYVAR}"},
	}, resolverFunc(func(_ context.Context, v string) (string, error) {
		return os.ExpandEnv(v), nil
	}), discardLogger())
	text := "token Lit4Bearer8Tok, other Hh7Plain9Tok2"
	for name, got := range map[string]string{"scrubText": res.ScrubText(text), "scrubListed": res.scrubListed(text)} {
		for _, s := range []string{"Lit4Bearer8Tok", "Hh7Plain9Tok2"} {
			if strings.Contains(got, s) {
				t.Errorf("%s = %q: still contains %q", name, got, s)
			}
		}
	}
}

func TestResolverErrorOmitsTheEntry(t *testing.T) {
	res := Resolve(context.Background(), "s", events.ServerConfig{
		Env: map[string]string{"KEEP": "v1", "DROP": "!fail"},
	}, resolverFunc(func(_ context.Context, v string) (string, error) {
		if v == "!fail" {
			return "", errors.New("command failed")
		}
		return v, nil
	}), discardLogger())
	if _, ok := res.Env["DROP"]; ok || res.Env["KEEP"] != "v1" {
		t.Fatalf("env %v", res.Env)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// resolverFunc adapts a function to [Resolver].
type resolverFunc func(ctx context.Context, value string) (string, error)

func (f resolverFunc) Resolve(ctx context.Context, value string) (string, error) {
	return f(ctx, value)
}
