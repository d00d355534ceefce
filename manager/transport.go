package manager

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
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
)

// resolved is one connect attempt's substituted configuration. Every
// substituted value is a secret: it goes to the child process or the HTTP
// request and nowhere else.
type resolved struct {
	// cfg is the configuration with its command, arguments, URL and
	// working directory expanded (see [Expander]); its env and headers are
	// the unresolved ones.
	cfg     events.ServerConfig
	env     map[string]string
	headers map[string]string
	// scrub replaces every resolved value, every configured value and
	// every credential-like value of the inherited environment inside a
	// text with [events.Redacted].
	scrub *strings.Replacer
}

// minSecretLen is the shortest value scrubbed from error texts; shorter
// values ("1", "on") would garble messages without protecting anything.
const minSecretLen = 4

// resolveConfig substitutes cfg through r: the env and header values, and
// (when r is an [Expander]) the references in the command, arguments, URL
// and working directory. An env or header entry whose resolution fails is
// omitted and the reason logged (without the value).
func resolveConfig(ctx context.Context, server string, cfg events.ServerConfig, r Resolver, log *slog.Logger) resolved {
	secrets := inheritedSecrets(os.Environ())
	do := func(kind string, in map[string]string) map[string]string {
		if len(in) == 0 {
			return nil
		}
		out := make(map[string]string, len(in))
		for _, k := range slices.Sorted(maps.Keys(in)) {
			v := in[k]
			secrets = append(secrets, v)
			rv, err := r.Resolve(ctx, v)
			if err != nil {
				log.Warn("MCP config value omitted", "server", server, kind, k, "err", events.RedactText(err.Error()))
				continue
			}
			secrets = append(secrets, rv)
			out[k] = rv
		}
		return out
	}
	res := resolved{cfg: cfg.Clone(), env: do("env", cfg.Env), headers: do("header", cfg.Headers)}
	if x, ok := r.(Expander); ok {
		expand := func(v string) string {
			out, subst := x.Expand(v)
			secrets = append(secrets, subst...)
			return out
		}
		c := &res.cfg
		c.Command, c.URL, c.Cwd = expand(c.Command), expand(c.URL), expand(c.Cwd)
		for i, a := range c.Args {
			c.Args[i] = expand(a)
		}
	}
	res.scrub = newScrubber(secrets)
	return res
}

// inheritedSecrets returns the values of the variables in environ (KEY=VALUE
// entries, as [os.Environ] gives them) whose names look like credentials
// ([events.IsCredentialName]: GITHUB_PAT, OPENAI_API_KEY, …). A child
// process inherits them, and a server that prints its environment must not
// carry them into an event.
func inheritedSecrets(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && v != "" && events.IsCredentialName(k) {
			out = append(out, v)
		}
	}
	return out
}

// newScrubber returns a replacer of every secret of at least minSecretLen
// bytes by [events.Redacted], longest first.
func newScrubber(secrets []string) *strings.Replacer {
	secrets = slices.DeleteFunc(slices.Clone(secrets), func(s string) bool { return len(s) < minSecretLen })
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	secrets = slices.Compact(secrets)
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		pairs = append(pairs, s, events.Redacted)
	}
	return strings.NewReplacer(pairs...)
}

// scrubText removes resolved secrets and credential-like parameters from a
// text that may be recorded.
func (r resolved) scrubText(s string) string {
	if r.scrub != nil {
		s = r.scrub.Replace(s)
	}
	return events.RedactText(s)
}

// dialer builds the transport of one connect attempt. The default is
// [newTransport]; tests of the lifecycle swap in in-memory transports.
type dialer func(name string, cfg events.ServerConfig, res resolved, cwd string) (mcp.Transport, error)

