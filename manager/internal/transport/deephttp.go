package transport

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/internal/proc"
)

// depthTransport keeps a message nested deeper than the go-sdk decodes
// (see [proc.TooDeep]) from reaching the go-sdk's HTTP transports, which
// take it for a broken connection: a streamable HTTP server's deep
// tools/call result dropped the connection, and a deep tools/list made
// the client reconnect and fail again until it gave up. It rewrites the
// bodies of JSON and event-stream responses (streamable HTTP, and the
// stream of a legacy SSE server) as they are read: a too-deep response is
// replaced by a JSON-RPC error response with its id, saying it was
// nested too deep, so its request fails at once and the connection stays
// up; a too-deep request or notification is dropped. Each is logged.
//
// It holds at most one message of up to [maxCheckedMessage] bytes per
// body; a longer one is passed on unchecked, to the go-sdk's own bound on
// an event's size. Reading the events of a subscriptions/listen stream,
// it also notices the stream's end without its final response (see
// [OnListenEnd]). It is safe for concurrent use.
type depthTransport struct {
	base   http.RoundTripper
	server string
	log    *slog.Logger // the server's logger (nil: discard); set before the first request
	listenHook
}

// maxCheckedMessage is the longest message depthTransport checks: the
// go-sdk's bound on one event of a stream (a longer one ends the stream
// there), and the manager's default bound on one message of a stdio
// server.
const maxCheckedMessage = mcp.DefaultMaxEventSize

func (t *depthTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.Body == nil || resp.Body == http.NoBody {
		return resp, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		resp.Body = &jsonBody{body: resp.Body, check: t.check}
	case "text/event-stream":
		b := newEventBody(resp.Body, t.check)
		b.listen = t.watch(r, resp)
		resp.Body = b
	}
	return resp, nil
}

// check reports whether msg, one message the server sent, is to be
// discarded, and returns what takes its place then: the error response
// that answers its request, or nil when it is dropped.
func (t *depthTransport) check(msg []byte) (discarded bool, answer []byte) {
	tooDeep, what, answer := proc.TooDeep(t.server, msg)
	if !tooDeep {
		return false, nil
	}
	if t.log != nil {
		t.log.Warn("MCP server sent a "+what+" nested too deep; discarded", "bytes", len(msg), "answered", answer != nil)
	}
	return true, answer
}

// jsonBody is the body of a JSON response, one message: it is read whole
// (up to maxCheckedMessage bytes) and checked before any of it is passed
// on. A body that is not a response and nested too deep is passed on as
// it is: the go-sdk expects the response of its request in it, and fails
// the connection without one either way.
type jsonBody struct {
	body  io.ReadCloser
	check func([]byte) (bool, []byte)
	r     io.Reader // what Read returns; nil until the first Read
}

func (b *jsonBody) Read(p []byte) (int, error) {
	if b.r == nil {
		msg, err := io.ReadAll(io.LimitReader(b.body, maxCheckedMessage+1))
		switch {
		case err != nil:
			b.r = io.MultiReader(bytes.NewReader(msg), errReader{err})
		case len(msg) > maxCheckedMessage:
			b.r = io.MultiReader(bytes.NewReader(msg), b.body)
		default:
			if discarded, answer := b.check(bytes.TrimSpace(msg)); discarded && answer != nil {
				msg = answer
			}
			b.r = bytes.NewReader(msg)
		}
	}
	return b.r.Read(p)
}

func (b *jsonBody) Close() error { return b.body.Close() }

