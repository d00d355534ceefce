package manager_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/oauth"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
	"github.com/mcplife/mcplife/verify"
)

const modern = "2026-07-28"

// eraClock is the journal's clock in these tests: it moves only when told.
type eraClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *eraClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

func (c *eraClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// wire counts the requests a server received, by method.
type wire struct {
	mu     sync.Mutex
	counts map[string]int
}

func (w *wire) count(method string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.counts == nil {
		w.counts = map[string]int{}
	}
	w.counts[method]++
}

// take returns the counts so far and starts again.
func (w *wire) take() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.counts
	w.counts = nil
	return c
}

// eraServer is an in-process go-sdk server (it speaks 2026-07-28 and the
// legacy handshake) with the tool echo, whose received requests w counts.
// ttlMs is its server/discover result's. refuse, when set, answers a
// request with an error before the server sees it.
func eraServer(w *wire, ttlMs int, refuse func(method string, req mcp.Request) *jsonrpc.Error) *mcp.Server {
	return cacheableServer(w, func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
		if _, ok := req.GetParams().(*mcp.DiscoverParams); ok {
			c.TTLMs = ttlMs
		}
	}, refuse)
}

// cacheableServer is eraServer with the cache hints setCacheable gives.
func cacheableServer(w *wire, setCacheable func(context.Context, mcp.Request, *mcp.Cacheable), refuse func(method string, req mcp.Request) *jsonrpc.Error) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "eraserver", Version: "2.0"}, &mcp.ServerOptions{
		Instructions: "call echo", SetCacheable: setCacheable,
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo"}}}, nil, nil
	})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if !strings.HasPrefix(method, "notifications/") {
				w.count(method)
			}
			if refuse != nil {
				if err := refuse(method, req); err != nil {
					return nil, err
				}
			}
			return next(ctx, method, req)
		}
	})
	return srv
}

// legacyOnly refuses what a server of the legacy era does not know:
// server/discover, and requests that carry the modern era's _meta.
func legacyOnly(method string, req mcp.Request) *jsonrpc.Error {
	modernMeta := false
	if p := req.GetParams(); p != nil {
		if m := p.GetMeta(); m != nil {
			v, _ := m[mcp.MetaKeyProtocolVersion].(string)
			modernMeta = v >= modern
		}
	}
	if method == "server/discover" || modernMeta {
		return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + method}
	}
	return nil
}

// modernOnly refuses initialize as a server of the modern era alone does.
func modernOnly(method string, _ mcp.Request) *jsonrpc.Error {
	if method != "initialize" {
		return nil
	}
	data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: []string{modern}, Requested: "2025-11-25"})
	return &jsonrpc.Error{Code: mcp.CodeUnsupportedProtocolVersion, Message: "unsupported protocol version", Data: data}
}

// eraEnv is a store and a journal with a clock that later managers share.
type eraEnv struct {
	t     *testing.T
	st    store.Store
	j     *journal.Journal
	clock *eraClock
	n     int
}

