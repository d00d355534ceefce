package transport

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
	"github.com/mcplife/mcplife/oauth"
)

// redirectToken is the bearer token stored for the configured server in
// the redirect tests.
const redirectToken = "at-redirect-secret-0123456789"

// sniffListener splits the connections of one TCP port between a TLS
// listener and a plain one by their first byte, so https://host:port and
// http://host:port are served side by side: a redirect between them
// changes the scheme alone.
type sniffListener struct {
	ln            net.Listener
	tlsConf       *tls.Config
	secure, plain *chanListener

	mu    sync.Mutex
	conns []net.Conn // every connection accepted, closed at the end
}

func newSniffListener(t *testing.T, tlsConf *tls.Config) *sniffListener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &sniffListener{ln: ln, tlsConf: tlsConf, secure: newChanListener(ln.Addr()), plain: newChanListener(ln.Addr())}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.mu.Lock()
			l.conns = append(l.conns, c)
			l.mu.Unlock()
			wg.Go(func() { l.dispatch(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		l.secure.Close()
		l.plain.Close()
		l.mu.Lock()
		for _, c := range l.conns {
			c.Close()
		}
		l.mu.Unlock()
		wg.Wait()
	})
	return l
}

func (l *sniffListener) dispatch(c net.Conn) {
	br := bufio.NewReader(c)
	first, err := br.Peek(1)
	if err != nil {
		c.Close()
		return
	}
	var pc net.Conn = &peekedConn{Conn: c, r: br}
	to := l.plain
	if first[0] == 0x16 { // a TLS handshake record
		pc, to = tls.Server(pc, l.tlsConf), l.secure
	}
	select {
	case to.conns <- pc:
	case <-to.closed:
		c.Close()
	}
}

// peekedConn is a connection whose first bytes were read into r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// chanListener is a net.Listener fed from a channel.
type chanListener struct {
	addr   net.Addr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// tokenLog records, per origin and path, how many requests arrived and
// how many carried the token.
type tokenLog struct {
	mu              sync.Mutex
	reqs, withToken map[string]int // "origin path" →
}

func (l *tokenLog) record(r *http.Request) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	k := scheme + "://" + r.Host + " " + r.URL.Path
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs[k]++
	for _, vs := range r.Header {
		for _, v := range vs {
			if strings.Contains(v, redirectToken) {
				l.withToken[k]++
				return
			}
		}
	}
}

func (l *tokenLog) counts(origin, path string) (reqs, withToken int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reqs[origin+" "+path], l.withToken[origin+" "+path]
}

