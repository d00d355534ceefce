package oauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/oauthfixture"
	"github.com/mcplife/mcplife/oauth"
)

// movingServer is a stateless MCP server (2026-07-28) protected by the
// authorization servers of fixtures: its protected-resource metadata
// names as[0] until a request carries a token it accepts, then as[1]
// (the last one stays), and from then on it accepts only tokens that
// authorization server issued. With one authorization server it accepts
// each token for one request only, so every request after the first
// asks for a new login.
type movingServer struct {
	URL string
	as  []*oauthfixture.Server

	mu   sync.Mutex
	cur  int
	used map[string]bool
}

func startMoving(t *testing.T, as ...*oauthfixture.Server) *movingServer {
	t.Helper()
	ms := &movingServer{as: as, used: map[string]bool{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "moving", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "read"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "read ok"}}}, nil, nil
	})
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		ms.mu.Lock()
		issuer := ms.as[ms.cur].Issuer
		ms.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"resource": ms.URL, "authorization_servers": []string{issuer}, "scopes_supported": []string{"read"}})
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		ms.mu.Lock()
		ok := tok != "" && slices.Contains(ms.as[ms.cur].Issued(), tok) && !ms.used[tok]
		if ok {
			if len(ms.as) == 1 {
				ms.used[tok] = true
			} else if ms.cur < len(ms.as)-1 {
				ms.cur++
			}
		}
		ms.mu.Unlock()
		if !ok {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp", scope="read"`, strings.TrimSuffix(ms.URL, "/mcp")))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	ms.URL = hs.URL + "/mcp"
	return ms
}

func startFixture(t *testing.T) *oauthfixture.Server {
	t.Helper()
	fx, err := oauthfixture.Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fx.Close() })
	return fx
}

// TestLoginReregistersAtNewAuthorizationServer: the server's
// authorization server changes after the first token was used; the
// server refuses that token and the login authorizes again at the new
// one, registering there (a registration belongs to the authorization
// server that issued it) and never presenting the old client there. The
// login's session speaks the stateless protocol the config pins.
func TestLoginReregistersAtNewAuthorizationServer(t *testing.T) {
	as1, as2 := startFixture(t), startFixture(t)
	ms := startMoving(t, as1, as2)
	store := oauth.NewMemoryStore()
	a, err := oauth.New(&oauth.Options{Store: store, Open: oauthfixture.Browser})
	if err != nil {
		t.Fatal(err)
	}
	cfg := events.ServerConfig{Name: "moving", Type: events.TransportHTTP, URL: ms.URL, ProtocolVersion: "2026-07-28"}
	res, err := a.Login(t.Context(), "moving", cfg, nil)
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	if res.Issuer != as2.Issuer {
		t.Fatalf("Login issuer = %s, want the new authorization server %s", res.Issuer, as2.Issuer)
	}
	if as1.Registrations() != 1 || as2.Registrations() != 1 {
		t.Fatalf("registrations: %d at the old, %d at the new authorization server; want one each", as1.Registrations(), as2.Registrations())
	}
	e, err := store.Load(t.Context(), ms.URL)
	if err != nil || e.Issuer != as2.Issuer {
		t.Fatalf("stored entry %+v, %v", e, err)
	}
	for _, as := range []*oauthfixture.Server{as1, as2} {
		if r, err := store.Registration(t.Context(), as.Issuer); err != nil || r == nil || r.Issuer != as.Issuer {
			t.Fatalf("registration at %s: %+v, %v", as.Issuer, r, err)
		}
	}
}

// TestMovedAuthorizationServerNotRefreshed: a stored token whose
// authorization server the server no longer names is not refreshed at
// the old one on a 401; the connect needs a login at the new one.
func TestMovedAuthorizationServerNotRefreshed(t *testing.T) {
	as1, as2 := startFixture(t), startFixture(t)
	ms := startMoving(t, as2)
	store := oauth.NewMemoryStore()
	a, err := oauth.New(&oauth.Options{Store: store, Open: oauthfixture.Browser})
	if err != nil {
		t.Fatal(err)
	}
	// A token of as1, as a login before the move stored it.
	old := events.ServerConfig{Name: "moving", Type: events.TransportHTTP, URL: as1.URL}
	if _, err := a.Login(t.Context(), "moving", old, nil); err != nil {
		t.Fatal(err)
	}
	e, err := store.Load(t.Context(), as1.URL)
	if err != nil || e.Token.RefreshToken == "" {
		t.Fatalf("stored %+v, %v", e, err)
	}
	e.ServerURL = ms.URL
	if err := store.Save(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	cfg := events.ServerConfig{Name: "moving", Type: events.TransportHTTP, URL: ms.URL, ProtocolVersion: "2026-07-28"}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	h := a.Handler("moving", cfg, nil)
	_, err = client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: ms.URL, OAuthHandler: h, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err == nil {
		t.Fatal("connect with the old authorization server's token succeeded")
	}
	ne := oauth.NeedsAuthSeen(h)
	if ne == nil || ne.Issuer != as2.Issuer {
		t.Fatalf("NeedsAuthSeen = %+v (connect: %v), want the new issuer %s", ne, err, as2.Issuer)
	}
	if n := as1.RefreshRequests(); n != 0 {
		t.Fatalf("%d refreshes at the old authorization server", n)
	}
}

// TestLoginFailsWhenReauthorizationFails: a server that refuses the
// first token and asks for another login, which fails, fails the login:
// its first token is no token the server takes. The login's own error is
// reported, not the fallback initialize's refusal that followed it.
func TestLoginFailsWhenReauthorizationFails(t *testing.T) {
	fx := startFixture(t)
	ms := startMoving(t, fx)
	var n atomic.Int32
	open := func(ctx context.Context, w io.Writer, u string) error {
		if n.Add(1) > 1 {
			return errors.New("the browser was closed")
		}
		return oauthfixture.Browser(ctx, w, u)
	}
	a, err := oauth.New(&oauth.Options{Store: oauth.NewMemoryStore(), Open: open})
	if err != nil {
		t.Fatal(err)
	}
	cfg := events.ServerConfig{Name: "moving", Type: events.TransportHTTP, URL: ms.URL, ProtocolVersion: "2026-07-28"}
	res, err := a.Login(t.Context(), "moving", cfg, nil)
	if err == nil {
		t.Fatalf("Login = %+v, want the failed re-authorization", res)
	}
	if !strings.Contains(err.Error(), "the browser was closed") || n.Load() != 2 {
		t.Fatalf("Login error %v after %d browser logins", err, n.Load())
	}

	// A first login that fails is reported as itself, not as the 400
	// the stateless server answers the fallback initialize with.
	n.Store(1)
	_, err = a.Login(t.Context(), "moving", cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "the browser was closed") {
		t.Fatalf("Login error %v, want the browser's", err)
	}
}
