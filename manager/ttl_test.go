package manager_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/oauth"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
)

// modernProtocol is the first protocol version whose list results carry
// cache hints.
const modernProtocol = "2026-07-28"

// ttlServer is an in-process go-sdk server whose list results carry the
// cache hints hints returns for each request (all public for a minute
// unless a test says otherwise); it counts the tools/list requests it
// answers.
type ttlServer struct {
	srv   *mcp.Server
	lists atomic.Int32

	mu    sync.Mutex
	hints func(method, cursor string) mcp.Cacheable // (mu)
}

func newTTLServer(t *testing.T, opts *mcp.ServerOptions) *ttlServer {
	t.Helper()
	ts := &ttlServer{hints: func(string, string) mcp.Cacheable { return mcp.Cacheable{TTLMs: 60_000, CacheScope: "public"} }}
	o := mcp.ServerOptions{}
	if opts != nil {
		o = *opts
	}
	o.SetCacheable = func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
		cursor := ""
		switch p := req.GetParams().(type) {
		case *mcp.ListToolsParams:
			cursor = p.Cursor
		case *mcp.ListPromptsParams:
			cursor = p.Cursor
		case *mcp.ListResourcesParams:
			cursor = p.Cursor
		case *mcp.ListResourceTemplatesParams:
			cursor = p.Cursor
		}
		ts.mu.Lock()
		*c = ts.hints(methodOf(req), cursor)
		ts.mu.Unlock()
	}
	ts.srv = mcp.NewServer(&mcp.Implementation{Name: "ttl", Version: "1"}, &o)
	for _, name := range []string{"alpha", "beta"} {
		addEcho(ts.srv, name)
	}
	ts.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				ts.lists.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	return ts
}

// methodOf names the list method of req by its params.
func methodOf(req mcp.Request) string {
	switch req.GetParams().(type) {
	case *mcp.ListToolsParams:
		return "tools/list"
	case *mcp.ListPromptsParams:
		return "prompts/list"
	case *mcp.ListResourcesParams:
		return "resources/list"
	case *mcp.ListResourceTemplatesParams:
		return "resources/templates/list"
	}
	return ""
}

// setHints makes the server answer with the hints h returns from now on.
func (ts *ttlServer) setHints(h func(method, cursor string) mcp.Cacheable) {
	ts.mu.Lock()
	ts.hints = h
	ts.mu.Unlock()
}

// addEcho adds a tool that answers with its own name.
func addEcho(srv *mcp.Server, name string) {
	mcp.AddTool(srv, &mcp.Tool{Name: name, Description: "says " + name}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
	})
}

// dial connects a new in-memory session of the server.
func (ts *ttlServer) dial(ctx context.Context, _ events.ServerConfig) (mcp.Transport, error) {
	st, ct := mcp.NewInMemoryTransports()
	if _, err := ts.srv.Connect(ctx, st, nil); err != nil {
		return nil, err
	}
	return ct, nil
}

// ttlConfig is the config the tests connect the server under.
var ttlConfig = events.ServerConfig{Name: "ttl", Command: "in-process"}

