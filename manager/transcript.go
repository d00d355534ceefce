package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/manager/internal/transport"
	"github.com/mcplife/mcplife/store"
)

// Transcripts. A server whose config says record "transcript" (or every
// server, with Options.Transcript) has every JSON-RPC message between the
// client and it kept beside the events, in the store's transcript table
// (a [store.TranscriptStore]; a store without one keeps none). Each
// message is scrubbed like the server's stderr (every resolved secret,
// credential-like pairs, OAuth tokens) and cut at
// [TranscriptMessageCap]; a connection keeps at most
// [TranscriptSessionCap] bytes, and what it could not keep is counted on
// a closing "cut" line. Lines are queued and written by one goroutine per
// store, so a slow store never delays a call: when the queue is full the
// line is dropped and counted too.

const (
	// TranscriptMessageCap is the most bytes kept of one message.
	TranscriptMessageCap = 64 << 10
	// TranscriptSessionCap is the most bytes of messages kept of one
	// connection (one MCP session).
	TranscriptSessionCap = 16 << 20
	// transcriptQueue is the number of lines that wait for the store.
	transcriptQueue = 4096
	// transcriptBatch is the most lines written in one append.
	transcriptBatch = 256
	// transcriptFlushWait bounds how long closing a connection waits for
	// its lines to reach the store.
	transcriptFlushWait = 5 * time.Second
)

// The caps in force; tests lower them.
var (
	messageCap = TranscriptMessageCap
	sessionCap = int64(TranscriptSessionCap)
)

// transcriptOn reports whether s's transcript is kept.
func (m *Manager) transcriptOn(s *server) bool {
	return m.opts.Transcript || s.cfg.Record == events.RecordTranscript
}

// transcribe returns t with its messages recorded in s's transcript when
// that is on and the store keeps transcripts; t itself otherwise.
func (m *Manager) transcribe(s *server, res transport.Resolved, t mcp.Transport) mcp.Transport {
	if !m.transcriptOn(s) {
		return t
	}
	ts, ok := m.j.Store().(store.TranscriptStore)
	if !ok {
		m.log.Warn("transcript: the store keeps no transcripts", "server", s.name)
		return t
	}
	rec := &transcriptRec{session: m.session, server: s.name, res: res}
	// The streamable HTTP connection learns the session's protocol from
	// the client through a method a wrapper cannot forward, so its
	// messages are taken from its HTTP exchanges instead.
	if st, ok := transport.Streamable(t); ok && st.HTTPClient != nil {
		rec.w = acquireWriter(ts)
		c := *st.HTTPClient
		base := c.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		c.Transport = &transcriptHTTP{base: base, rec: rec}
		st2 := *st
		st2.HTTPClient = &c
		// Its connection cannot be wrapped to learn of its end: the
		// transcript ends with the server.
		context.AfterFunc(s.ctx, rec.end)
		return &st2
	}
	return &transcriptTransport{inner: t, ts: ts, rec: rec, ctx: s.ctx}
}

// transcriptTransport records the messages of the connections it opens.
type transcriptTransport struct {
	inner mcp.Transport
	ts    store.TranscriptStore
	rec   *transcriptRec
	ctx   context.Context // the server's
}

func (t *transcriptTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	w := acquireWriter(t.ts)
	t.rec.mu.Lock()
	t.rec.w = w
	t.rec.mu.Unlock()
	context.AfterFunc(t.ctx, t.rec.end) // in case the connection is never closed
	return &transcriptConn{Connection: c, rec: t.rec}, nil
}

// transcriptConn records each message read and written.
type transcriptConn struct {
	mcp.Connection
	rec *transcriptRec
}

func (c *transcriptConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		c.rec.message(store.TranscriptIn, msg)
	}
	return msg, err
}

func (c *transcriptConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.rec.message(store.TranscriptOut, msg)
	return c.Connection.Write(ctx, msg)
}

func (c *transcriptConn) Close() error {
	err := c.Connection.Close()
	c.rec.end()
	return err
}