// errReader returns its error.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// eventBody is the body of an event stream, passed on event by event as
// the go-sdk reads events: lines up to a blank one, each ending in a line
// feed. The data of a message event ("message" or unnamed), its data
// lines joined by line feeds as the go-sdk joins them, is checked; a
// message that takes the place of a too-deep one goes out as one data
// line, and a dropped one leaves its event without data (its id still
// counts for resuming the stream). Other events and lines pass as they
// are.
type eventBody struct {
	body  io.ReadCloser
	br    *bufio.Reader
	check func([]byte) (bool, []byte)

	event   [][]byte // the lines of the event being read, with their line ends
	size    int      // bytes in event
	through bool     // an event over maxCheckedMessage: the rest passes unchecked
	out     []byte   // what Read returns next
	err     error    // the body's error, returned after out

	listen *listenWatch // a subscriptions/listen stream's (nil: not one)
}

func newEventBody(body io.ReadCloser, check func([]byte) (bool, []byte)) *eventBody {
	return &eventBody{body: body, br: bufio.NewReaderSize(body, 32<<10), check: check}
}

func (b *eventBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if b.err != nil {
			if b.listen != nil {
				b.listen.end(b.err)
			}
			return 0, b.err
		}
		if b.through {
			n, err := b.br.Read(p)
			if err != nil && b.listen != nil {
				b.listen.end(err)
			}
			return n, err
		}
		b.readLine()
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

// readLine reads the next line (or what is left before the body's end or
// error) and, at the end of an event, sets out to it.
func (b *eventBody) readLine() {
	frag, err := b.br.ReadSlice('\n')
	line := frag
	if errors.Is(err, bufio.ErrBufferFull) {
		line = bytes.Clone(frag)
		for errors.Is(err, bufio.ErrBufferFull) && b.size+len(line) <= maxCheckedMessage {
			frag, err = b.br.ReadSlice('\n')
			line = append(line, frag...)
		}
	}
	if b.size+len(line) > maxCheckedMessage {
		b.passThrough(line)
		if !errors.Is(err, bufio.ErrBufferFull) {
			b.err = err
		}
		return
	}
	if len(line) > 0 {
		b.event = append(b.event, bytes.Clone(line))
		b.size += len(line)
	}
	if err != nil {
		b.err = err
		b.endEvent()
		return
	}
	if len(bytes.TrimRight(line, "\r\n")) == 0 {
		b.endEvent()
	}
}

// passThrough gives up checking: what was read of the event, line and
// the rest of the body pass on as they are.
func (b *eventBody) passThrough(line []byte) {
	b.out = append(bytes.Join(b.event, nil), line...)
	b.event, b.size, b.through = nil, 0, true
}

// endEvent sets out to the event read, checked.
func (b *eventBody) endEvent() {
	lines := b.event
	b.event, b.size = nil, 0
	var name, data []byte
	dataLines := 0
	for _, l := range lines {
		field, value, ok := bytes.Cut(bytes.TrimRight(l, "\r\n"), []byte{':'})
		if !ok {
			continue
		}
		switch string(field) {
		case "event":
			name = bytes.TrimSpace(value)
		case "data":
			if dataLines++; dataLines > 1 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimSpace(value)...)
		}
	}
	if dataLines == 0 || len(data) == 0 || len(name) > 0 && string(name) != "message" {
		b.out = bytes.Join(lines, nil)
		return
	}
	discarded, msg := b.check(data)
	if b.listen != nil {
		if discarded && msg != nil {
			b.listen.saw(msg)
		} else {
			b.listen.saw(data)
		}
	}
	if !discarded {
		b.out = bytes.Join(lines, nil)
		return
	}
	var out []byte
	for _, l := range lines {
		if field, _, ok := bytes.Cut(l, []byte{':'}); ok && string(field) == "data" {
			continue
		}
		if len(bytes.TrimRight(l, "\r\n")) == 0 {
			if msg != nil {
				out = append(append(append(out, "data: "...), msg...), '\n')
				msg = nil
			}
		}
		out = append(out, l...)
	}
	if msg != nil { // the stream ended without the event's blank line
		out = append(append(append(out, "data: "...), msg...), '\n')
	}
	b.out = out
}

func (b *eventBody) Close() error { return b.body.Close() }
