package oauth_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/oauthfixture"
	"github.com/mcplife/mcplife/oauth"
)

// clock is a test clock that moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type env struct {
	fx    *oauthfixture.Server
	a     *oauth.Authorizer
	clock *clock
	store string
	logs  *bytes.Buffer
	cfg   events.ServerConfig
}

func setUp(t *testing.T) *env {
	t.Helper()
	c := &clock{t: time.Now()}
	fx, err := oauthfixture.Start(&oauthfixture.Options{TokenTTL: time.Hour, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fx.Close() })
	e := &env{fx: fx, clock: c, store: filepath.Join(t.TempDir(), "mcplife", "oauth.json"), logs: &bytes.Buffer{}}
	e.a, err = oauth.New(&oauth.Options{
		Store: oauth.NewFileStore(e.store), Open: oauthfixture.Browser, Now: c.Now,
		Log: slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	e.cfg = events.ServerConfig{Name: "tracker", Type: "http", URL: fx.URL}
	return e
}

// connect opens an MCP session to the fixture through h.
func (e *env) connect(t *testing.T, h auth.OAuthHandler) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: e.fx.URL, OAuthHandler: h, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func call(t *testing.T, cs *mcp.ClientSession, tool string) (string, error) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	if err != nil {
		return "", err
	}
	return res.Content[0].(*mcp.TextContent).Text, nil
}

// noLeak fails when any text holds a token, code or secret the fixture
// issued.
func noLeak(t *testing.T, fx *oauthfixture.Server, texts map[string]string) {
	t.Helper()
	issued := fx.Issued()
	if len(issued) == 0 {
		t.Fatal("the fixture issued nothing")
	}
	for where, text := range texts {
		for _, s := range issued {
			if strings.Contains(text, s) {
				t.Errorf("%s holds an issued secret (%s…)", where, s[:8])
			}
		}
	}
}

// TestConnectNeedsLoginThenLoginRefreshLogout walks a server's whole
// OAuth life: a connect without a token fails naming the login command
// and what the metadata advertised (RFC 9728, RFC 8414); a login runs the
// authorization code grant with PKCE S256 and dynamic registration (RFC
// 7591, RFC 7636); the stored token is sent (RFC 6750), refreshed before
// it expires and on a 401 with the rotated refresh token saved at once
// (RFC 6749 §6); a second login reuses the registration; logout revokes
// (RFC 7009) and deletes.
func TestConnectNeedsLoginThenLoginRefreshLogout(t *testing.T) {
	e := setUp(t)
	ctx := t.Context()
	var errTexts []string

	_, err := e.connect(t, e.a.Handler("tracker", e.cfg, nil))
	ne, ok := errors.AsType[*oauth.NeedsAuthError](err)
	if !ok {
		t.Fatalf("connect without a token: %v, want a NeedsAuthError", err)
	}
	if ne.Issuer != e.fx.Issuer || !slices.Equal(ne.Scopes, []string{"read"}) || ne.Login != "mcp-audit auth login tracker" {
		t.Fatalf("NeedsAuthError = %+v", ne)
	}
	errTexts = append(errTexts, err.Error())
	if len(e.fx.Authorizations()) != 0 {
		t.Fatal("a connect ran an authorization: connecting must never open a browser")
	}

	res, err := e.a.Login(ctx, "tracker", e.cfg, nil)
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	if res.Issuer != e.fx.Issuer || !slices.Equal(res.Scopes, []string{"read"}) || !res.ExpiresAt.Equal(e.clock.Now().Add(time.Hour).Truncate(time.Second)) && res.ExpiresAt.Sub(e.clock.Now()) > time.Hour+time.Second {
		t.Fatalf("Login result = %+v", res)
	}
	if st, err := os.Stat(e.store); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token store %v, mode %v; want 0600", err, st.Mode())
	}
	if n := e.fx.Registrations(); n != 1 {
		t.Fatalf("registrations = %d, want 1", n)
	}

	cs, err := e.connect(t, e.a.Handler("tracker", e.cfg, nil))
	if err != nil {
		t.Fatalf("connect with the stored token: %v", err)
	}
	if out, err := call(t, cs, "read"); err != nil || out != "read ok" {
		t.Fatalf("read = %q, %v", out, err)
	}

	// Past expiry: the next request refreshes first.
	before, _ := e.a.Store().Load(ctx, e.fx.URL)
	e.clock.Add(2 * time.Hour)
	if out, err := call(t, cs, "read"); err != nil || out != "read ok" {
		t.Fatalf("read after expiry = %q, %v", out, err)
	}
	after, _ := e.a.Store().Load(ctx, e.fx.URL)
	if e.fx.Refreshes() != 1 || after.Token.RefreshToken == before.Token.RefreshToken || after.Token.AccessToken == before.Token.AccessToken {
		t.Fatalf("refreshes = %d; rotated refresh token saved: %t", e.fx.Refreshes(), after.Token.RefreshToken != before.Token.RefreshToken)
	}

	// The server forgets the access token: the 401 leads to a refresh and
	// a retry.
	e.fx.ForgetAccessTokens()
	if out, err := call(t, cs, "read"); err != nil || out != "read ok" {
		t.Fatalf("read after the server forgot the token = %q, %v", out, err)
	}
	if e.fx.Refreshes() != 2 {
		t.Fatalf("refreshes = %d, want 2 (on the 401)", e.fx.Refreshes())
	}

	// A step-up without a user fails the call naming the login and the scope.
	_, err = call(t, cs, "write")
	if err == nil || !strings.Contains(err.Error(), "mcp-audit auth login tracker") || !strings.Contains(err.Error(), "write") {
		t.Fatalf("write without the scope: %v", err)
	}
	errTexts = append(errTexts, err.Error())

	// An interactive handler steps up: one more authorization, asking for
	// what was granted and what the challenge wants.
	cs2, err := e.connect(t, e.a.Handler("tracker", e.cfg, &oauth.HandlerOptions{Interactive: true}))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := call(t, cs2, "write"); err != nil || out != "write ok" {
		t.Fatalf("write after the step-up = %q, %v", out, err)
	}
	auths := e.fx.Authorizations()
	// Scope order is not significant (RFC 6749 §3.3), and the SDK merges
	// the granted and challenged scopes in no fixed order.
	if len(auths) != 2 || !slices.Equal(slices.Sorted(slices.Values(auths[1])), []string{"read", "write"}) {
		t.Fatalf("authorizations = %v, want the step-up to ask for read write", auths)
	}
	if n := e.fx.Registrations(); n != 1 {
		t.Fatalf("registrations = %d after a second login, want the first reused", n)
	}

	st, err := e.a.Status(ctx, e.fx.URL)
	if err != nil || st.State != "authenticated" || !slices.Equal(st.Scopes, []string{"read", "write"}) {
		t.Fatalf("Status = %+v, %v", st, err)
	}
	last, _ := e.a.Store().Load(ctx, e.fx.URL)
	revoked, err := e.a.Logout(ctx, e.fx.URL, e.cfg)
	if err != nil || !revoked {
		t.Fatalf("Logout = %t, %v", revoked, err)
	}
	if !slices.Contains(e.fx.Revoked(), last.Token.RefreshToken) {
		t.Fatal("the refresh token was not revoked")
	}
	if _, err := e.a.Store().Load(ctx, e.fx.URL); !errors.Is(err, oauth.ErrNoToken) {
		t.Fatalf("Load after logout: %v", err)
	}
	if st, _ := e.a.Status(ctx, e.fx.URL); st.State != "none" {
		t.Fatalf("Status after logout = %+v", st)
	}
	noLeak(t, e.fx, map[string]string{"errors": strings.Join(errTexts, "\n"), "logs": e.logs.String()})
}

// TestRegistrationReusedAcrossAuthorizers: a second process (another
// Authorizer on the same store) logs in with the stored registration.
func TestRegistrationReusedAcrossAuthorizers(t *testing.T) {
	e := setUp(t)
	if _, err := e.a.Login(t.Context(), "tracker", e.cfg, nil); err != nil {
		t.Fatal(err)
	}
	b, err := oauth.New(&oauth.Options{Store: oauth.NewFileStore(e.store), Open: oauthfixture.Browser, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Login(t.Context(), "tracker", e.cfg, nil); err != nil {
		t.Fatal(err)
	}
	if n := e.fx.Registrations(); n != 1 {
		t.Fatalf("registrations = %d, want 1", n)
	}
}

// TestLoginRefused: a browser that never reaches the redirect ends the
// login with ctx, and the error holds no secret.
func TestLoginRefused(t *testing.T) {
	e := setUp(t)
	a, err := oauth.New(&oauth.Options{Store: oauth.NewMemoryStore(), Open: func(context.Context, io.Writer, string) error {
		return errors.New("no browser here")
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Login(t.Context(), "tracker", e.cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "no browser here") {
		t.Fatalf("Login = %v", err)
	}
	noLeak(t, e.fx, map[string]string{"error": err.Error()})
}
