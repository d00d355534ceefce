package manager

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/oauthfixture"
	"github.com/mcplife/mcplife/oauth"
	"github.com/mcplife/mcplife/projector"
)

// TestNeedsAuthThenLogin: a server behind OAuth without a token records
// AuthRequired (issuer and scopes from its metadata, RFC 9728 and RFC
// 8414), gets status and gate outcome needs-auth, and holds nobody up:
// the other server connects. Login (authorization code with PKCE and
// dynamic registration) records AuthCompleted and connects it; its tools
// work. A call that needs a scope the token lacks fails naming the login
// command. No token, code or secret reaches an event or a log. The same
// holds for the legacy HTTP+SSE transport, whose requests the manager
// authorizes itself (the go-sdk's SSE client takes no OAuth handler).
func TestNeedsAuthThenLogin(t *testing.T) {
	for _, transport := range []string{events.TransportHTTP, events.TransportSSE} {
		t.Run(transport, func(t *testing.T) { testNeedsAuthThenLogin(t, transport) })
	}
}

func testNeedsAuthThenLogin(t *testing.T, transport string) {
	fx, err := oauthfixture.Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fx.Close() }) // after the manager closes (cleanups run last first)
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := oauth.New(&oauth.Options{Store: oauth.NewMemoryStore(), Open: oauthfixture.Browser, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, &Options{Auth: AuthOptions{OAuth: a}, Logger: log})
	ctx := testCtx(t)
	tracker := events.ServerConfig{Name: "tracker", Type: transport, URL: fx.URL}
	if transport == events.TransportSSE {
		tracker.URL = fx.SSEURL
	}
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{tracker, stdio(t, "local")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Gate.Outcomes; got["tracker"] != events.OutcomeNeedsAuth || got["local"] != events.OutcomeReady {
		t.Fatalf("gate outcomes = %v", got)
	}
	if st := e.m.Status("tracker"); st != projector.StatusNeedsAuth {
		t.Fatalf("status = %s, want needs-auth", st)
	}
	contains(t, "connect error", res.Errors["tracker"].Error(), "mcp-audit auth login tracker")
	if !slices.Equal(e.m.NeedsAuth(), []string{"tracker"}) {
		t.Fatalf("NeedsAuth = %v", e.m.NeedsAuth())
	}
	req := ofType[*events.AuthRequired](e, e.session)
	if len(req) != 1 || req[0].Issuer != fx.Issuer || !slices.Equal(req[0].Scopes, []string{"read"}) {
		t.Fatalf("AuthRequired = %+v", req)
	}
	if len(fx.Authorizations()) != 0 {
		t.Fatal("connecting opened the browser")
	}

	r, err := e.m.Login(ctx, "tracker")
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	if !slices.Equal(r.Scopes, []string{"read"}) {
		t.Fatalf("Login scopes = %v", r.Scopes)
	}
	if st := e.m.Status("tracker"); st != projector.StatusConnected {
		t.Fatalf("status after login = %s", st)
	}
	done := ofType[*events.AuthCompleted](e, e.session)
	if len(done) != 1 || done[0].Issuer != fx.Issuer || done[0].ExpiresAt.IsZero() || done[0].Grant != events.GrantAuthorizationCode {
		t.Fatalf("AuthCompleted = %+v", done)
	}
	out, err := tool(t, e.m, "mcp_tracker_read").Call(ctx, map[string]any{})
	if err != nil || out.Result.IsError {
		t.Fatalf("read: %+v, %v", out, err)
	}
	out, err = tool(t, e.m, "mcp_tracker_write").Call(ctx, map[string]any{})
	if err == nil && !out.Result.IsError {
		t.Fatal("write without the scope succeeded")
	}
	var text string
	if err != nil {
		text = err.Error()
	} else {
		text = textOf(out.Result.Content[0])
	}
	contains(t, "step-up error", text, "mcp-audit auth login tracker")
	contains(t, "step-up error", text, "write")
	// The refusal failed that call only: the connection serves the next.
	if out, err := tool(t, e.m, "mcp_tracker_read").Call(ctx, map[string]any{}); err != nil || out.Result.IsError {
		t.Fatalf("read after the refused write: %+v, %v", out, err)
	}
	equal(t, "tracker events", e.serverTypes(e.session, "tracker")[:5],
		[]string{"ServerDiscovered", "ConnectStarted", "ConnectFailed", "AuthRequired", "AuthCompleted"})
	checkReplay(t, e)

	var stored strings.Builder
	for _, env := range e.events(e.session) {
		stored.Write(env.Data)
	}
	for _, s := range fx.Issued() {
		if strings.Contains(stored.String(), s) || strings.Contains(logs.String(), s) || strings.Contains(text, s) {
			t.Errorf("an issued secret (%s…) reached an event, a log or an error", s[:8])
		}
	}
}

// TestLoginFailureRecorded: a login that cannot finish (the browser never
// reaches the redirect) records AuthFailed, and the server stays
// needs-auth, waiting for the next login.
func TestLoginFailureRecorded(t *testing.T) {
	fx, err := oauthfixture.Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fx.Close() })
	a, err := oauth.New(&oauth.Options{Store: oauth.NewMemoryStore(), Open: func(context.Context, io.Writer, string) error {
		return errors.New("no browser on this host")
	}})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, &Options{Auth: AuthOptions{OAuth: a}})
	ctx := testCtx(t)
	if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{{Name: "tracker", Type: events.TransportHTTP, URL: fx.URL}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Login(ctx, "tracker"); err == nil {
		t.Fatal("Login succeeded without a browser")
	}
	failed := ofType[*events.AuthFailed](e, e.session)
	if len(failed) != 1 || !strings.Contains(failed[0].Error, "no browser on this host") {
		t.Fatalf("AuthFailed = %+v", failed)
	}
	if st := e.m.Status("tracker"); st != projector.StatusNeedsAuth || !slices.Equal(e.m.NeedsAuth(), []string{"tracker"}) {
		t.Fatalf("status %s, waiting %v", st, e.m.NeedsAuth())
	}
}

