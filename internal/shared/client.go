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

// Transport returns the MCP transport of an attached instance: streamable
// HTTP on the socket. Closing its session releases the instance.
func (c *Client) Transport(a Attached) mcp.Transport {
	return &mcp.StreamableClientTransport{Endpoint: baseURL + a.Endpoint, HTTPClient: c.http, MaxRetries: 1}
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