func newEraEnv(t *testing.T) *eraEnv {
	t.Helper()
	clock := &eraClock{t: time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)}
	st := memory.New()
	j, err := journal.New(st, &journal.Options{Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return &eraEnv{t: t, st: st, j: j, clock: clock}
}

// connect runs one session: a new manager connects cfg to srv (or, with
// srv nil, over cfg's own transport), is closed, and the session's events
// are returned.
func (e *eraEnv) connect(cfg events.ServerConfig, srv *mcp.Server, opts manager.Options) ([]events.Event, *manager.ConnectResult) {
	e.t.Helper()
	e.n++
	session := "era-" + string(rune('0'+e.n))
	opts.Gate, opts.Cwd = time.Minute, e.t.TempDir()
	if srv != nil {
		opts.Dial = func(ctx context.Context, _ events.ServerConfig) (mcp.Transport, error) {
			s, c := mcp.NewInMemoryTransports()
			if _, err := srv.Connect(ctx, s, nil); err != nil {
				return nil, err
			}
			return c, nil
		}
	}
	m, err := manager.New(e.j, session, &opts)
	if err != nil {
		e.t.Fatal(err)
	}
	res, err := m.ConnectServers(e.t.Context(), []events.ServerConfig{cfg}, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := m.Close(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	var envs []events.Envelope
	var out []events.Event
	for env, err := range e.st.ReadStream(context.Background(), session, 1) {
		if err != nil {
			e.t.Fatal(err)
		}
		envs = append(envs, env)
		ev, err := events.Decode(env)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, ev)
	}
	for _, v := range verify.Session(session, envs) {
		e.t.Errorf("invariant: %s", v)
	}
	return out, res
}

// describe returns the events of a connect, one line each, from
// ConnectStarted to ToolsListed.
func describe(evs []events.Event) []string {
	var out []string
	for _, ev := range evs {
		switch ev.(type) {
		case *events.ConnectStarted, *events.ServerEraDetected, *events.ServerConnected, *events.ToolsListed, *events.ConnectFailed:
			out = append(out, ev.Type()+" "+events.Describe(ev))
		}
	}
	return out
}

// eras returns the ServerEraDetected events of evs.
func eras(evs []events.Event) []*events.ServerEraDetected {
	var out []*events.ServerEraDetected
	for _, ev := range evs {
		if e, ok := ev.(*events.ServerEraDetected); ok {
			out = append(out, e)
		}
	}
	return out
}

// connectedVersion returns the protocol version of the session's
// ServerConnected.
func connectedVersion(t *testing.T, evs []events.Event) string {
	t.Helper()
	for _, ev := range evs {
		if c, ok := ev.(*events.ServerConnected); ok {
			return c.ProtocolVersion
		}
	}
	t.Fatalf("no ServerConnected in %v", describe(evs))
	return ""
}

// wantCounts fails unless got counts the requests of a connect
// (server/discover, initialize, tools/list) as want does.
func wantCounts(t *testing.T, what string, got, want map[string]int) {
	t.Helper()
	for _, k := range []string{"server/discover", "initialize", "tools/list"} {
		if got[k] != want[k] {
			t.Errorf("%s: %s sent %d times, want %d (all: %v)", what, k, got[k], want[k], got)
		}
	}
}

// order checks that ServerEraDetected comes after ConnectStarted and right
// before ServerConnected.
func order(t *testing.T, evs []events.Event) {
	t.Helper()
	for i, ev := range evs {
		if _, ok := ev.(*events.ServerEraDetected); !ok {
			continue
		}
		if i+1 >= len(evs) || evs[i+1].Type() != events.TypeServerConnected {
			t.Errorf("ServerEraDetected not followed by ServerConnected: %v", describe(evs))
		}
		if !slices.ContainsFunc(evs[:i], func(e events.Event) bool { return e.Type() == events.TypeConnectStarted }) {
			t.Errorf("ServerEraDetected before ConnectStarted: %v", describe(evs))
		}
	}
}

var modernCfg = events.ServerConfig{Name: "srv", Command: "in-process", ProtocolVersion: modern}

// A modern server's first connect probes with server/discover and records
// its era with the discover result's cache hints; a later session on the
// same store connects with no server/discover on the wire while the record
// is fresh, and probes again once it is stale.
func TestEraModernRecordSkipsProbe(t *testing.T) {
	e := newEraEnv(t)
	w := &wire{}
	srv := eraServer(w, 60_000, nil)

	first, res := e.connect(modernCfg, srv, manager.Options{})
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	t.Logf("first connect (probe):\n  %s", strings.Join(describe(first), "\n  "))
	wantCounts(t, "first connect", w.take(), map[string]int{"server/discover": 1, "tools/list": 1})
	got := eras(first)
	if len(got) != 1 {
		t.Fatalf("ServerEraDetected = %v, want one", describe(first))
	}
	d := got[0]
	if d.Era != events.EraModern || d.ProtocolVersion != modern || d.TTLMs != 60_000 || d.CacheScope != "public" ||
		!slices.Contains(d.SupportedVersions, modern) || d.ConfigHash != modernCfg.Hash() {
		t.Errorf("ServerEraDetected = %+v", d)
	}
	if d.Discover == nil || d.Discover.PeerName != "eraserver" || d.Discover.PeerVersion != "2.0" || d.Discover.Instructions != "call echo" ||
		!strings.Contains(string(d.Discover.Capabilities), `"tools"`) {
		t.Errorf("Discover = %+v", d.Discover)
	}
	order(t, first)
	if v := connectedVersion(t, first); v != modern {
		t.Errorf("connected at %s", v)
	}

	// Fresh: the record answers server/discover.
	e.clock.advance(30 * time.Second)
	second, res := e.connect(modernCfg, srv, manager.Options{})
	if len(res.Errors) > 0 || len(res.Connected) != 1 {
		t.Fatal(res.Errors, res.Connected)
	}
	t.Logf("second connect (fresh record):\n  %s", strings.Join(describe(second), "\n  "))
	wantCounts(t, "fresh record", w.take(), map[string]int{"tools/list": 1})
	if got := eras(second); len(got) != 0 {
		t.Errorf("a fresh record used, yet %v", describe(second))
	}
	for _, ev := range second {
		if c, ok := ev.(*events.ServerConnected); ok {
			if c.ProtocolVersion != modern || c.PeerName != "eraserver" || c.Instructions != "call echo" {
				t.Errorf("ServerConnected from the record = %+v", c)
			}
		}
	}

	// Stale: the probe runs again and renews the record.
	e.clock.advance(time.Minute)
	third, _ := e.connect(modernCfg, srv, manager.Options{})
	wantCounts(t, "stale record", w.take(), map[string]int{"server/discover": 1, "tools/list": 1})
	if got := eras(third); len(got) != 1 || got[0].Era != events.EraModern {
		t.Errorf("stale record probed: %v, want the record renewed", describe(third))
	}
	order(t, third)
}

// A server whose discover result may not be reused (ttlMs 0, the go-sdk's
// default) is probed at every connect, and an unchanged answer records
// nothing.
func TestEraModernNoTTLProbesEachTime(t *testing.T) {
	e := newEraEnv(t)
	w := &wire{}
	srv := eraServer(w, 0, nil)
	first, _ := e.connect(modernCfg, srv, manager.Options{})
	if got := eras(first); len(got) != 1 || got[0].TTLMs != 0 {
		t.Fatalf("first: %v", describe(first))
	}
	w.take()
	second, _ := e.connect(modernCfg, srv, manager.Options{})
	wantCounts(t, "second connect", w.take(), map[string]int{"server/discover": 1, "tools/list": 1})
	if got := eras(second); len(got) != 0 {
		t.Errorf("nothing changed, yet %v", describe(second))
	}
}

// A server that answers server/discover with "method not found" is
// recorded legacy; a later connect sends initialize at 2025-11-25 with no
// server/discover first.
func TestEraLegacyRecorded(t *testing.T) {
	e := newEraEnv(t)
	w := &wire{}
	srv := eraServer(w, 0, legacyOnly)
	first, res := e.connect(modernCfg, srv, manager.Options{})
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	t.Logf("legacy server, first connect:\n  %s", strings.Join(describe(first), "\n  "))
	wantCounts(t, "first connect", w.take(), map[string]int{"server/discover": 1, "initialize": 1, "tools/list": 1})
	got := eras(first)
	if len(got) != 1 || got[0].Era != events.EraLegacy || got[0].ProtocolVersion != "2025-11-25" || got[0].Discover != nil {
		t.Fatalf("ServerEraDetected = %v", describe(first))
	}
	order(t, first)

	second, res := e.connect(modernCfg, srv, manager.Options{})
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	wantCounts(t, "legacy record", w.take(), map[string]int{"initialize": 1, "tools/list": 1})
	if got := eras(second); len(got) != 0 {
		t.Errorf("unchanged legacy server recorded again: %v", describe(second))
	}
	if v := connectedVersion(t, second); v != "2025-11-25" {
		t.Errorf("connected at %s", v)
	}
}

// A fresh modern record whose server turned legacy: the first request
// after the locally answered discover gets "method not found", so the
// connect is made once more with the probe on the wire, and the server is
// recorded legacy.
func TestEraModernRecordContradicted(t *testing.T) {
	e := newEraEnv(t)
	w := &wire{}
	e.connect(modernCfg, eraServer(w, 60_000, nil), manager.Options{})
	w.take()

	evs, res := e.connect(modernCfg, eraServer(w, 0, legacyOnly), manager.Options{})
	if len(res.Errors) > 0 || len(res.Connected) != 1 {
		t.Fatal(res.Errors, res.Connected)
	}
	t.Logf("contradicted modern record:\n  %s", strings.Join(describe(evs), "\n  "))
	wantCounts(t, "contradicted", w.take(), map[string]int{"tools/list": 2, "server/discover": 1, "initialize": 1})
	got := eras(evs)
	if len(got) != 1 || got[0].Era != events.EraLegacy {
		t.Fatalf("ServerEraDetected = %v, want legacy", describe(evs))
	}
	order(t, evs)
	if n := len(slices.DeleteFunc(slices.Clone(evs), func(e events.Event) bool { return e.Type() != events.TypeServerConnected })); n != 1 {
		t.Errorf("%d ServerConnected, want 1", n)
	}
	if v := connectedVersion(t, evs); v != "2025-11-25" {
		t.Errorf("connected at %s", v)
	}
	// The next connect follows the new record.
	e.connect(modernCfg, eraServer(w, 0, legacyOnly), manager.Options{})
	wantCounts(t, "after", w.take(), map[string]int{"initialize": 1, "tools/list": 1})
}

// A legacy record whose server now refuses initialize as a server of the
// modern era alone does: one probe, and the server is recorded modern.
func TestEraLegacyRecordContradicted(t *testing.T) {
	e := newEraEnv(t)
	w := &wire{}
	e.connect(modernCfg, eraServer(w, 0, legacyOnly), manager.Options{})
	w.take()

	evs, res := e.connect(modernCfg, eraServer(w, 0, modernOnly), manager.Options{})
	if len(res.Errors) > 0 || len(res.Connected) != 1 {
		t.Fatal(res.Errors, res.Connected)
	}
	t.Logf("contradicted legacy record:\n  %s", strings.Join(describe(evs), "\n  "))
	wantCounts(t, "contradicted", w.take(), map[string]int{"initialize": 1, "server/discover": 1, "tools/list": 1})
	got := eras(evs)
	if len(got) != 1 || got[0].Era != events.EraModern || got[0].ProtocolVersion != modern {
		t.Fatalf("ServerEraDetected = %v, want modern", describe(evs))
	}
	order(t, evs)
	if slices.ContainsFunc(evs, func(e events.Event) bool { return e.Type() == events.TypeConnectFailed }) {
		t.Errorf("the contradiction was recorded as a failure: %v", describe(evs))
	}
}

// Connects that are not modern-wanted (a legacy version offered) send no
// server/discover and record no era, whatever the server speaks.
func TestEraLegacyProtocolRecordsNothing(t *testing.T) {
	e := newEraEnv(t)
	w := &wire{}
	cfg := events.ServerConfig{Name: "srv", Command: "in-process", ProtocolVersion: "2025-11-25"}
	evs, _ := e.connect(cfg, eraServer(w, 60_000, nil), manager.Options{})
	wantCounts(t, "legacy", w.take(), map[string]int{"initialize": 1, "tools/list": 1})
	if got := eras(evs); len(got) != 0 {
		t.Errorf("%v", describe(evs))
	}
	// Nor does a legacy record change them.
	e.connect(modernCfg, eraServer(w, 0, legacyOnly), manager.Options{})
	w.take()
	evs, _ = e.connect(cfg, eraServer(w, 0, nil), manager.Options{})
	wantCounts(t, "legacy after a record", w.take(), map[string]int{"initialize": 1, "tools/list": 1})
	if got := eras(evs); len(got) != 0 {
		t.Errorf("%v", describe(evs))
	}
}

// Options.ProtocolVersion makes every connect modern-wanted.
func TestEraOptionsProtocolVersion(t *testing.T) {
	e := newEraEnv(t)
	w := &wire{}
	cfg := events.ServerConfig{Name: "srv", Command: "in-process"}
	evs, _ := e.connect(cfg, eraServer(w, 0, nil), manager.Options{ProtocolVersion: modern})
	wantCounts(t, "options", w.take(), map[string]int{"server/discover": 1, "tools/list": 1})
	if got := eras(evs); len(got) != 1 || got[0].Era != events.EraModern {
		t.Errorf("%v", describe(evs))
	}
}

// httpEraServer serves srv over streamable HTTP; status, when not zero,
// answers server/discover with that status instead.
func httpEraServer(t *testing.T, srv *mcp.Server, status *atomic.Int32) string {
	// The stateful handler offers only legacy versions in its discover
	// answer: the modern era is stateless.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code := int(status.Load()); code != 0 && r.Header.Get("Mcp-Method") == "server/discover" {
			http.Error(w, http.StatusText(code), code)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

func memoryAuth(t *testing.T) manager.AuthOptions {
	a, err := oauth.New(&oauth.Options{Store: oauth.NewMemoryStore()})
	if err != nil {
		t.Fatal(err)
	}
	return manager.AuthOptions{OAuth: a}
}

// Over streamable HTTP: the first connect probes, the next one, with a
// fresh record, sends no server/discover.
func TestEraModernOverHTTP(t *testing.T) {
	e := newEraEnv(t)
	w := &wire{}
	cfg := events.ServerConfig{Name: "web", Type: events.TransportHTTP, URL: httpEraServer(t, eraServer(w, 60_000, nil), &atomic.Int32{}), ProtocolVersion: modern}
	first, res := e.connect(cfg, nil, manager.Options{Auth: memoryAuth(t)})
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	wantCounts(t, "first", w.take(), map[string]int{"server/discover": 1, "tools/list": 1})
	if got := eras(first); len(got) != 1 || got[0].Era != events.EraModern {
		t.Fatalf("%v", describe(first))
	}
	second, res := e.connect(cfg, nil, manager.Options{Auth: memoryAuth(t)})
	if len(res.Errors) > 0 || len(res.Connected) != 1 {
		t.Fatal(res.Errors, res.Connected)
	}
	wantCounts(t, "fresh record", w.take(), map[string]int{"tools/list": 1})
	if got := eras(second); len(got) != 0 {
		t.Errorf("%v", describe(second))
	}
}

// A 401 or 403 to server/discover decides no era, even when initialize
// then succeeds; nor does it change a record.
func TestEraUnauthorizedDiscoverDecidesNothing(t *testing.T) {
	for _, code := range []int32{http.StatusUnauthorized, http.StatusForbidden} {
		t.Run(http.StatusText(int(code)), func(t *testing.T) {
			e := newEraEnv(t)
			w := &wire{}
			status := &atomic.Int32{}
			status.Store(code)
			cfg := events.ServerConfig{Name: "web", Type: events.TransportHTTP, URL: httpEraServer(t, eraServer(w, 0, nil), status), ProtocolVersion: modern}
			evs, _ := e.connect(cfg, nil, manager.Options{Auth: memoryAuth(t)})
			t.Logf("%d to server/discover:\n  %s", code, strings.Join(describe(evs), "\n  "))
			if got := eras(evs); len(got) != 0 {
				t.Errorf("an era was recorded: %v", describe(evs))
			}
			if v := connectedVersion(t, evs); v != "2025-11-25" {
				t.Errorf("connected at %s, want the initialize fallback", v)
			}

			// A modern record (ttlMs 0: probed again at the next connect)
			// stays as it is when the probe is refused.
			status.Store(0)
			evs, _ = e.connect(cfg, nil, manager.Options{Auth: memoryAuth(t)})
			if got := eras(evs); len(got) != 1 || got[0].Era != events.EraModern {
				t.Fatalf("%v", describe(evs))
			}
			status.Store(code)
			evs, _ = e.connect(cfg, nil, manager.Options{Auth: memoryAuth(t)})
			if got := eras(evs); len(got) != 0 {
				t.Errorf("a refused probe changed the record: %v", describe(evs))
			}
		})
	}
}

// What a server says of itself in its discover result is recorded
// scrubbed of the connection's secrets, as ServerConnected is, and a
// connect answered from the record repeats it scrubbed.
func TestEraDiscoverScrubbed(t *testing.T) {
	const secret = "s3cret-value-123"
	e := newEraEnv(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "srv " + secret, Version: "1"}, &mcp.ServerOptions{
		Instructions: "your token is " + secret,
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.TTLMs = 60_000 },
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	cfg := modernCfg
	cfg.Env = map[string]string{"TOKEN": "${TOKEN}"}
	for i := range 2 {
		evs, res := e.connect(cfg, srv, manager.Options{Resolver: tokenResolver{}})
		if len(res.Errors) > 0 {
			t.Fatal(res.Errors)
		}
		if i == 0 {
			got := eras(evs)
			if len(got) != 1 || got[0].Discover == nil || !strings.Contains(got[0].Discover.Instructions, events.Redacted) ||
				!strings.Contains(got[0].Discover.PeerName, events.Redacted) {
				t.Fatalf("ServerEraDetected = %+v", got)
			}
		}
		for _, ev := range evs {
			if c, ok := ev.(*events.ServerConnected); ok && c.Instructions != "your token is "+events.Redacted {
				t.Errorf("connect %d: instructions %q", i+1, c.Instructions)
			}
		}
	}
	for env, err := range e.st.ReadAll(context.Background(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(env.Data), secret) {
			t.Errorf("the secret reached the store: %s %s", env.Type, env.Data)
		}
	}
}

// BenchmarkEraConnect measures a session's connect of a modern server
// over streamable HTTP: with the probe on the wire (a discover result that
// may not be reused), and answered from a fresh record.
func BenchmarkEraConnect(b *testing.B) {
	for _, bc := range []struct {
		name string
		ttl  int
	}{{"probe", 0}, {"fresh-record", 3_600_000}} {
		b.Run(bc.name, func(b *testing.B) {
			st := memory.New()
			j, err := journal.New(st, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			w := &wire{}
			srv := eraServer(w, bc.ttl, nil)
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
			hs := httptest.NewServer(h)
			defer hs.Close()
			a, err := oauth.New(&oauth.Options{Store: oauth.NewMemoryStore()})
			if err != nil {
				b.Fatal(err)
			}
			cfg := events.ServerConfig{Name: "web", Type: events.TransportHTTP, URL: hs.URL + "/mcp", ProtocolVersion: modern}
			sessions := 0
			// Only ConnectServers is timed: a manager's start and close
			// are the same either way.
			connect := func() {
				b.StopTimer()
				sessions++
				m, err := manager.New(j, fmt.Sprintf("bench-%d", sessions), &manager.Options{Gate: time.Minute, Cwd: b.TempDir(), Auth: manager.AuthOptions{OAuth: a}})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				res, err := m.ConnectServers(context.Background(), []events.ServerConfig{cfg}, nil)
				b.StopTimer()
				if err != nil || len(res.Errors) > 0 {
					b.Fatal(err, res.Errors)
				}
				if err := m.Close(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			connect() // records the era
			b.ResetTimer()
			w.take()
			for range b.N {
				connect()
			}
			b.StopTimer()
			if n := w.take()["server/discover"]; (n == 0) != (bc.ttl > 0) {
				b.Fatalf("%d server/discover on the wire", n)
			}
		})
	}
}

// A connection that drops comes back without a probe while the record is
// fresh: the reconnect answers server/discover from it too.
func TestEraReconnectUsesRecord(t *testing.T) {
	e := newEraEnv(t)
	w := &wire{}
	srv := eraServer(w, 60_000, nil)
	e.connect(modernCfg, srv, manager.Options{})
	w.take()

	sessions := make(chan *mcp.ServerSession, 2)
	m, err := manager.New(e.j, "era-reconnect", &manager.Options{
		Gate: time.Minute, Cwd: t.TempDir(),
		Reconnect: manager.ReconnectPolicy{Initial: time.Millisecond, NoJitter: true},
		Dial: func(ctx context.Context, _ events.ServerConfig) (mcp.Transport, error) {
			s, c := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(ctx, s, nil)
			if err != nil {
				return nil, err
			}
			select {
			case sessions <- ss:
			default: // only the first is ended
			}
			return c, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	ctx := t.Context()
	updates, err := m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := m.ConnectServers(ctx, []events.ServerConfig{modernCfg}, nil); err != nil || len(res.Errors) > 0 {
		t.Fatal(err, res.Errors)
	}
	(<-sessions).Close() // the server ends the connection
	stored := func() []events.Event {
		if err := e.j.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		var out []events.Event
		for env, err := range e.st.ReadStream(ctx, "era-reconnect", 1) {
			if err != nil {
				t.Fatal(err)
			}
			ev, err := events.Decode(env)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, ev)
		}
		return out
	}
	for range updates {
		evs := stored()
		if slices.ContainsFunc(evs, func(ev events.Event) bool {
			l, ok := ev.(*events.ToolsListed)
			return ok && l.Cause == events.CauseReconnect
		}) {
			wantCounts(t, "connect and reconnect", w.take(), map[string]int{"tools/list": 2})
			if got := eras(evs); len(got) != 0 {
				t.Errorf("%v", describe(evs))
			}
			return
		}
	}
	t.Fatal("no reconnect")
}

// A "method not found" to the tools/list of a server whose record says it
// has no tools is its answer, not a contradiction: no probe follows.
func TestEraNoToolsIsNoContradiction(t *testing.T) {
	e := newEraEnv(t)
	w := &wire{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "notools", Version: "1"}, &mcp.ServerOptions{
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.TTLMs = 60_000 },
	})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			w.count(method)
			if method == "tools/list" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "no tools"}
			}
			return next(ctx, method, req)
		}
	})
	first, _ := e.connect(modernCfg, srv, manager.Options{})
	if got := eras(first); len(got) != 1 || strings.Contains(string(got[0].Discover.Capabilities), `"tools"`) {
		t.Fatalf("%v", describe(first))
	}
	w.take()
	second, _ := e.connect(modernCfg, srv, manager.Options{})
	wantCounts(t, "second", w.take(), map[string]int{"tools/list": 1})
	if !slices.ContainsFunc(second, func(ev events.Event) bool { return ev.Type() == events.TypeToolsListFailed }) {
		t.Errorf("%v", describe(second))
	}
}

// A fresh modern record and a fresh tool list: the connect sends nothing.
// When the server turned legacy, the first request made later (a call)
// gets "method not found"; the connection is ended and its reconnect
// probes, and the server is recorded legacy.
func TestEraLateContradiction(t *testing.T) {
	e := newEraEnv(t)
	w := &wire{}
	hour := func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.TTLMs = 3_600_000 }
	e.connect(modernCfg, cacheableServer(w, hour, nil), manager.Options{})
	w.take()

	srv := cacheableServer(w, hour, legacyOnly)
	m, err := manager.New(e.j, "era-late", &manager.Options{
		Gate: time.Minute, Cwd: t.TempDir(),
		Reconnect: manager.ReconnectPolicy{Initial: time.Millisecond, NoJitter: true},
		Dial: func(ctx context.Context, _ events.ServerConfig) (mcp.Transport, error) {
			s, c := mcp.NewInMemoryTransports()
			if _, err := srv.Connect(ctx, s, nil); err != nil {
				return nil, err
			}
			return c, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	ctx := t.Context()
	updates, err := m.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := m.ConnectServers(ctx, []events.ServerConfig{modernCfg}, nil); err != nil || len(res.Errors) > 0 {
		t.Fatal(err, res.Errors)
	}
	wantCounts(t, "connect", w.take(), map[string]int{})
	tl, ok := m.Tool("mcp_srv_echo")
	if !ok {
		t.Fatal("no mcp_srv_echo")
	}
	out, err := tl.Call(ctx, nil)
	t.Logf("call: %+v, %v", out, err)
	for range updates {
		if err := e.j.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		var evs []events.Event
		for env, err := range e.st.ReadStream(ctx, "era-late", 1) {
			if err != nil {
				t.Fatal(err)
			}
			ev, err := events.Decode(env)
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, ev)
		}
		got := eras(evs)
		if len(got) == 0 {
			continue
		}
		t.Logf("late contradiction:\n  %s", strings.Join(describe(evs), "\n  "))
		if got[0].Era != events.EraLegacy {
			t.Errorf("ServerEraDetected = %+v, want legacy", got[0])
		}
		order(t, evs)
		counts := w.take()
		if counts["server/discover"] != 1 || counts["initialize"] != 1 {
			t.Errorf("the reconnect sent %v, want one probe and initialize", counts)
		}
		return
	}
	t.Fatal("no era recorded")
}

// A server configured era legacy is sent initialize at 2025-11-25 with no
// probe, whatever the manager offers others, and no era is recorded.
func TestEraConfigLegacySendsInitializeOnly(t *testing.T) {
	e := newEraEnv(t)
	w := &wire{}
	cfg := events.ServerConfig{Name: "srv", Command: "in-process", Era: events.ConfigEraLegacy}
	evs, res := e.connect(cfg, eraServer(w, 60_000, nil), manager.Options{ProtocolVersion: modern})
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	wantCounts(t, "era legacy", w.take(), map[string]int{"initialize": 1, "tools/list": 1})
	if v := connectedVersion(t, evs); v != "2025-11-25" {
		t.Errorf("connected at %s, want 2025-11-25", v)
	}
	if got := eras(evs); len(got) != 0 {
		t.Errorf("era legacy recorded an era: %v", describe(evs))
	}
}

// A server configured era modern never falls back to initialize: a
// legacy-only server fails the connect with an error that names the
// setting, and a legacy record does not stop the probe.
func TestEraConfigModernHasNoFallback(t *testing.T) {
	e := newEraEnv(t)
	w := &wire{}
	auto := events.ServerConfig{Name: "srv", Command: "in-process", ProtocolVersion: modern}
	if _, res := e.connect(auto, eraServer(w, 0, legacyOnly), manager.Options{}); len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	w.take()

	strict := events.ServerConfig{Name: "srv", Command: "in-process", Era: events.ConfigEraModern}
	_, res := e.connect(strict, eraServer(w, 0, legacyOnly), manager.Options{ProtocolVersion: "2025-11-25"})
	err := res.Errors["srv"]
	if err == nil || !strings.Contains(err.Error(), `era "modern"`) || !strings.Contains(err.Error(), "server/discover") {
		t.Fatalf("connect of a legacy-only server configured era modern: %v", err)
	}
	wantCounts(t, "era modern, legacy-only server", w.take(), map[string]int{"server/discover": 1})

	evs, res := e.connect(strict, eraServer(w, 0, nil), manager.Options{ProtocolVersion: "2025-11-25"})
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	wantCounts(t, "era modern, modern server", w.take(), map[string]int{"server/discover": 1, "tools/list": 1})
	if v := connectedVersion(t, evs); v != modern {
		t.Errorf("connected at %s, want %s", v, modern)
	}
}
