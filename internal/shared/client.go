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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/internal/rawio"
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

// AttachStream is [Client.Attach] and the stream of [Client.Transport]
// in one exchange on one connection: the attach asks for the upgrade, and
// its answer is the stream's first line. The transport returned connects
// once, to that stream; closing its session releases the instance.
func (c *Client) AttachStream(ctx context.Context, a Attach) (Attached, mcp.Transport, error) {
	select {
	case <-c.done:
		return Attached{}, nil, fmt.Errorf("shared: %s: control stream ended", c.socket)
	default:
	}
	body, err := json.Marshal(a)
	if err != nil {
		return Attached{}, nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.socket)
	if err != nil {
		return Attached{}, nil, fmt.Errorf("shared: attach: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() }) // until the answer is read
	req, _ := http.NewRequest(http.MethodPost, baseURL+PathHosts+"/"+c.welcome.Host+PathAttach, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HostHeader, c.welcome.Host)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", StreamProtocol)
	br := bufio.NewReader(conn)
	var (
		resp *http.Response
		line []byte
	)
	if err = req.Write(conn); err == nil {
		resp, err = http.ReadResponse(br, req)
	}
	if err == nil && resp.StatusCode == http.StatusSwitchingProtocols {
		line, err = br.ReadBytes('\n')
	}
	if !stop() {
		conn.Close()
		return Attached{}, nil, ctx.Err()
	}
	if err != nil {
		conn.Close()
		return Attached{}, nil, fmt.Errorf("shared: attach: %w", err)
	}
	if resp.StatusCode == http.StatusOK {
		// A shared host that opens no stream with an attach: the stream
		// is opened on its own, as by Attach and Transport.
		defer conn.Close()
		defer resp.Body.Close()
		var att Attached
		if err := json.NewDecoder(resp.Body).Decode(&att); err != nil {
			return Attached{}, nil, fmt.Errorf("shared: attach: %w", err)
		}
		return att, c.Transport(att), nil
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer conn.Close()
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusBadGateway {
			return Attached{}, nil, fmt.Errorf("%w: %w", ErrServerFailed, failure(resp))
		}
		return Attached{}, nil, fmt.Errorf("shared: attach: %w", failure(resp))
	}
	var att Attached
	if err := json.Unmarshal(line, &att); err != nil || att.Instance == "" {
		conn.Close()
		return Attached{}, nil, fmt.Errorf("shared: attach: bad answer %q", strings.TrimSpace(string(line)))
	}
	t := &streamTransport{c: c, path: Stream(att.Instance), answers: att.Answers, opened: &atomic.Pointer[upgraded]{}}
	t.opened.Store(&upgraded{conn: conn, r: br})
	return att, t, nil
}

// Transport returns the MCP transport of an attached instance: a stream
// of its own on the socket (an HTTP request upgraded to newline-delimited
// JSON-RPC), which costs a call no HTTP exchange of its own. Closing its
// session releases the instance; the end of the control stream closes it.
func (c *Client) Transport(a Attached) mcp.Transport {
	return &streamTransport{c: c, path: Stream(a.Instance), answers: a.Answers}
}

// HTTPTransport returns the instance's streamable-HTTP transport, for a
// client that wants HTTP; [Client.Transport] is the faster one.
func (c *Client) HTTPTransport(a Attached) mcp.Transport {
	return &mcp.StreamableClientTransport{Endpoint: baseURL + a.Endpoint, HTTPClient: c.http, MaxRetries: 1}
}

// streamTransport opens an instance's stream.
type streamTransport struct {
	c       *Client
	path    string
	answers *Answers    // of the attach; nil: none
	listed  atomic.Bool // FirstTools took the answer's tools
	// opened, when set, holds the stream [Client.AttachStream] opened,
	// until the one Connect takes it.
	opened *atomic.Pointer[upgraded]
}

// upgraded is a connection upgraded to a stream, whose reads go through r.
type upgraded struct {
	conn net.Conn
	r    *bufio.Reader
}

func (t *streamTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	select {
	case <-t.c.done:
		return nil, fmt.Errorf("shared: %s: control stream ended", t.c.socket)
	default:
	}
	if t.opened != nil {
		o := t.opened.Swap(nil)
		if o == nil {
			return nil, fmt.Errorf("shared: %s: the attach's stream was connected already", t.path)
		}
		return t.open(ctx, o.conn, o.r)
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
	if t.answers != nil {
		req.Header.Set(RevisionHeader, strconv.FormatUint(t.answers.Revision, 10))
	}
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
	return t.open(ctx, conn, br)
}

// open returns the MCP connection of an upgraded stream, whose reads go
// through br.
func (t *streamTransport) open(ctx context.Context, conn net.Conn, br *bufio.Reader) (mcp.Connection, error) {
	s := newStream(conn, br, t.c.done)
	go func() {
		select {
		case <-t.c.done:
			conn.Close()
		case <-s.closed:
		}
	}()
	return NewLineConn(s, s, s.Close), nil
}

// Answering returns the sending middleware that answers, on a client
// connection of t (a transport of [Client.Transport]), the first
// server/discover sent at [AnswersProtocol] from the attach answer's
// [Answers], which saves the stream its round trip; nil when the attach
// answer had none. Other requests, and a discover at another version, go
// to the stream.
func Answering(t mcp.Transport) mcp.Middleware {
	st, ok := t.(*streamTransport)
	if !ok || st.answers == nil {
		return nil
	}
	a := st.answers
	var discovered atomic.Bool
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "server/discover" {
				p, _ := req.GetParams().(*mcp.DiscoverParams)
				if p != nil && atAnswersProtocol(p.Meta) && discovered.CompareAndSwap(false, true) {
					var res mcp.DiscoverResult
					if json.Unmarshal(a.Discover, &res) == nil {
						return &res, nil
					}
				}
			}
			return next(ctx, method, req)
		}
	}
}

// FirstTools returns, once per transport t (of [Client.Transport]), the
// first page of the instance's tools/list as the attach answer gave it,
// for a session at protocol version pv: the host takes it for the answer
// to its first tools/list, which saves the stream that round trip. ok is
// false when there is none to take: no answers, pv is not
// [AnswersProtocol], or it was taken. The shared host tells the stream of
// every change of the tools since the answer was made, so the list the
// host keeps follows the instance's. The tools are the relay's, which
// its own client's checks let through already.
func FirstTools(t mcp.Transport, pv string) (*mcp.ListToolsResult, bool) {
	st, ok := t.(*streamTransport)
	if !ok || st.answers == nil || pv != AnswersProtocol || !st.listed.CompareAndSwap(false, true) {
		return nil, false
	}
	var res mcp.ListToolsResult
	if json.Unmarshal(st.answers.Tools, &res) != nil {
		return nil, false
	}
	return &res, true
}

// atAnswersProtocol reports whether a request's _meta says it is sent at
// [AnswersProtocol].
func atAnswersProtocol(meta mcp.Meta) bool {
	v, _ := meta[mcp.MetaKeyProtocolVersion].(string)
	return v == AnswersProtocol
}

// detachWait bounds how long closing a stream waits for the shared host
// to have released the attachment.
const detachWait = 5 * time.Second

// stream is an upgraded connection: reads go through the buffer that
// read the upgrade's answer.
type stream struct {
	net.Conn
	r io.Reader // the connection's, through the buffer of its upgrade
	w io.Writer
	// reading is held (a send) by the read in progress: the session's
	// reader and the drain of Close never read r at once.
	reading chan struct{}
	once    sync.Once
	err     error
	closed  chan struct{} // closed by Close
	eofOnce sync.Once
	eof     chan struct{}   // closed when a read failed: the shared host closed its end
	ended   <-chan struct{} // the control stream's end
}

// newStream returns the stream of conn, whose reads go through br; ended
// is the control stream's end.
func newStream(conn net.Conn, br *bufio.Reader, ended <-chan struct{}) *stream {
	s := &stream{Conn: conn, reading: make(chan struct{}, 1), closed: make(chan struct{}), eof: make(chan struct{}), ended: ended}
	s.r, s.w = rawio.Conn(conn, br)
	return s
}

func (s *stream) Read(p []byte) (int, error) {
	s.reading <- struct{}{}
	defer func() { <-s.reading }()
	n, err := s.r.Read(p)
	if err != nil {
		s.eofOnce.Do(func() { close(s.eof) })
	}
	return n, peerEnded(err)
}

func (s *stream) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	return n, peerEnded(err)
}