// transcriptRec is the transcript of one connection.
type transcriptRec struct {
	session, server string
	res             transport.Resolved
	w               *transcriptWriter

	mu                    sync.Mutex
	kept                  int64 // bytes of messages kept
	dropped, droppedBytes int64
	ended                 bool
	flushed               chan struct{} // closed when the first end is done
}

func (r *transcriptRec) message(dir string, msg jsonrpc.Message) {
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return
	}
	r.raw(dir, b)
}

// raw records one encoded message.
func (r *transcriptRec) raw(dir string, b []byte) {
	line := store.TranscriptLine{Session: r.session, Server: r.server, Time: time.Now().UTC(), Direction: dir}
	text := r.res.ScrubMessage(string(b))
	if len(text) > messageCap {
		cut := messageCap
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		line.Cut = int64(len(text) - cut)
		text = text[:cut]
	}
	line.Message = text
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	if r.kept+int64(len(text)) > sessionCap || !r.w.offer(line) {
		r.dropped++
		r.droppedBytes += int64(len(b))
		return
	}
	r.kept += int64(len(text))
}

// end closes the transcript of the connection: the count of what was not
// kept, then a bounded wait for its lines to reach the store. A later call
// waits for the first one's flush.
func (r *transcriptRec) end() {
	r.mu.Lock()
	if r.flushed == nil {
		r.flushed = make(chan struct{})
	}
	flushed := r.flushed
	if r.ended {
		r.mu.Unlock()
		t := time.NewTimer(transcriptFlushWait)
		defer t.Stop()
		select {
		case <-flushed:
		case <-t.C:
		}
		return
	}
	r.ended = true
	w := r.w
	if w == nil {
		r.mu.Unlock()
		close(flushed)
		return
	}
	if r.dropped > 0 {
		w.force(store.TranscriptLine{Session: r.session, Server: r.server, Time: time.Now().UTC(), Direction: store.TranscriptCut,
			Dropped: r.dropped, DroppedBytes: r.droppedBytes})
	}
	r.mu.Unlock()
	w.flush(transcriptFlushWait)
	releaseWriter(w)
	close(flushed)
}

// transcriptWriter writes the transcript lines of one store, from a queue,
// in one goroutine that runs while a connection records.
type transcriptWriter struct {
	ts   store.TranscriptStore
	q    chan store.TranscriptLine
	refs int // under writersMu
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	queued  uint64 // lines offered and taken
	written uint64 // lines the store took (or failed)
	cond    *sync.Cond
}

var (
	writersMu sync.Mutex
	writers   = map[store.TranscriptStore]*transcriptWriter{}
)

func acquireWriter(ts store.TranscriptStore) *transcriptWriter {
	writersMu.Lock()
	defer writersMu.Unlock()
	w := writers[ts]
	if w == nil {
		w = &transcriptWriter{ts: ts, q: make(chan store.TranscriptLine, transcriptQueue), stop: make(chan struct{}), done: make(chan struct{})}
		w.cond = sync.NewCond(&w.mu)
		writers[ts] = w
		go w.run()
	}
	w.refs++
	return w
}

func releaseWriter(w *transcriptWriter) {
	writersMu.Lock()
	w.refs--
	last := w.refs == 0
	if last {
		delete(writers, w.ts)
		close(w.stop)
	}
	writersMu.Unlock()
	if last {
		<-w.done
	}
}

// offer queues line unless the queue is full.
func (w *transcriptWriter) offer(line store.TranscriptLine) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case w.q <- line:
		w.queued++
		return true
	default:
		return false
	}
}

// force queues line, waiting for room at most transcriptFlushWait.
func (w *transcriptWriter) force(line store.TranscriptLine) {
	t := time.NewTimer(transcriptFlushWait)
	defer t.Stop()
	w.mu.Lock()
	w.queued++
	w.mu.Unlock()
	select {
	case w.q <- line:
	case <-t.C:
		w.mu.Lock()
		w.queued--
		w.mu.Unlock()
	}
}

