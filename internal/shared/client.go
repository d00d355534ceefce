package shared

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// baseURL is the scheme and authority of every request on the socket;
// the host part is never resolved.
const baseURL = "http://mcplife-shared"

// Client is a host's attachment to a shared host: its control stream and
// the HTTP client that reaches the socket. It is safe for concurrent use.
type Client struct {
	socket  string
	http    *http.Client
	welcome Welcome
	cancel  context.CancelFunc
	done    chan struct{}
}

// ErrServerFailed wraps the error of an [Client.Attach] whose server the
// shared host could not start: running it elsewhere would fail as well.
var ErrServerFailed = errors.New("shared server failed to start")

// ErrNoSharedHost wraps the error of a [Dial] that found nothing
// listening on the socket (no socket file, or a stale one).
var ErrNoSharedHost = errors.New("no shared host running")

// Dial opens a control stream to the shared host on socket. ctx bounds
// the opening only; the stream stays open until [Client.Close] or the
// shared host's end ([Client.Done]).
func Dial(ctx context.Context, socket string, hello Hello) (*Client, error) {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     time.Minute,
	}
	c := &Client{socket: socket, done: make(chan struct{})}
	body, _ := json.Marshal(hello)
	sctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	req, err := http.NewRequestWithContext(sctx, http.MethodPost, baseURL+PathHosts, bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	stop := context.AfterFunc(ctx, cancel) // until the welcome arrives
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		stop()
		cancel()
		if isNoListener(err) {
			return nil, fmt.Errorf("shared: %s: %w (%v)", socket, ErrNoSharedHost, err)
		}
		return nil, fmt.Errorf("shared: %s: %w", socket, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		stop()
		cancel()
		return nil, fmt.Errorf("shared: %s: %w", socket, failure(resp))
	}
	r := bufio.NewReader(resp.Body)
	line, err := r.ReadBytes('\n')
	if !stop() || err != nil {
		resp.Body.Close()
		cancel()
		if err == nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("shared: %s: control stream: %w", socket, err)
	}
	if err := json.Unmarshal(line, &c.welcome); err != nil || c.welcome.Host == "" {
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("shared: %s: bad welcome %q", socket, strings.TrimSpace(string(line)))
	}
	c.http = &http.Client{Transport: hostHeader{base: tr, host: c.welcome.Host}}
	go func() {
		io.Copy(io.Discard, r)
		resp.Body.Close()
		close(c.done)
		tr.CloseIdleConnections()
	}()
	return c, nil
}

// isNoListener reports an error of connecting to a socket that nothing
// listens on.
func isNoListener(err error) bool {
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		return false
	}
	s := op.Err.Error()
	return strings.Contains(s, "connection refused") || strings.Contains(s, "no such file")
}

// failure is the error of a non-200 answer.
func failure(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	var f Failure
	if json.Unmarshal(b, &f) == nil && f.Error != "" {
		return fmt.Errorf("%s: %s", resp.Status, f.Error)
	}
	return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
}

// Welcome returns what the shared host said when the stream opened.
func (c *Client) Welcome() Welcome { return c.welcome }

// Done is closed when the control stream ended: the shared host went
// away, or Close was called. The host's instances are released then.
func (c *Client) Done() <-chan struct{} { return c.done }

// Close ends the control stream, which releases every instance of the
// host, and waits for its end. Idempotent.
func (c *Client) Close() error {
	c.cancel()
	<-c.done
	c.http.CloseIdleConnections()
	return nil
}

