package transport

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
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

func TestRedirectsKeepHeadersOnlyOnTheirOrigin(t *testing.T) {
	var final []http.Header
	var mu sync.Mutex
	record := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		final = append(final, r.Header.Clone())
		mu.Unlock()
	}
	var home string // srv's URL, set before the first request
	other := newHeaderRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/back" {
			// Back to the configured origin: the headers are sent there again.
			mu.Lock()
			to := home + "/final"
			mu.Unlock()
			http.Redirect(w, r, to, http.StatusTemporaryRedirect)
			return
		}
		record(w, r)
	})
	srv := newHeaderRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/final", http.StatusTemporaryRedirect)
		case "/other":
			http.Redirect(w, r, other.URL+"/final", http.StatusTemporaryRedirect)
		case "/back":
			http.Redirect(w, r, other.URL+"/back", http.StatusTemporaryRedirect)
		default:
			record(w, r)
		}
	})
	mu.Lock()
	home = srv.URL
	mu.Unlock()

	client, pool, _ := httpClient("fx", srv.URL+"/mcp", configuredHeaders, false)
	defer pool.CloseIdleConnections()
	for _, c := range []struct {
		path string
		want int // configured headers at the final hop
	}{{"/same", len(configuredHeaders)}, {"/other", 0}, {"/back", len(configuredHeaders)}} {
		mu.Lock()
		final = nil
		mu.Unlock()
		resp, err := client.Post(srv.URL+c.path, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		mu.Lock()
		if len(final) != 1 {
			t.Fatalf("%s: %d requests reached the end", c.path, len(final))
		}
		if got := carriedHeaders(final[0]); len(got) != c.want {
			t.Errorf("%s: the final hop carried %v, want %d configured headers", c.path, got, c.want)
		}
		mu.Unlock()
	}
}

func TestOriginOf(t *testing.T) {
	same := [][2]string{
		{"http://example.com/mcp", "HTTP://Example.COM:80/other?x=1"},
		{"https://example.com", "https://example.com:443/sse"},
		{"http://[::1]:8080/a", "http://[::1]:8080/b"},
		{"http://user:pw@host:9/a", "http://host:9/b"},
	}
	for _, c := range same {
		a, _ := url.Parse(c[0])
		b, _ := url.Parse(c[1])
		if originOf(a) != originOf(b) {
			t.Errorf("%s and %s: different origins %v, %v", c[0], c[1], originOf(a), originOf(b))
		}
	}
	differ := [][2]string{
		{"http://example.com", "https://example.com"},
		{"http://example.com", "http://example.com:8080"},
		{"https://example.com", "https://example.com:80"},
		{"http://example.com", "http://api.example.com"},
		{"http://127.0.0.1:1/", "http://localhost:1/"},
	}
	for _, c := range differ {
		a, _ := url.Parse(c[0])
		b, _ := url.Parse(c[1])
		if originOf(a) == originOf(b) {
			t.Errorf("%s and %s: same origin %v", c[0], c[1], originOf(a))
		}
	}
	for raw, want := range map[string]string{
		"HTTPS://Example.com:443/x": "https://example.com",
		"http://example.com:8080":   "http://example.com:8080",
		"http://[::1]/":             "http://[::1]",
		"http://[::1]:81/":          "http://[::1]:81",
	} {
		u, _ := url.Parse(raw)
		if got := originOf(u).String(); got != want {
			t.Errorf("origin of %s = %s, want %s", raw, got, want)
		}
	}
}