// TestOAuthTokenStaysOnItsOrigin: a server whose configured URL
// redirects to another origin (another port on the same host, a
// subdomain, or plain http on the same host and port of an https URL) is
// still followed there, but the stored OAuth token never reaches the
// other origin, over streamable HTTP and legacy SSE alike; a redirect
// within the origin still carries it.
func TestOAuthTokenStaysOnItsOrigin(t *testing.T) {
	borrowed := httptest.NewUnstartedServer(nil)
	borrowed.StartTLS()
	tlsConf := borrowed.TLS.Clone()
	roots := x509.NewCertPool()
	roots.AddCert(borrowed.Certificate())
	borrowed.Close()

	log := &tokenLog{reqs: map[string]int{}, withToken: map[string]int{}}
	handlers := map[bool]*fixture.HTTPHandler{}
	for _, sse := range []bool{false, true} {
		h, err := fixture.NewHTTPHandler(&fixture.HandlerOptions{SSE: sse}, "only=echo")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Close)
		handlers[sse] = h
	}
	// Every origin serves the same handler: /old/mcp and /old/sse
	// redirect to the target of the test case (the query names it), the
	// fixture paths serve the fixture server.
	serve := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.record(r)
		// The go-sdk refuses a Host other than a loopback one on a
		// loopback listener (DNS rebinding protection); the names under
		// example.com stand for this listener.
		r.Host = "127.0.0.1"
		switch r.URL.Path {
		case "/mcp":
			handlers[false].ServeHTTP(w, r)
		case "/sse":
			handlers[true].ServeHTTP(w, r)
		case "/old/mcp", "/old/sse":
			q := r.URL.Query()
			to := q.Get("to") + strings.TrimPrefix(r.URL.Path, "/old")
			q.Del("to")
			if len(q) > 0 {
				to += "?" + q.Encode()
			}
			http.Redirect(w, r, to, http.StatusTemporaryRedirect)
		default:
			http.NotFound(w, r)
		}
	})
	var servers []*http.Server
	startServer := func(ln net.Listener) {
		s := &http.Server{Handler: serve}
		servers = append(servers, s)
		go s.Serve(ln) // ends with Close
	}
	one := newSniffListener(t, tlsConf)
	startServer(one.plain)
	startServer(one.secure)
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	startServer(other)
	t.Cleanup(func() {
		for _, s := range servers {
			s.Close()
		}
	})
	port := one.ln.Addr().(*net.TCPAddr).Port
	at := func(scheme, host string, port int) string {
		return scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port))
	}

	cases := []struct {
		name, from, to string
	}{
		{"another port", at("http", "127.0.0.1", port), at("http", "127.0.0.1", other.Addr().(*net.TCPAddr).Port)},
		{"a subdomain", at("http", "example.com", port), at("http", "api.example.com", port)},
		{"https to http", at("https", "127.0.0.1", port), at("http", "127.0.0.1", port)},
		{"the same origin", at("https", "example.com", port), at("https", "example.com", port)},
	}
	for _, c := range cases {
		for _, typ := range []string{events.TransportHTTP, events.TransportSSE} {
			t.Run(c.name+" over "+typ, func(t *testing.T) {
				path := "/mcp"
				if typ == events.TransportSSE {
					path = "/sse"
				}
				cfg := events.ServerConfig{Name: "moved", Type: typ, URL: c.from + "/old" + path + "?to=" + c.to}
				before, beforeTok := log.counts(c.to, path)
				err := connectWithToken(t, cfg, roots)
				reqs, withToken := log.counts(c.to, path)
				reqs, withToken = reqs-before, withToken-beforeTok
				if reqs == 0 {
					t.Fatalf("the redirect to %s was not followed (connect: %v)", c.to, err)
				}
				_, atFrom := log.counts(c.from, "/old"+path)
				if atFrom == 0 {
					t.Fatalf("the configured origin never received the token (connect: %v)", err)
				}
				if c.from == c.to {
					if err != nil || withToken != reqs {
						t.Fatalf("same-origin redirect: %d of %d requests carried the token; connect: %v", withToken, reqs, err)
					}
					return
				}
				if withToken > 0 {
					t.Errorf("%s received the token in %d of %d requests", c.to, withToken, reqs)
				}
				if typ == events.TransportHTTP && err != nil {
					t.Errorf("connect through the redirect: %v", err)
				}
			})
		}
	}
}

// connectWithToken connects to cfg through the manager's transport, with
// a stored token for cfg.URL, lists the tools and disconnects. Host names
// under example.com resolve to 127.0.0.1, and roots are trusted.
func connectWithToken(t *testing.T, cfg events.ServerConfig, roots *x509.CertPool) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(testCtx(t), 20*time.Second)
	defer cancel()
	store := oauth.NewMemoryStore()
	if err := store.Save(ctx, &oauth.Entry{ServerURL: cfg.URL, Issuer: "https://as.example",
		Token: oauth.Token{AccessToken: redirectToken, TokenType: "Bearer"}, SavedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	a, err := oauth.New(&oauth.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(cfg.Name, cfg, Resolved{Cfg: cfg, OAuth: a.Handler(cfg.Name, cfg, nil)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pool := tr.(*pooledTransport).pool
	defer pool.CloseIdleConnections()
	pool.TLSClientConfig = &tls.Config{RootCAs: roots}
	var d net.Dialer
	pool.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err == nil && (host == "example.com" || strings.HasSuffix(host, ".example.com")) {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
		return d.DialContext(ctx, network, addr)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	_, err = cs.ListTools(ctx, nil)
	return err
}
