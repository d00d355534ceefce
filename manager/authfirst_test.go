package manager

import (
	"context"
	"io"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/oauthfixture"
	"github.com/mcplife/mcplife/oauth"
	"github.com/mcplife/mcplife/projector"
)

// countingBrowser is the fixture's browser, counting the logins it ran.
func countingBrowser(n *atomic.Int32) func(context.Context, io.Writer, string) error {
	return func(ctx context.Context, w io.Writer, u string) error {
		n.Add(1)
		return oauthfixture.Browser(ctx, w, u)
	}
}

// TestListNeedsAuthThenLogin: a server that lets an unauthenticated
// initialize through and answers the first tools/list with 401 needs a
// login as one that refuses the connect does: the failed list, the end of
// the connection and AuthRequired are recorded, the gate's outcome and
// the status are needs-auth, the server waits for a login (NeedsAuth),
// and no browser opened. Login connects it and its tools work.
func TestListNeedsAuthThenLogin(t *testing.T) {
	fx, err := oauthfixture.Start(&oauthfixture.Options{Unprotected: []string{"initialize", "notifications/"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fx.Close() })
	var opened atomic.Int32
	a, err := oauth.New(&oauth.Options{Store: oauth.NewMemoryStore(), Open: countingBrowser(&opened)})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, &Options{Auth: AuthOptions{OAuth: a, Interactive: true}})
	ctx := testCtx(t)
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{{Name: "tracker", Type: events.TransportHTTP, URL: fx.URL}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Gate.Outcomes["tracker"]; got != events.OutcomeNeedsAuth {
		t.Fatalf("gate outcome = %s, want needs-auth", got)
	}
	contains(t, "list error", res.Errors["tracker"].Error(), "mcp-audit auth login tracker")
	if st := e.m.Status("tracker"); st != projector.StatusNeedsAuth || !slices.Equal(e.m.NeedsAuth(), []string{"tracker"}) {
		t.Fatalf("status %s, waiting %v", st, e.m.NeedsAuth())
	}
	if opened.Load() != 0 {
		t.Fatal("connecting opened the browser")
	}
	equal(t, "tracker events", e.serverTypes(e.session, "tracker"),
		[]string{"ServerDiscovered", "ConnectStarted", "ServerConnected", "ToolsListFailed", "Disconnected/error", "AuthRequired"})
	if req := ofType[*events.AuthRequired](e, e.session); len(req) != 1 || req[0].Issuer != fx.Issuer {
		t.Fatalf("AuthRequired = %+v", req)
	}

	if _, err := e.m.Login(ctx, "tracker"); err != nil {
		t.Fatalf("Login: %v", err)
	}
	if st := e.m.Status("tracker"); st != projector.StatusConnected || len(e.m.NeedsAuth()) != 0 {
		t.Fatalf("after the login: status %s, waiting %v", st, e.m.NeedsAuth())
	}
	if out, err := tool(t, e.m, "mcp_tracker_read").Call(ctx, map[string]any{}); err != nil || out.Result.IsError {
		t.Fatalf("read: %+v, %v", out, err)
	}
	if opened.Load() != 1 {
		t.Fatalf("%d logins, want 1", opened.Load())
	}
	checkReplay(t, e)
}

// TestDiscoverNeedsAuthThenLogin: a stateless server (2026-07-28) whose
// server/discover needs a token answers 401; the go-sdk then falls back
// to initialize, which such a server refuses with a 400. The connect
// needs a login all the same, not a plain failure; the login speaks the
// server's protocol (its initialize would be refused as well) and the
// server connects after it at that protocol.
func TestDiscoverNeedsAuthThenLogin(t *testing.T) {
	fx, err := oauthfixture.Start(&oauthfixture.Options{Stateless: true, ModernOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fx.Close() })
	a, err := oauth.New(&oauth.Options{Store: oauth.NewMemoryStore(), Open: oauthfixture.Browser})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, &Options{Auth: AuthOptions{OAuth: a}})
	ctx := testCtx(t)
	cfg := events.ServerConfig{Name: "tracker", Type: events.TransportHTTP, URL: fx.URL, ProtocolVersion: "2026-07-28"}
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{cfg}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Gate.Outcomes["tracker"]; got != events.OutcomeNeedsAuth {
		t.Fatalf("gate outcome = %s (%v), want needs-auth", got, res.Errors["tracker"])
	}
	if req := ofType[*events.AuthRequired](e, e.session); len(req) != 1 || req[0].Issuer != fx.Issuer {
		t.Fatalf("AuthRequired = %+v", req)
	}
	if _, err := e.m.Login(ctx, "tracker"); err != nil {
		t.Fatalf("Login: %v", err)
	}
	if st := e.m.Status("tracker"); st != projector.StatusConnected {
		t.Fatalf("status after the login = %s; events %v; failed %+v", st, e.serverTypes(e.session, "tracker"), *ofType[*events.ConnectFailed](e, e.session)[1])
	}
	conn := ofType[*events.ServerConnected](e, e.session)
	if len(conn) != 1 || conn[0].ProtocolVersion != "2026-07-28" {
		t.Fatalf("ServerConnected = %+v", conn)
	}
	if out, err := tool(t, e.m, "mcp_tracker_read").Call(ctx, map[string]any{}); err != nil || out.Result.IsError {
		t.Fatalf("read: %+v, %v", out, err)
	}
}