// Attach asks for a shared instance of a stdio server.
func (c *Client) Attach(ctx context.Context, a Attach) (Attached, error) {
	body, err := json.Marshal(a)
	if err != nil {
		return Attached{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+PathHosts+"/"+c.welcome.Host+PathAttach, bytes.NewReader(body))
	if err != nil {
		return Attached{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return Attached{}, fmt.Errorf("shared: attach: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusBadGateway {
		return Attached{}, fmt.Errorf("%w: %w", ErrServerFailed, failure(resp))
	}
	if resp.StatusCode != http.StatusOK {
		return Attached{}, fmt.Errorf("shared: attach: %w", failure(resp))
	}
	var out Attached
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return Attached{}, fmt.Errorf("shared: attach: %w", err)
	}
	return out, nil
}

// Transport returns the MCP transport of an attached instance: a stream
// of its own on the socket (an HTTP request upgraded to newline-delimited
// JSON-RPC), which costs a call no HTTP exchange of its own. Closing its
// session releases the instance; the end of the control stream closes it.
func (c *Client) Transport(a Attached) mcp.Transport {
	return &streamTransport{c: c, path: Stream(a.Instance)}
}

// HTTPTransport returns the instance's streamable-HTTP transport, for a
// client that wants HTTP; [Client.Transport] is the faster one.
func (c *Client) HTTPTransport(a Attached) mcp.Transport {
	return &mcp.StreamableClientTransport{Endpoint: baseURL + a.Endpoint, HTTPClient: c.http, MaxRetries: 1}
}

// streamTransport opens an instance's stream.
type streamTransport struct {
	c    *Client
	path string
}

func (t *streamTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	select {
	case <-t.c.done:
		return nil, fmt.Errorf("shared: %s: control stream ended", t.c.socket)
	default:
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", t.c.socket)
	if err != nil {
		return nil, fmt.Errorf("shared: %s: %w", t.c.socket, err)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() }) // until the upgrade is answered
	req, _ := http.NewRequest(http.MethodPost, baseURL+t.path, nil)
	req.Header.Set(HostHeader, t.c.welcome.Host)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", StreamProtocol)
	br := bufio.NewReader(conn)
	var resp *http.Response
	if err = req.Write(conn); err == nil {
		resp, err = http.ReadResponse(br, req)
	}
	if !stop() {
		conn.Close()
		return nil, ctx.Err()
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("shared: stream: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		err := failure(resp)
		resp.Body.Close()
		conn.Close()
		return nil, fmt.Errorf("shared: stream: %w", err)
	}
	s := &stream{Conn: conn, r: br, closed: make(chan struct{}), eof: make(chan struct{}), ended: t.c.done}
	go func() {
		select {
		case <-t.c.done:
			conn.Close()
		case <-s.closed:
		}
	}()
	return NewLineConn(s, s, s.Close), nil
}

// detachWait bounds how long closing a stream waits for the shared host
// to have released the attachment.
const detachWait = 5 * time.Second

// stream is an upgraded connection: reads go through the buffer that
// read the upgrade's answer.
type stream struct {
	net.Conn
	r       *bufio.Reader
	once    sync.Once
	err     error
	closed  chan struct{} // closed by Close
	eofOnce sync.Once
	eof     chan struct{}   // closed when a read failed: the shared host closed its end
	ended   <-chan struct{} // the control stream's end
}

func (s *stream) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil {
		s.eofOnce.Do(func() { close(s.eof) })
	}
	return n, err
}

// Close ends the stream as a detach: it closes the writing half, waits
// for the shared host to close its end, which it does once it released
// the attachment (so a detach is recorded as such before the control
// stream's end), and closes the connection. Once: the transport closes
// its reader and its writer, both s.
func (s *stream) Close() error {
	s.once.Do(func() {
		close(s.closed)
		if cw, ok := s.Conn.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
			t := time.NewTimer(detachWait)
			select {
			case <-s.eof:
			case <-s.ended:
			case <-t.C:
			}
			t.Stop()
		}
		s.err = s.Conn.Close()
	})
	return s.err
}

// hostHeader names the host on every request.
type hostHeader struct {
	base http.RoundTripper
	host string
}

func (h hostHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(HostHeader, h.host)
	return h.base.RoundTrip(r)
}

// CloseIdleConnections closes the idle connections of the transport below.
func (h hostHeader) CloseIdleConnections() {
	if ci, ok := h.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}