// flush waits until the lines queued so far are written, at most d.
func (w *transcriptWriter) flush(d time.Duration) {
	w.mu.Lock()
	target := w.queued
	w.mu.Unlock()
	timedOut := false
	deadline := time.AfterFunc(d, func() {
		w.mu.Lock()
		timedOut = true
		w.cond.Broadcast()
		w.mu.Unlock()
	})
	defer deadline.Stop()
	w.mu.Lock()
	for w.written < target && !timedOut {
		w.cond.Wait()
	}
	w.mu.Unlock()
}

func (w *transcriptWriter) run() {
	defer close(w.done)
	batch := make([]store.TranscriptLine, 0, transcriptBatch)
	for {
		batch = batch[:0]
		select {
		case l := <-w.q:
			batch = append(batch, l)
		case <-w.stop:
			select {
			case l := <-w.q:
				batch = append(batch, l)
			default:
				return
			}
		}
	fill:
		for len(batch) < cap(batch) {
			select {
			case l := <-w.q:
				batch = append(batch, l)
			default:
				break fill
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), transcriptFlushWait)
		_ = w.ts.AppendTranscript(ctx, batch) // best effort: a transcript is no lifecycle record
		cancel()
		w.mu.Lock()
		w.written += uint64(len(batch))
		w.cond.Broadcast()
		w.mu.Unlock()
	}
}

// transcriptHTTP records the JSON-RPC messages of a streamable HTTP
// client's exchanges: the body of each POST, and each message of a
// response, JSON or an event stream, as it is read.
type transcriptHTTP struct {
	base http.RoundTripper
	rec  *transcriptRec
}

func (t *transcriptHTTP) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.GetBody != nil {
		if body, err := r.GetBody(); err == nil {
			b, _ := readAllLimit(body)
			body.Close()
			t.rec.raws(store.TranscriptOut, b)
		}
	}
	resp, err := t.base.RoundTrip(r)
	if r.Method == http.MethodDelete {
		// The client ends its session: the transcript's last exchange,
		// so closing the connection waits for its lines to be stored.
		t.rec.end()
	}
	if err != nil || resp.Body == nil {
		return resp, err
	}
	ct := resp.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "text/event-stream"):
		resp.Body = &sseTee{ReadCloser: resp.Body, rec: t.rec}
	case strings.HasPrefix(ct, "application/json"):
		resp.Body = &jsonTee{ReadCloser: resp.Body, rec: t.rec}
	}
	return resp, nil
}

// readAllLimit reads a request body, at most a session's cap.
func readAllLimit(r io.Reader) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, TranscriptSessionCap))
}

// raws records an HTTP body of one message or a batch of them.
func (r *transcriptRec) raws(dir string, b []byte) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return
	}
	if b[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(b, &batch) == nil {
			for _, m := range batch {
				r.raw(dir, m)
			}
			return
		}
	}
	r.raw(dir, b)
}

// jsonTee records a JSON response body when it has been read whole.
type jsonTee struct {
	io.ReadCloser
	rec  *transcriptRec
	buf  bytes.Buffer
	done bool
}

func (t *jsonTee) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if t.buf.Len() < TranscriptSessionCap {
		t.buf.Write(p[:n])
	}
	if err == io.EOF && !t.done {
		t.done = true
		t.rec.raws(store.TranscriptIn, t.buf.Bytes())
	}
	return n, err
}

// sseTee records the data of each event of an event stream as it is read.
type sseTee struct {
	io.ReadCloser
	rec  *transcriptRec
	line bytes.Buffer // the current line
	data bytes.Buffer // the current event's data
}

func (t *sseTee) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	for _, c := range p[:n] {
		if c != '\n' {
			if t.line.Len() < TranscriptSessionCap {
				t.line.WriteByte(c)
			}
			continue
		}
		l := bytes.TrimSuffix(t.line.Bytes(), []byte("\r"))
		switch {
		case len(l) == 0:
			if t.data.Len() > 0 {
				t.rec.raws(store.TranscriptIn, t.data.Bytes())
				t.data.Reset()
			}
		case bytes.HasPrefix(l, []byte("data:")):
			if t.data.Len() > 0 {
				t.data.WriteByte('\n')
			}
			t.data.Write(bytes.TrimPrefix(bytes.TrimPrefix(l, []byte("data:")), []byte(" ")))
		}
		t.line.Reset()
	}
	return n, err
}
