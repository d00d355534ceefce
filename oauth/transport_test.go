package oauth_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
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

// originServers starts a server that redirects /same to its own /final
// and /away to another origin's /final (another port on the same host),
// and the other origin; both record the Authorization and X-Api-Key
// headers of every request.
func originServers(t *testing.T) (home, other *httptest.Server, seen func(srv *httptest.Server) []string) {
	var mu sync.Mutex
	got := map[*httptest.Server][]string{}
	record := func(srv **httptest.Server, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got[*srv] = append(got[*srv], r.URL.Path+" Authorization="+r.Header.Get("Authorization")+" X-Api-Key="+r.Header.Get("X-Api-Key"))
	}
	other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { record(&other, r) }))
	t.Cleanup(other.Close)
	home = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(&home, r)
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/final", http.StatusTemporaryRedirect)
		case "/away":
			http.Redirect(w, r, other.URL+"/final", http.StatusTemporaryRedirect)
		}
	}))
	t.Cleanup(home.Close)
	return home, other, func(srv *httptest.Server) []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got[srv])
	}
}

// TestTransportKeepsTheTokenOnItsOrigin: oauth.Transport sends the stored
// token to the server's origin, also after a redirect within it, but
// never to another origin a redirect leads to, although Go's client
// would forward it to the same host on another port.
func TestTransportKeepsTheTokenOnItsOrigin(t *testing.T) {
	home, other, seen := originServers(t)
	cfg := events.ServerConfig{Name: "tracker", Type: events.TransportSSE, URL: home.URL + "/sse"}
	store := oauth.NewMemoryStore()
	store.Save(t.Context(), &oauth.Entry{ServerURL: cfg.URL, Issuer: "https://as.example", Token: oauth.Token{AccessToken: "at-origin-secret", TokenType: "Bearer"}})
	a, err := oauth.New(&oauth.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: oauth.Transport(nil, a.Handler("tracker", cfg, nil))}
	for _, path := range []string{"/same", "/away"} {
		resp, err := client.Get(home.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	want := []string{"/same Authorization=Bearer at-origin-secret X-Api-Key=", "/final Authorization=Bearer at-origin-secret X-Api-Key=", "/away Authorization=Bearer at-origin-secret X-Api-Key="}
	if got := seen(home); !slices.Equal(got, want) {
		t.Errorf("the server's origin received %q, want %q", got, want)
	}
	if got := seen(other); !slices.Equal(got, []string{"/final Authorization= X-Api-Key="}) {
		t.Errorf("the other origin received %q, want one request without the token", got)
	}
}

// TestLoginKeepsHeadersOnTheirOrigin: a login to a server whose URL
// redirects to another origin sends the configured headers to the
// server's origin only.
func TestLoginKeepsHeadersOnTheirOrigin(t *testing.T) {
	var atOther fixturetest.RequestLog
	sink := fixturetest.Serve(t, &fixturetest.HTTPOptions{OnRequest: atOther.Record}, "only=echo")
	var atHome fixturetest.RequestLog
	home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atHome.Record(r)
		http.Redirect(w, r, sink, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(home.Close)
	a, err := oauth.New(&oauth.Options{Store: oauth.NewMemoryStore()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := events.ServerConfig{Name: "moved", Type: events.TransportHTTP, URL: home.URL + "/mcp"}
	if _, err := a.Login(t.Context(), "moved", cfg, map[string]string{"X-Api-Key": "key-login-secret"}); !errors.Is(err, oauth.ErrNotRequired) {
		t.Fatalf("Login = %v, want ErrNotRequired (the server behind the redirect needs no token)", err)
	}
	if len(atHome.Requests()) == 0 || len(atOther.Requests()) == 0 {
		t.Fatalf("%d requests at the server's origin, %d at the other", len(atHome.Requests()), len(atOther.Requests()))
	}
	for _, r := range atHome.Requests() {
		if r.Header.Get("X-Api-Key") != "key-login-secret" {
			t.Errorf("%s %s at the server's origin went without the configured header", r.Method, r.Path)
		}
	}
	for _, r := range atOther.Requests() {
		if v := r.Header.Get("X-Api-Key"); v != "" {
			t.Errorf("%s %s at the other origin carried the configured header", r.Method, r.Path)
		}
	}
}