// TestLoginFollowsEra: a login to a server whose config pins no version
// speaks the server's era as the tool cache last recorded it, here the
// stateless protocol, though the manager's own connects speak
// 2025-11-25: the login's session starts with server/discover.
func TestLoginFollowsEra(t *testing.T) {
	fx, err := oauthfixture.Start(&oauthfixture.Options{Stateless: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fx.Close() })
	a, err := oauth.New(&oauth.Options{Store: oauth.NewMemoryStore(), Open: oauthfixture.Browser})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, &Options{Auth: AuthOptions{OAuth: a}})
	ctx := testCtx(t)
	cfg := events.ServerConfig{Name: "tracker", Type: events.TransportHTTP, URL: fx.URL}
	// An earlier session met the server at the stateless protocol.
	if _, err := e.j.Append(ctx, "s0", &events.ServerEraDetected{Server: "tracker", ConfigHash: cfg.Hash(), Era: events.EraModern,
		ProtocolVersion: "2026-07-28", SupportedVersions: []string{"2026-07-28"}}); err != nil {
		t.Fatal(err)
	}
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{cfg}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Gate.Outcomes["tracker"]; got != events.OutcomeNeedsAuth {
		t.Fatalf("gate outcome = %s (%v), want needs-auth", got, res.Errors["tracker"])
	}
	before := len(fx.Methods())
	if _, err := e.m.Login(ctx, "tracker"); err != nil {
		t.Fatalf("Login: %v", err)
	}
	if got := fx.Methods(); len(got) <= before || got[before] != "server/discover" {
		t.Fatalf("the login's session sent %v, want server/discover first", got[before:])
	}
}

// TestCallUnauthorizedLogsInWhenInteractive: a server that lets the
// connect and tools/list through without a token and answers a call with
// 401 gets a browser login for that call when the host is interactive
// (the call then succeeds, AuthCompleted recorded); otherwise the call
// fails naming the login command and no browser opens.
func TestCallUnauthorizedLogsInWhenInteractive(t *testing.T) {
	for _, interactive := range []bool{false, true} {
		fx, err := oauthfixture.Start(&oauthfixture.Options{Unprotected: []string{"initialize", "notifications/", "tools/list", "resources/", "prompts/"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fx.Close() })
		var opened atomic.Int32
		a, err := oauth.New(&oauth.Options{Store: oauth.NewMemoryStore(), Open: countingBrowser(&opened)})
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, &Options{Auth: AuthOptions{OAuth: a, Interactive: interactive}})
		ctx := testCtx(t)
		if _, err := e.m.ConnectServers(ctx, []events.ServerConfig{{Name: "tracker", Type: events.TransportHTTP, URL: fx.URL}}, nil); err != nil {
			t.Fatal(err)
		}
		if st := e.m.Status("tracker"); st != projector.StatusConnected {
			t.Fatalf("interactive %v: status %s", interactive, st)
		}
		out, err := tool(t, e.m, "mcp_tracker_read").Call(ctx, map[string]any{})
		if !interactive {
			if err == nil && !out.Result.IsError {
				t.Fatal("a call without a token succeeded")
			}
			text := ""
			if err != nil {
				text = err.Error()
			} else {
				text = textOf(out.Result.Content[0])
			}
			contains(t, "call error", text, "mcp-audit auth login tracker")
			if opened.Load() != 0 {
				t.Fatal("a host that is not interactive opened the browser")
			}
			continue
		}
		if err != nil || out.Result.IsError {
			t.Fatalf("call after the login: %+v, %v", out, err)
		}
		if opened.Load() != 1 || len(ofType[*events.AuthCompleted](e, e.session)) != 1 {
			t.Fatalf("%d logins, AuthCompleted %+v; methods %v", opened.Load(), ofType[*events.AuthCompleted](e, e.session), fx.Methods())
		}
	}
}
