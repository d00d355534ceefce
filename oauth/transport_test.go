package oauth_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/oauth"
)

// TestTransportOverSSE: the legacy HTTP+SSE client, which takes no OAuth
// handler, authorizes through oauth.Transport. Without a token the
// connect fails with a NeedsAuthError; after a login over SSE the stored
// token is sent; when the server forgets it, a message's 401 leads to a
// refresh and the message (its body sent again) goes through.
func TestTransportOverSSE(t *testing.T) {
	e := setUp(t)
	cfg := events.ServerConfig{Name: "tracker", Type: events.TransportSSE, URL: e.fx.SSEURL}
	connect := func() (*mcp.ClientSession, error) {
		client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		h := e.a.Handler("tracker", cfg, nil)
		return client.Connect(t.Context(), &mcp.SSEClientTransport{Endpoint: cfg.URL,
			HTTPClient: &http.Client{Transport: oauth.Transport(nil, h)}}, nil)
	}
	if _, err := connect(); !errors.As(err, new(*oauth.NeedsAuthError)) {
		t.Fatalf("connect without a token: %v, want a NeedsAuthError", err)
	}
	if _, err := e.a.Login(t.Context(), "tracker", cfg, nil); err != nil {
		t.Fatalf("Login over SSE: %v", err)
	}
	cs, err := connect()
	if err != nil {
		t.Fatalf("connect with the stored token: %v", err)
	}
	defer cs.Close()
	if out, err := call(t, cs, "read"); err != nil || out != "read ok" {
		t.Fatalf("read = %q, %v", out, err)
	}
	e.fx.ForgetAccessTokens()
	if out, err := call(t, cs, "read"); err != nil || out != "read ok" {
		t.Fatalf("read after the server forgot the token = %q, %v", out, err)
	}
	if e.fx.Refreshes() != 1 {
		t.Fatalf("refreshes = %d, want 1 (on the message's 401)", e.fx.Refreshes())
	}
	noLeak(t, e.fx, map[string]string{"log": e.logs.String()})
}
