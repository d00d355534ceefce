package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/oauth"
)

// Options are what a transport needs of the manager that opens it.
type Options struct {
	// Cwd is the working directory of a stdio server whose config names
	// none, and the directory a relative one is resolved against.
	Cwd string
	// Log is the server's logger (nil: discard): lines a stdio server
	// wrote to stdout that are not JSON-RPC, and messages nested too deep.
	Log *slog.Logger
	// MaxMessageSize is the longest line of a stdio server's stdout that
	// is passed on (0: [DefaultMaxMessageSize]; see [proc.JSONLines]).
	MaxMessageSize int
	// Session is the id of the session a stdio server is started for,
	// carried in its environment (see [proc.SessionEnv]).
	Session string
	// StdinGrace and TermGrace are the teardown timings of a stdio server
	// (see [proc.Options]; 0: its defaults).
	StdinGrace, TermGrace time.Duration
}

// New returns the go-sdk transport for cfg: a child process for
// stdio, streamable HTTP, or legacy HTTP+SSE. Header values and the OAuth
// token are sent with every HTTP request to the origin of cfg.URL, and
// with no other. o may be nil.
func New(name string, cfg events.ServerConfig, res Resolved, o *Options) (mcp.Transport, error) {
	if o == nil {
		o = &Options{}
	}
	switch t := cfg.Transport(); t {
	case events.TransportStdio:
		cwd := o.Cwd
		dir := cwd
		if cfg.Cwd != "" {
			dir = cfg.Cwd
			if !filepath.IsAbs(dir) && cwd != "" {
				dir = filepath.Join(cwd, dir)
			}
		}
		if dir != "" {
			if err := checkDir(dir); err != nil {
				return nil, err
			}
		}
		env := os.Environ()
		for _, k := range slices.Sorted(maps.Keys(res.Env)) {
			env = append(env, k+"="+res.Env[k]) // later entries win
		}
		return &stdioTransport{command: cfg.Command, args: slices.Clone(cfg.Args), env: env, dir: dir,
			log: o.Log, server: name, maxMessage: o.MaxMessageSize, session: o.Session,
			stdinGrace: o.StdinGrace, termGrace: o.TermGrace}, nil
	case events.TransportHTTP:
		client, pool, depth := httpClient(name, cfg.URL, res.Headers, false)
		depth.log = o.Log
		return &pooledTransport{Transport: &mcp.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: client, MaxRetries: httpStreamRetries, OAuthHandler: res.OAuth}, pool: pool, depth: depth}, nil
	case events.TransportSSE:
		client, pool, depth := httpClient(name, cfg.URL, res.Headers, true)
		depth.log = o.Log
		if res.OAuth != nil {
			// The go-sdk's SSE client takes no OAuth handler: its HTTP
			// client authorizes each request instead, sending the token to
			// the configured origin only. Requests addressed to another
			// origin are refused below it, and redirects to one followed
			// without the token.
			client.Transport = oauth.Transport(client.Transport, res.OAuth)
		}
		return &pooledTransport{Transport: &sseTransport{inner: &mcp.SSEClientTransport{Endpoint: cfg.URL, HTTPClient: client}}, pool: pool, depth: depth}, nil
	default:
		return nil, fmt.Errorf("MCP server %q: unknown server type %q", name, t)
	}
}

// checkDir reports a working directory that cannot be used, before the
// start of the process would report it as the command not being found.
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("working directory %s does not exist", dir)
	case err != nil:
		return fmt.Errorf("working directory: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("working directory %s is not a directory", dir)
	}
	return nil
}

// httpStreamRetries is how often the streamable HTTP transport tries to
// reopen an interrupted standalone event stream before it fails the
// session. The go-sdk's default (5, with backoff from 1 s) is slow to
// notice a server that vanished; one retry survives a single
// interrupted stream (a proxy resetting an idle connection) and notices a
// vanished server after the one reconnect delay (1–2 s). The count is not
// reset by a successful reconnect of a stream without event ids, so a
// server that keeps closing its stream is dropped either way.
const httpStreamRetries = 1

// httpClient returns the client of the server name at endpoint, with a
// connection pool of its own (settings cloned from the default transport),
// so a server's teardown can close its keep-alive connections. It sets
// headers on every request to endpoint's origin and on no other request,
// and sends an Authorization header to no other origin (see
// [originTransport]); with sse, it refuses a message endpoint on another
// origin. Messages nested too deep for the go-sdk are taken out of its
// responses (see [depthTransport], returned too, so that the caller can
// give it the server's logger).
func httpClient(name, endpoint string, headers map[string]string, sse bool) (*http.Client, *http.Transport, *depthTransport) {
	pool := http.DefaultTransport.(*http.Transport).Clone()
	u, err := url.Parse(endpoint)
	if err != nil {
		u = &url.URL{} // matches no request's origin: the headers are never sent
	}
	depth := &depthTransport{base: pool, server: name}
	return &http.Client{Transport: &originTransport{
		base: depth, server: name, configured: u, origin: originOf(u), headers: headers, refuseOther: sse,
	}}, pool, depth
}

// pooledTransport is an HTTP transport together with its connection pool.
// The connection it returns is the inner transport's own (the go-sdk
// relies on its optional methods); the manager closes the pool's idle
// connections after closing the session (see [Pool]).
type pooledTransport struct {
	mcp.Transport
	pool  *http.Transport
	depth *depthTransport // has the server's logger
}

// Pool returns the connection pool of an HTTP transport that [New]
// returned, whose idle connections are to be closed after the session;
// nil for any other transport.
func Pool(t mcp.Transport) *http.Transport {
	if pt, ok := t.(*pooledTransport); ok {
		return pt.pool
	}
	return nil
}

// Streamable returns the go-sdk streamable HTTP transport inside t, when
// t is one that [New] returned for a streamable HTTP server.
func Streamable(t mcp.Transport) (*mcp.StreamableClientTransport, bool) {
	if pt, ok := t.(*pooledTransport); ok {
		st, ok := pt.Transport.(*mcp.StreamableClientTransport)
		return st, ok
	}
	return nil, false
}

// sseTransport is the legacy HTTP+SSE transport with its event stream
// detached from the connect context: the connect timeout bounds the
// handshake, not the life of the stream.
type sseTransport struct {
	inner *mcp.SSEClientTransport
}

func (t *sseTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	streamCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	conn, err := t.inner.Connect(streamCtx)
	if !stop() {
		// ctx ended during the handshake: the stream is already cancelled.
		if err == nil {
			conn.Close()
			err = ctx.Err()
		}
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return &sseConn{Connection: conn, cancel: cancel}, nil
}

// sseConn cancels the stream's context when closed.
type sseConn struct {
	mcp.Connection
	cancel context.CancelFunc
}

// Write sends msg. A refused message endpoint on another origin is
// reported as the refusal alone, without the request URL around it. A
// message the server refused for want of OAuth scopes fails that request
// only, as on the streamable transport: the connection stays up.
func (c *sseConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if co, ok := errors.AsType[*crossOriginError](err); ok {
		return co
	}
	if ne, ok := errors.AsType[*oauth.NeedsAuthError](err); ok {
		return fmt.Errorf("%w: %w", errRejected, ne)
	}
	return err
}

// errRejected is the go-sdk's "rejected by transport" error (matched by
// its code): a write that fails with it fails its request, not the
// connection.
var errRejected = &jsonrpc.Error{Code: -32005, Message: "rejected by transport"}

func (c *sseConn) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}