// hostJournal returns a journal on st stamping host as its host id.
func hostJournal(t *testing.T, st store.Store, host string) *journal.Journal {
	t.Helper()
	j, err := journal.New(st, &journal.Options{Host: host})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// ttlManager starts a manager of session on j dialling ts at protocol pv
// ("" for the manager's default), connects ttlConfig and returns it with
// the connect's result.
func ttlManager(t *testing.T, j *journal.Journal, session string, ts *ttlServer, pv string, dial func(context.Context, events.ServerConfig) (mcp.Transport, error)) (*manager.Manager, *manager.ConnectResult) {
	t.Helper()
	if dial == nil {
		dial = ts.dial
	}
	m, err := manager.New(j, session, &manager.Options{
		Gate: time.Minute, Cwd: t.TempDir(), ProtocolVersion: pv, Dial: dial,
		Health: manager.HealthOptions{Interval: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	res, err := m.ConnectServers(t.Context(), []events.ServerConfig{ttlConfig}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m, res
}

// sessionEvents returns the decoded events of session of type T.
func sessionEvents[T events.Event](t *testing.T, j *journal.Journal, session string) []T {
	t.Helper()
	if err := j.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var out []T
	for env, err := range j.Store().ReadStream(context.Background(), session, 1) {
		if err != nil {
			t.Fatal(err)
		}
		ev, err := events.Decode(env)
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := ev.(T); ok {
			out = append(out, e)
		}
	}
	return out
}

// toolNamesOf returns the names of the manager's tools.
func toolNamesOf(m *manager.Manager) []string {
	var out []string
	for _, t := range m.Tools() {
		out = append(out, t.Name)
	}
	return out
}

// The lists of a server of protocol 2026-07-28 are recorded with their
// cache hints: the smallest ttlMs of the pages, private when any page is.
func TestListsRecordTheirCacheHints(t *testing.T) {
	ts := newTTLServer(t, &mcp.ServerOptions{PageSize: 1})
	ts.srv.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	ts.srv.AddResource(&mcp.Resource{URI: "file:///a", Name: "a"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	ts.setHints(func(method, cursor string) mcp.Cacheable {
		switch {
		case method == "tools/list" && cursor == "":
			return mcp.Cacheable{TTLMs: 60_000, CacheScope: "public"}
		case method == "tools/list": // the second page
			return mcp.Cacheable{TTLMs: 5_000, CacheScope: events.CacheScopePrivate}
		case method == "prompts/list":
			return mcp.Cacheable{TTLMs: 7_000, CacheScope: "public"}
		}
		return mcp.Cacheable{CacheScope: "public"} // no ttlMs: not to be reused
	})
	j := hostJournal(t, memory.New(), "hostA")
	m, res := ttlManager(t, j, "s1", ts, modernProtocol, nil)
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	if got, want := toolNamesOf(m), []string{"mcp_ttl_alpha", "mcp_ttl_beta"}; !cmp.Equal(got, want) {
		t.Errorf("tools %v, want %v", got, want)
	}
	if n := ts.lists.Load(); n != 2 {
		t.Errorf("%d tools/list requests, want 2 (two pages)", n)
	}
	listed := sessionEvents[*events.ToolsListed](t, j, "s1")
	if len(listed) != 1 {
		t.Fatalf("%d ToolsListed, want 1", len(listed))
	}
	// No OAuth: a private list's context is none, kept for this host.
	if got, want := listed[0].CacheHints, (events.CacheHints{TTLMs: 5_000, CacheScope: events.CacheScopePrivate}); got != want {
		t.Errorf("tools' hints %+v, want %+v", got, want)
	}
	waitSurface(t, m)
	if ps := sessionEvents[*events.PromptsListed](t, j, "s1"); len(ps) != 1 || ps[0].CacheHints != (events.CacheHints{TTLMs: 7_000, CacheScope: "public"}) {
		t.Errorf("PromptsListed %+v, want one with ttlMs 7000, public", ps)
	}
	if rs := sessionEvents[*events.ResourcesListed](t, j, "s1"); len(rs) != 1 || rs[0].CacheHints != (events.CacheHints{CacheScope: "public"}) {
		t.Errorf("ResourcesListed %+v, want one public without ttlMs", rs)
	}
}

// waitSurface waits until the manager's view holds the server's resources
// and prompts, listed beside its first tools/list.
func waitSurface(t *testing.T, m *manager.Manager) {
	t.Helper()
	updates, err := m.Watch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for {
		if st, ok := m.View().Server("ttl"); ok && st.Resources != nil && st.Prompts != nil {
			return
		}
		select {
		case <-updates:
		case <-t.Context().Done():
			t.Fatal("resources and prompts never listed")
		}
	}
}

// A server of the legacy era sends no cache hints, and its lists are
// recorded as ever: no ttlMs or cacheScope in the stored events, even
// from a go-sdk server that would give them.
func TestLegacyListsRecordNoHints(t *testing.T) {
	ts := newTTLServer(t, nil)
	st := memory.New()
	j := hostJournal(t, st, "hostA")
	ttlManager(t, j, "s1", ts, "", nil)
	ttlManager(t, j, "s2", ts, "", nil)
	if n := ts.lists.Load(); n != 2 {
		t.Errorf("%d tools/list requests, want one per connection", n)
	}
	for _, s := range []string{"s1", "s2"} {
		listed := sessionEvents[*events.ToolsListed](t, j, s)
		if len(listed) != 1 || listed[0].CacheHints != (events.CacheHints{}) || listed[0].Cause != events.CauseInitial {
			t.Errorf("%s: ToolsListed %+v, want one initial list without hints", s, listed)
		}
	}
	for env, err := range st.ReadAll(context.Background(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		if env.Type == events.TypeToolsListed && (strings.Contains(string(env.Data), "ttlMs") || strings.Contains(string(env.Data), "cacheScope")) {
			t.Errorf("legacy ToolsListed records hints: %s", env.Data)
		}
	}
}

// A second manager on the journal connects a modern server whose tool
// list is still fresh in the cache without a tools/list, has its tools at
// once and can call them; its ToolsListed says the list came from the
// cache and does not renew the list's freshness. Once the ttlMs passed,
// the next connect lists again.
func TestFreshCachedToolsSkipToolsList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := newTTLServer(t, nil)
		j := hostJournal(t, memory.New(), "hostA")
		ttlManager(t, j, "s1", ts, modernProtocol, nil)
		if n := ts.lists.Load(); n != 1 {
			t.Fatalf("%d tools/list requests, want 1", n)
		}

		time.Sleep(20 * time.Second)
		m2, res := ttlManager(t, j, "s2", ts, modernProtocol, nil)
		if len(res.Errors) > 0 || res.Gate.Outcomes["ttl"] != events.OutcomeReady {
			t.Fatalf("errors %v, outcomes %v", res.Errors, res.Gate.Outcomes)
		}
		if n := ts.lists.Load(); n != 1 {
			t.Errorf("%d tools/list requests, want still 1: the fresh list stands for it", n)
		}
		if got, want := toolNamesOf(m2), []string{"mcp_ttl_alpha", "mcp_ttl_beta"}; !cmp.Equal(got, want) {
			t.Errorf("tools %v, want %v", got, want)
		}
		for _, tool := range m2.Tools() {
			if tool.Deferred {
				t.Errorf("%s deferred, want live", tool.Name)
			}
		}
		tool, ok := m2.Tool("mcp_ttl_beta")
		if !ok {
			t.Fatal("no mcp_ttl_beta")
		}
		if r, err := tool.Call(t.Context(), nil); err != nil || r.Text() != "beta" {
			t.Errorf("call: %v %v", r, err)
		}
		listed := sessionEvents[*events.ToolsListed](t, j, "s2")
		if len(listed) != 1 || listed[0].Cause != events.CauseCache || listed[0].CacheAge != 20*time.Second || listed[0].Count != 2 {
			t.Fatalf("ToolsListed %+v, want one of cause cache, 20s old", listed)
		}

		// 61 s after the listing: stale, though reused 41 s ago.
		time.Sleep(41 * time.Second)
		ttlManager(t, j, "s3", ts, modernProtocol, nil)
		if n := ts.lists.Load(); n != 2 {
			t.Errorf("%d tools/list requests, want 2: a stale list is fetched again", n)
		}
		if l := sessionEvents[*events.ToolsListed](t, j, "s3"); len(l) != 1 || l[0].Cause != events.CauseInitial {
			t.Errorf("ToolsListed %+v, want one initial", l)
		}
	})
}

// A connection at a legacy version never takes the cached list, however
// fresh: its server sent no hints to trust it by.
func TestLegacyConnectionListsDespiteFreshCache(t *testing.T) {
	ts := newTTLServer(t, nil)
	j := hostJournal(t, memory.New(), "hostA")
	ttlManager(t, j, "s1", ts, modernProtocol, nil)
	ttlManager(t, j, "s2", ts, "2025-11-25", nil)
	if n := ts.lists.Load(); n != 2 {
		t.Errorf("%d tools/list requests, want 2", n)
	}
}

// A list_changed on a connection that took its tools from the cache
// re-lists them: the cached list stands only for the first list.
func TestListChangedRelistsCachedTools(t *testing.T) {
	ts := newTTLServer(t, nil)
	j := hostJournal(t, memory.New(), "hostA")
	ttlManager(t, j, "s1", ts, modernProtocol, nil)
	m2, _ := ttlManager(t, j, "s2", ts, modernProtocol, nil)
	if n := ts.lists.Load(); n != 1 {
		t.Fatalf("%d tools/list requests, want 1", n)
	}
	updates, err := m2.Watch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	addEcho(ts.srv, "gamma")
	for {
		if _, ok := m2.Tool("mcp_ttl_gamma"); ok {
			break
		}
		select {
		case <-updates:
		case <-t.Context().Done():
			t.Fatal("the new tool never came")
		}
	}
	if n := ts.lists.Load(); n < 2 {
		t.Errorf("%d tools/list requests, want a re-list", n)
	}
}

// A private list is served only to the host (and authorization context)
// it was listed for: a manager of another host on the same store lists
// for itself and, at the gate, finds no deferred tools; a manager of the
// listing host takes it.
func TestPrivateListStaysWithItsHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := newTTLServer(t, nil)
		ts.setHints(func(string, string) mcp.Cacheable {
			return mcp.Cacheable{TTLMs: 60_000, CacheScope: events.CacheScopePrivate}
		})
		st := memory.New()
		jA := hostJournal(t, st, "hostA")
		ttlManager(t, jA, "a1", ts, modernProtocol, nil)
		if err := jA.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}

		jB := hostJournal(t, st, "hostB")
		ttlManager(t, jB, "b1", ts, modernProtocol, nil)
		if n := ts.lists.Load(); n != 2 {
			t.Errorf("%d tools/list requests, want 2: another host lists for itself", n)
		}
		ttlManager(t, jA, "a2", ts, modernProtocol, nil)
		if n := ts.lists.Load(); n != 2 {
			t.Errorf("%d tools/list requests, want still 2: the listing host takes its own list", n)
		}

		// A server that does not answer within the gate: a listing host
		// serves its private list deferred, a host that never listed has
		// nothing to serve.
		jC := hostJournal(t, st, "hostC")
		for _, tc := range []struct {
			j    *journal.Journal
			want events.Outcome
		}{{jA, events.OutcomeDeferred}, {jC, events.OutcomeAwaited}} {
			release := make(chan struct{})
			outcome := make(chan events.Outcome, 1)
			m, err := manager.New(tc.j, "gate-"+tc.j.Host(), &manager.Options{
				Gate: 100 * time.Millisecond, Cwd: t.TempDir(), ProtocolVersion: modernProtocol,
				Health: manager.HealthOptions{Interval: -1},
				OnGate: func(g manager.GateOutcome) { outcome <- g.Outcomes["ttl"] },
				Dial: func(ctx context.Context, cfg events.ServerConfig) (mcp.Transport, error) {
					select {
					case <-release:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
					return ts.dial(ctx, cfg)
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				m.ConnectServers(context.Background(), []events.ServerConfig{ttlConfig}, nil)
			}()
			if got := <-outcome; got != tc.want {
				t.Errorf("%s: gate outcome %s, want %s", tc.j.Host(), got, tc.want)
			}
			close(release)
			<-done
			m.Close(context.Background())
		}
	})
}

// The stored ToolsListed of a list taken from the cache decodes with its
// cause and age; an event recorded before it had them decodes as before.
func TestToolsListedCacheFieldsDecode(t *testing.T) {
	old := `{"server":"s","configHash":"h","tools":[],"toolsHash":"x","count":0,"duration":5,"cause":"initial"}`
	var ev events.ToolsListed
	if err := json.Unmarshal([]byte(old), &ev); err != nil || ev.CacheAge != 0 || ev.CacheHints != (events.CacheHints{}) {
		t.Fatalf("old event: %+v %v", ev, err)
	}
	b, err := json.Marshal(&ev)
	if err != nil || string(b) != old {
		t.Errorf("old event re-encodes as %s, want %s", b, old)
	}
}

// unsignedJWT returns a JWT whose payload is claims (the manager reads its
// subject, never checks it).
func unsignedJWT(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + ".c2ln"
}

// Over streamable HTTP with OAuth, a private list is recorded under the
// authorization it was listed with (the issuer and a hash of the token's
// subject, never the token): another user on the same host lists for
// himself, the same user takes the fresh list again, even with a
// refreshed token.
func TestPrivateListFollowsItsAuthorization(t *testing.T) {
	ts := newTTLServer(t, nil)
	ts.setHints(func(string, string) mcp.Cacheable {
		return mcp.Cacheable{TTLMs: 60_000, CacheScope: events.CacheScopePrivate}
	})
	tokens := map[string]string{
		"alice":       unsignedJWT(`{"sub":"alice","n":1}`),
		"alice-again": unsignedJWT(`{"sub":"alice","n":2}`),
		"bob":         unsignedJWT(`{"sub":"bob"}`),
	}
	// The go-sdk serves protocol 2026-07-28 over HTTP statelessly only.
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ts.srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	var unauthorized atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		for _, tok := range tokens {
			if got == tok {
				mcpHandler.ServeHTTP(w, r)
				return
			}
		}
		unauthorized.Add(1)
		http.Error(w, "no token", http.StatusUnauthorized)
	}))
	defer srv.Close()

	const issuer = "https://as.example"
	cfg := events.ServerConfig{Name: "ttl", URL: srv.URL}
	st := memory.New()
	j := hostJournal(t, st, "hostA")
	connect := func(session, user string) {
		t.Helper()
		store := oauth.NewMemoryStore()
		if err := store.Save(context.Background(), &oauth.Entry{ServerURL: srv.URL, Issuer: issuer, ClientID: "mcplife-test",
			Token: oauth.Token{AccessToken: tokens[user], TokenType: "Bearer"}}); err != nil {
			t.Fatal(err)
		}
		a, err := oauth.New(&oauth.Options{Store: store})
		if err != nil {
			t.Fatal(err)
		}
		m, err := manager.New(j, session, &manager.Options{
			Gate: time.Minute, Cwd: t.TempDir(), ProtocolVersion: modernProtocol,
			Health: manager.HealthOptions{Interval: -1}, Auth: manager.AuthOptions{OAuth: a},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close(context.Background())
		res, err := m.ConnectServers(t.Context(), []events.ServerConfig{cfg}, nil)
		if err != nil || len(res.Errors) > 0 {
			t.Fatalf("%s: %v %v", user, res.Errors, err)
		}
		if got := toolNamesOf(m); len(got) != 2 {
			t.Errorf("%s: tools %v", user, got)
		}
	}
	connect("s1", "alice")
	listed := sessionEvents[*events.ToolsListed](t, j, "s1")
	if len(listed) != 1 || !listed[0].Private() || !strings.HasPrefix(listed[0].AuthContext, issuer+" ") {
		t.Fatalf("ToolsListed %+v, want a private list under the issuer's context", *listed[0])
	}
	connect("s2", "bob")
	if n := ts.lists.Load(); n != 2 {
		t.Errorf("%d tools/list requests, want 2: another user lists for himself", n)
	}
	if l := sessionEvents[*events.ToolsListed](t, j, "s2"); len(l) != 1 || l[0].AuthContext == listed[0].AuthContext {
		t.Errorf("bob's ToolsListed %+v, want his own context", l)
	}
	connect("s3", "alice-again")
	if n := ts.lists.Load(); n != 2 {
		t.Errorf("%d tools/list requests, want still 2: alice's list is fresh for her", n)
	}
	if l := sessionEvents[*events.ToolsListed](t, j, "s3"); len(l) != 1 || l[0].Cause != events.CauseCache {
		t.Errorf("alice's second ToolsListed %+v, want one of cause cache", l)
	}
	if n := unauthorized.Load(); n != 0 {
		t.Errorf("%d requests without a token", n)
	}
	if err := j.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for env, err := range st.ReadAll(context.Background(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		for user, tok := range tokens {
			if strings.Contains(string(env.Data), tok) || strings.Contains(string(env.Data), `"`+user) {
				t.Errorf("%s records %s's token or subject", env.Type, user)
			}
		}
	}
}

// A warm start with EagerCache while the server's era record and tool list
// are fresh: every tool is there when ConnectServers returns, before the
// connect has sent anything (its dial is held until then), and the connect
// that follows sends neither server/discover (answered from the record)
// nor tools/list (the fresh list stands for it): only the listen stream.
func TestWarmStartFreshSendsNothingBeforeTheGate(t *testing.T) {
	ts := newTTLServer(t, nil)
	var (
		mu   sync.Mutex
		sent []string
	)
	ts.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if !strings.HasPrefix(method, "notifications/") {
				mu.Lock()
				sent = append(sent, method)
				mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	j := hostJournal(t, memory.New(), "hostA")
	m1, _ := ttlManager(t, j, "s1", ts, modernProtocol, nil)
	m1.Close(context.Background())
	taken := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := sent
		sent = nil
		return out
	}
	taken()

	release, dialled := make(chan struct{}), make(chan struct{})
	m, err := manager.New(j, "s2", &manager.Options{
		Gate: time.Minute, EagerCache: true, Cwd: t.TempDir(), ProtocolVersion: modernProtocol,
		Health: manager.HealthOptions{Interval: -1},
		Dial: func(ctx context.Context, cfg events.ServerConfig) (mcp.Transport, error) {
			<-release
			defer close(dialled)
			return ts.dial(ctx, cfg)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	updates, err := m.Watch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.ConnectServers(t.Context(), []events.ServerConfig{ttlConfig}, nil)
	if err != nil || len(res.Errors) > 0 {
		t.Fatal(err, res.Errors)
	}
	if got, want := toolNamesOf(m), []string{"mcp_ttl_alpha", "mcp_ttl_beta"}; !cmp.Equal(got, want) {
		t.Errorf("tools when the gate returned %v, want %v", got, want)
	}
	if early := taken(); len(early) > 0 {
		t.Errorf("requests before the gate returned: %v, want none", early)
	}
	close(release)
	<-dialled
	for m.Status("ttl") != projector.StatusConnected {
		select {
		case <-updates:
		case <-t.Context().Done():
			t.Fatalf("never connected: %s", m.Status("ttl"))
		}
	}
	for _, method := range taken() {
		if method != "subscriptions/listen" {
			t.Errorf("the warm connect sent %s; want only the listen stream", method)
		}
	}
}