// newTransport returns the go-sdk transport for cfg: a child process for
// stdio, streamable HTTP, or legacy HTTP+SSE. Header values are sent with
// every HTTP request to the origin of cfg.URL, and with no other.
func newTransport(name string, cfg events.ServerConfig, res resolved, cwd string) (mcp.Transport, error) {
	switch t := cfg.Transport(); t {
	case events.TransportStdio:
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
		for _, k := range slices.Sorted(maps.Keys(res.env)) {
			env = append(env, k+"="+res.env[k]) // later entries win
		}
		return &stdioTransport{command: cfg.Command, args: slices.Clone(cfg.Args), env: env, dir: dir}, nil
	case events.TransportHTTP:
		client, pool := httpClient(name, cfg.URL, res.headers, false)
		return &pooledTransport{Transport: &mcp.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: client, MaxRetries: httpStreamRetries}, pool: pool}, nil
	case events.TransportSSE:
		client, pool := httpClient(name, cfg.URL, res.headers, true)
		return &pooledTransport{Transport: &sseTransport{inner: &mcp.SSEClientTransport{Endpoint: cfg.URL, HTTPClient: client}}, pool: pool}, nil
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
// session. The go-sdk's default (5, with backoff from 1 s) took about 20 s
// to notice a server that vanished; one retry survives a single
// interrupted stream (a proxy resetting an idle connection) and notices a
// vanished server after the one reconnect delay (1–2 s). The count is not
// reset by a successful reconnect of a stream without event ids, so a
// server that keeps closing its stream is dropped either way.
const httpStreamRetries = 1

// httpClient returns the client of the server name at endpoint, with a
// connection pool of its own (settings cloned from the default transport),
// so a server's teardown can close its keep-alive connections. It sets
// headers on every request to endpoint's origin and on no other request
// (see [originTransport]); with sse, it refuses a message endpoint on
// another origin.
func httpClient(name, endpoint string, headers map[string]string, sse bool) (*http.Client, *http.Transport) {
	pool := http.DefaultTransport.(*http.Transport).Clone()
	if len(headers) == 0 && !sse {
		return &http.Client{Transport: pool}, pool
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		u = &url.URL{} // matches no request's origin: the headers are never sent
	}
	return &http.Client{Transport: &originTransport{
		base: pool, server: name, configured: u, origin: originOf(u), headers: headers, refuseOther: sse,
	}}, pool
}

// pooledTransport is an HTTP transport together with its connection pool.
// The connection it returns is the inner transport's own (the go-sdk
// relies on its optional methods); the manager closes the pool's idle
// connections after closing the session.
type pooledTransport struct {
	mcp.Transport
	pool *http.Transport
}

// stdioTransport starts a server process and speaks newline-delimited
// JSON-RPC on its stdin and stdout. Closing the connection tears the
// process group down (see [process.terminate]).
type stdioTransport struct {
	command string
	args    []string
	env     []string
	dir     string

	log  *slog.Logger // the server's logger (nil: discard)
	proc *process     // set by Connect
	// server names the server in errors; maxMessage is the longest line
	// of stdout passed on (0: [DefaultMaxMessageSize]; see [jsonLines]).
	server     string
	maxMessage int
}

// Connect starts the process. It is called once, by the go-sdk client.
func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	if t.proc != nil {
		return nil, errors.New("stdio transport: already connected")
	}
	p, err := startProcess(t.command, t.args, t.env, t.dir)
	if err != nil {
		return nil, fmt.Errorf("start %q: %w", t.command, err)
	}
	t.proc = p
	log := t.log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	lines := newJSONLines(p.stdout, t.server, t.maxMessage, p.stderr, log)
	// The filter bounds every line it passes, and answers a request whose
	// response was too long; the go-sdk's own bound would end the whole
	// connection instead, so it is off.
	return (&mcp.IOTransport{Reader: stdoutReader{p, lines}, Writer: stdinWriter{p}, MaxLineLength: -1}).Connect(ctx)
}

// stdoutReader reads the child's stdout, skipping lines that are not
// JSON-RPC (see [jsonLines]). Its Close does nothing: the connection's
// Close closes the reader first and the writer second, and the writer's
// Close (the teardown) closes stdout once the group is gone.
type stdoutReader struct {
	p     *process
	lines *jsonLines
}

func (r stdoutReader) Read(b []byte) (int, error) { return r.lines.Read(b) }
func (r stdoutReader) Close() error               { return nil }

// stdinWriter writes the child's stdin; its Close tears the process down.
type stdinWriter struct{ p *process }

func (w stdinWriter) Write(b []byte) (int, error) { return w.p.stdin.Write(b) }
func (w stdinWriter) Close() error                { return w.p.terminate() }

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
// reported as the refusal alone, without the request URL around it.
func (c *sseConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if co, ok := errors.AsType[*crossOriginError](err); ok {
		return co
	}
	return err
}

func (c *sseConn) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}