// TestEchoedOAuthTokenScrubbed: a server that says back the bearer token
// it was sent, in its instructions, a tool's description and a call's
// JSON-RPC error, does not get the stored OAuth token into an event.
func TestEchoedOAuthTokenScrubbed(t *testing.T) {
	const token = "at-ECHOED7oauth9Token"
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		said := "you sent " + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, &mcp.ServerOptions{Instructions: said})
		s.AddTool(&mcp.Tool{Name: "t", Description: said, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return nil, &jsonrpc.Error{Code: -32000, Message: said}
			})
		return s
	}, &mcp.StreamableHTTPOptions{JSONResponse: true}))
	t.Cleanup(srv.Close)
	url := srv.URL + "/mcp"
	store := oauth.NewMemoryStore()
	if err := store.Save(context.Background(), &oauth.Entry{ServerURL: url, Issuer: srv.URL,
		Token: oauth.Token{AccessToken: token, TokenType: "Bearer"}, Grant: events.GrantAuthorizationCode}); err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := oauth.New(&oauth.Options{Store: store, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, &Options{Auth: AuthOptions{OAuth: a}, Logger: log})
	ctx := testCtx(t)
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{{Name: "echo", Type: events.TransportHTTP, URL: url}}, nil)
	if err != nil || len(res.Errors) > 0 {
		t.Fatal(res, err)
	}
	if s := e.m.Instructions("echo"); s != "you sent "+events.Redacted {
		t.Fatalf("instructions %q: the server did not get the token, or it was kept", s)
	}
	out, err := tool(t, e.m, "mcp_echo_t").Call(ctx, map[string]any{})
	if err != nil || !out.Result.IsError {
		t.Fatalf("call: %+v, %v", out, err)
	}
	fin := ofType[*events.ToolCallFinished](e, e.session)
	if len(fin) != 1 || !strings.Contains(fin[0].Error, "you sent") {
		t.Fatalf("ToolCallFinished = %+v", fin)
	}
	var stored strings.Builder
	for _, env := range e.events(e.session) {
		stored.Write(env.Data)
	}
	if !strings.Contains(stored.String(), "you sent") {
		t.Fatal("nothing the server said was recorded")
	}
	if strings.Contains(stored.String(), token) || strings.Contains(logs.String(), token) {
		t.Errorf("the OAuth token reached an event or a log:\n%s", stored.String())
	}
}
