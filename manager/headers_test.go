package manager

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
)

// configuredHeaders are header names a server config commonly carries
// credentials in, and one of the server's own.
var configuredHeaders = map[string]string{
	"Authorization":  "Bearer tok-authorization-secret",
	"X-Api-Key":      "key-api-secret",
	"Cookie":         "session=cookie-secret",
	"X-Custom-Thing": "custom-secret",
}

// carriedHeaders returns the names of the configured headers that h
// carries, by name or by value under any name.
func carriedHeaders(h http.Header) []string {
	var found []string
	for name, value := range configuredHeaders {
		carried := h.Get(name) != ""
		for _, vs := range h {
			for _, v := range vs {
				carried = carried || strings.Contains(v, value)
			}
		}
		if carried {
			found = append(found, name)
		}
	}
	slices.Sort(found)
	return found
}

// headerRecorder is a test HTTP server that records the headers of every
// request it receives before handing it to next.
type headerRecorder struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []http.Header
}

func newHeaderRecorder(t *testing.T, next http.HandlerFunc) *headerRecorder {
	rec := &headerRecorder{}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, r.Header.Clone())
		rec.mu.Unlock()
		next(w, r)
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (rec *headerRecorder) requests() []http.Header {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.reqs
}

// TestHeadersNotRedirectedToOtherOrigin: a streamable HTTP server whose
// configured URL redirects every request to another origin still works,
// but the other origin never sees a configured header.
func TestHeadersNotRedirectedToOtherOrigin(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	var atB fixturetest.RequestLog
	b := fixturetest.Serve(t, &fixturetest.HTTPOptions{OnRequest: atB.Record}, "only=echo")
	bURL, _ := url.Parse(b)
	a := newHeaderRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		to := *r.URL
		to.Scheme, to.Host = bURL.Scheme, bURL.Host
		http.Redirect(w, r, to.String(), http.StatusTemporaryRedirect)
	})

	cfg := events.ServerConfig{Name: "moved", Type: events.TransportHTTP, URL: a.URL + "/mcp", Headers: configuredHeaders}
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{cfg}, nil)
	if err != nil || len(res.Errors) > 0 {
		t.Fatal(res.Errors, err)
	}
	if r, err := tool(t, e.m, "mcp_moved_echo").Call(ctx, map[string]any{"text": "via B"}); err != nil || r.Text() != "via B" {
		t.Fatalf("echo: %+v %v", r, err)
	}
	if err := e.m.DisconnectAll(ctx); err != nil {
		t.Fatal(err)
	}
	if len(a.requests()) == 0 || len(atB.Requests()) == 0 {
		t.Fatalf("%d requests at the configured origin, %d at the redirect target", len(a.requests()), len(atB.Requests()))
	}
	for i, h := range a.requests() {
		if got := carriedHeaders(h); len(got) != len(configuredHeaders) {
			t.Errorf("request %d to the configured origin carried only %v", i, got)
		}
	}
	for _, r := range atB.Requests() {
		if got := carriedHeaders(r.Header); len(got) > 0 {
			t.Errorf("%s %s at the other origin carried configured headers %v", r.Method, r.Path, got)
		}
	}
}

// TestSSEEndpointOnOtherOriginRefused: a legacy SSE server whose endpoint
// event names another origin fails to connect with an error naming the
// server, both origins and the endpoint (its credential-like parameters
// redacted); the other origin receives no request at all.
func TestSSEEndpointOnOtherOriginRefused(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	b := newHeaderRecorder(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) })
	endpoint := b.URL + "/message?sessionid=1&token=tok-in-endpoint"
	a := newHeaderRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s\n\n", endpoint)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})

	cfg := events.ServerConfig{Name: "elsewhere", Type: events.TransportSSE, URL: a.URL + "/sse", Headers: configuredHeaders, TimeoutMs: ms(5000)}
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{cfg}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cerr := res.Errors["elsewhere"]
	if cerr == nil {
		t.Fatal("connected to an SSE server whose endpoint is on another origin")
	}
	msg := cerr.Error()
	t.Logf("connect error: %s", msg)
	for _, want := range []string{`"elsewhere"`, "refusing its SSE message endpoint", "origin " + b.URL + " is not the configured origin " + a.URL, "token=" + events.Redacted} {
		contains(t, "connect error", msg, want)
	}
	if strings.Contains(msg, "tok-in-endpoint") {
		t.Errorf("connect error %q shows the endpoint's token", msg)
	}
	if n := len(b.requests()); n > 0 {
		t.Errorf("the other origin received %d requests: %v", n, b.requests())
	}
	if got := a.requests(); len(got) == 0 || len(carriedHeaders(got[0])) != len(configuredHeaders) {
		t.Errorf("requests at the configured origin: %v", got)
	}
}
