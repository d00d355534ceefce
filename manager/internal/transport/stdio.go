package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/internal/proc"
)

// DefaultMaxMessageSize is the default of [Options.MaxMessageSize]: 16 MiB,
// the go-sdk's own default bound on one line.
const DefaultMaxMessageSize = 16 << 20

// stdioTransport starts a server process and speaks newline-delimited
// JSON-RPC on its stdin and stdout. The process, and what it starts,
// carry the session's id in their environment ([proc.SessionEnv]), so
// that a host started after this one was killed finds them. Closing the
// connection tears the process down (see [proc.Process.Terminate]): on
// Unix its whole process group, on Windows the process alone.
type stdioTransport struct {
	command string
	args    []string
	env     []string
	dir     string

	log  *slog.Logger  // the server's logger (nil: discard)
	proc *proc.Process // set by Connect
	// server names the server in errors; maxMessage is the longest line
	// of stdout passed on (0: 16 MiB; see
	// [proc.JSONLines]).
	server     string
	maxMessage int
	// session is the id of the session the process is started for,
	// carried in its environment (see [proc.SessionEnv]).
	session string
	// stdinGrace and termGrace are the teardown timings of the process
	// (see [proc.Options]).
	stdinGrace, termGrace time.Duration
	// tap sees the message lines of stdout first (see [OnLine]).
	tap func([]byte) bool
	// stdin is the connection's writer, set by Connect (see [LineWriter]).
	stdin atomic.Pointer[stdinWriter]
}

// LineWriter returns the function that writes one message line (a
// JSON-RPC message without a newline) to the stdin of a stdio
// transport's server, as one write among the connection's own, which
// saves encoding a message that is at hand as text; nil for a transport
// that [New] did not return for a stdio server. Before the transport
// connected, and after its connection ended, it fails.
func LineWriter(t mcp.Transport) func(line []byte) error {
	st, ok := t.(*stdioTransport)
	if !ok {
		return nil
	}
	return func(line []byte) error {
		w := st.stdin.Load()
		if w == nil {
			return errors.New("stdio transport: not connected")
		}
		return w.writeLine(line)
	}
}

// OnLine has tap see each message line of a stdio transport's stdout
// before the connection reads it: a line tap reports taken is not read.
// It is called on the connection's reading goroutine, with a line it must
// not keep. OnLine reports false, and does nothing, for a transport that
// [New] did not return for a stdio server; it must be called before the
// transport connects.
func OnLine(t mcp.Transport, tap func(line []byte) bool) bool {
	st, ok := t.(*stdioTransport)
	if !ok {
		return false
	}
	st.tap = tap
	return true
}

// Process returns the process started by a stdio transport that [New]
// returned (nil before its Connect, and for any other transport).
func Process(t mcp.Transport) *proc.Process {
	if st, ok := t.(*stdioTransport); ok {
		return st.proc
	}
	return nil
}

// Connect starts the process. It is called once, by the go-sdk client.
func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	if t.proc != nil {
		return nil, errors.New("stdio transport: already connected")
	}
	p, err := proc.Start(t.command, t.args, t.env, t.dir, &proc.Options{StdinGrace: t.stdinGrace, TermGrace: t.termGrace, Session: t.session})
	if err != nil {
		return nil, fmt.Errorf("start %q: %w", t.command, err)
	}
	t.proc = p
	log := t.log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	limit := t.maxMessage
	if limit <= 0 {
		limit = DefaultMaxMessageSize
	}
	lines := proc.NewJSONLines(p.Stdout(), t.server, limit, p.Stderr(), log)
	lines.Tap = t.tap
	// The filter bounds every line it passes, and answers a request whose
	// response was too long; the go-sdk's own bound would end the whole
	// connection instead, so it is off.
	w := &stdinWriter{p: p}
	t.stdin.Store(w)
	return (&mcp.IOTransport{Reader: stdoutReader{lines}, Writer: w, MaxLineLength: -1}).Connect(ctx)
}

// stdoutReader reads the child's stdout, skipping lines that are not
// JSON-RPC (see [proc.JSONLines]). Its Close does nothing: the
// connection's Close closes the reader first and the writer second, and
// the writer's Close (the teardown) closes stdout once the process is
// gone.
type stdoutReader struct{ lines *proc.JSONLines }

func (r stdoutReader) Read(b []byte) (int, error) { return r.lines.Read(b) }
func (r stdoutReader) Close() error               { return nil }

// stdinWriter writes the child's stdin, one message per Write (as the
// go-sdk's connection writes them, and [LineWriter]); its Close tears
// the process down.
type stdinWriter struct {
	p   *proc.Process
	mu  sync.Mutex
	buf []byte // writeLine's; guarded by mu
}

func (w *stdinWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.p.Stdin().Write(b)
}

// writeLine writes line and a newline in one write.
func (w *stdinWriter) writeLine(line []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := append(append(w.buf[:0], line...), '\n')
	_, err := w.p.Stdin().Write(b)
	if cap(b) <= 64<<10 {
		w.buf = b
	}
	return err
}

func (w *stdinWriter) Close() error { return w.p.Terminate() }
