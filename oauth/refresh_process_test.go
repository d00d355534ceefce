package oauth_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/oauthfixture"
	"github.com/mcplife/mcplife/oauth"
)

// loggedIn starts a fixture authorization server that detects the reuse
// of a spent refresh token, logs in to it through store, and makes the
// stored token expired, as it is when a host has run for longer than its
// lifetime.
func loggedIn(t *testing.T, store string) *oauthfixture.Server {
	t.Helper()
	fx, err := oauthfixture.Start(&oauthfixture.Options{TokenTTL: time.Hour, ReuseDetection: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fx.Close() })
	st := oauth.NewFileStore(store)
	a, err := oauth.New(&oauth.Options{Store: st, Open: oauthfixture.Browser})
	if err != nil {
		t.Fatal(err)
	}
	cfg := events.ServerConfig{Name: "tracker", Type: events.TransportHTTP, URL: fx.URL}
	if _, err := a.Login(t.Context(), "tracker", cfg, nil); err != nil {
		t.Fatalf("Login: %v", err)
	}
	e, err := st.Load(t.Context(), fx.URL)
	if err != nil {
		t.Fatal(err)
	}
	e.Token.Expiry = time.Now().Add(-time.Minute)
	e.SavedAt = e.Token.Expiry.Add(-time.Hour)
	if err := st.Save(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	return fx
}

// checkRefreshed fails unless the store holds a token of fx's server
// that has not expired, with the refresh token fx would accept next, and
// fx was asked for exactly one refresh.
func checkRefreshed(t *testing.T, store string, fx *oauthfixture.Server) {
	t.Helper()
	e, err := oauth.NewFileStore(store).Load(t.Context(), fx.URL)
	if err != nil {
		t.Fatal(err)
	}
	if !e.Token.Expiry.After(time.Now()) {
		t.Errorf("%s: the stored token expired at %v: the refreshed token was not kept", fx.URL, e.Token.Expiry)
	}
	if !fx.RefreshTokenLive(e.Token.RefreshToken) {
		t.Errorf("%s: the stored refresh token is not the live one", fx.URL)
	}
	if n := fx.RefreshRequests(); n != 1 {
		t.Errorf("%s: the authorization server was asked for %d refreshes, want 1", fx.URL, n)
	}
}

// TestRefreshOfProcessesAtOnce: several processes holding the same
// expired token refresh it at the same moment against an authorization
// server whose refresh tokens work once and whose reuse revokes the
// grant. One of them refreshes; the others use the token it saved: every
// call goes through, nobody needs a login, and the stored refresh token
// is the live one.
func TestRefreshOfProcessesAtOnce(t *testing.T) {
	store := filepath.Join(t.TempDir(), "mcplife", "oauth.json")
	fx := loggedIn(t, store)
	var ps []*helperProc
	for range 4 {
		ps = append(ps, startHelper(t, helperArgs{Mode: "refresh", Store: store, URL: fx.URL}, "ready"))
	}
	runAtOnce(t, ps)
	for i, p := range ps {
		if strings.Join(p.lines, "\n") != "read ok" {
			t.Errorf("helper %d printed %q, want read ok", i, p.lines)
		}
	}
	checkRefreshed(t, store, fx)
	a, err := oauth.New(&oauth.Options{Store: oauth.NewFileStore(store)})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := a.Status(t.Context(), fx.URL); err != nil || st.State != "authenticated" {
		t.Errorf("Status = %+v, %v", st, err)
	}
}

// TestRefreshOfDistinctServersAtOnce: processes each refreshing the
// token of another server at the same moment, all in one store, keep
// every refreshed token: no process's save drops another's.
func TestRefreshOfDistinctServersAtOnce(t *testing.T) {
	store := filepath.Join(t.TempDir(), "mcplife", "oauth.json")
	var fxs []*oauthfixture.Server
	for range 4 {
		fxs = append(fxs, loggedIn(t, store))
	}
	var ps []*helperProc
	for _, fx := range fxs {
		ps = append(ps, startHelper(t, helperArgs{Mode: "refresh", Store: store, URL: fx.URL}, "ready"))
	}
	runAtOnce(t, ps)
	for i, p := range ps {
		if strings.Join(p.lines, "\n") != "read ok" {
			t.Errorf("helper %d printed %q, want read ok", i, p.lines)
		}
	}
	for _, fx := range fxs {
		checkRefreshed(t, store, fx)
	}
}