// peerEnded returns io.EOF for an error that says the shared host's end of
// the stream is gone (its close found data unread, or its process died),
// err otherwise: that is the end of the stream as much as an end of file
// is, and one that comes with the end of the control stream fails with
// the connection closed here. So the error a host records for the stream's
// end does not depend on which of its connections is seen ending first.
func peerEnded(err error) error {
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return io.EOF
	}
	return err
}

// drain reads and drops what the shared host still sends until its end,
// unless a read of the session's reader sees that end first. The go-sdk
// calls Close while it holds the lock its reader takes for each message
// it read, so a message that arrives during the close stops that reader
// until Close returns: the end of the stream must not depend on it. What
// arrives after the close began has no one to go to.
func (s *stream) drain() {
	select {
	case s.reading <- struct{}{}:
	case <-s.eof:
		return
	}
	defer func() { <-s.reading }()
	io.Copy(io.Discard, s.r)
	s.eofOnce.Do(func() { close(s.eof) })
}

// Close ends the stream as a detach: it closes the writing half, waits
// for the shared host to close its end, which it does once it released
// the attachment (so a detach is recorded as such before the control
// stream's end), reading on itself when the session's reader does not
// (drain), and closes the connection. Once: the transport closes
// its reader and its writer, both s.
func (s *stream) Close() error {
	s.once.Do(func() {
		close(s.closed)
		if cw, ok := s.Conn.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
			go s.drain() // ends at the latest when the connection is closed below
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
