package proc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"unicode/utf8"
)

// JSONLines filters a stdio server's stdout down to JSON-RPC messages, one
// per line, as peer hosts do:
//
//   - A line that is a JSON-RPC 2.0 message or batch ([isJSONRPC]) is
//     passed on (trimmed, with a newline).
//   - Any other line (a banner, a log line such as "[INFO] ready" or a
//     JSON log record) is skipped instead of ending the connection; it is
//     counted, logged at Debug and noted in the server's stderr ring
//     ([Ring.Note]), so that errors quoting the stderr tail show it.
//   - A line longer than limit bytes is discarded, its bytes beyond the
//     limit as they are read; when it was the response to a request, a
//     JSON-RPC error response with the same id, naming the limit and the
//     server, is passed on in its place, so that one call fails and the
//     connection stays up.
//   - A message that nests objects and arrays deeper than the go-sdk
//     decodes (1000 levels) is discarded the same way: a response is
//     answered in its place with an error saying it was nested too deep,
//     so its request fails at once instead of waiting out its timeout.
//
// It holds at most one line of up to limit bytes. It is used by one
// goroutine, the connection's reader.
type JSONLines struct {
	r      io.Reader
	server string
	limit  int
	notes  *Ring        // where skipped lines are noted (nil: nowhere)
	log    *slog.Logger // the server's logger

	raw  []byte        // read buffer
	buf  []byte        // unread part of raw
	err  error         // the underlying reader's error, returned after what came before it
	line []byte        // the start of a line that began in an earlier read
	out  []byte        // what Read returns next: one message line
	big  *topLevelScan // set while discarding a line longer than limit

	// Tap, when set (before the first Read), sees each message line
	// before it is passed on, without its line end; a line it reports
	// taken is not passed on. It must not keep the line.
	Tap func(line []byte) bool

	skipped   int // lines that were not JSON-RPC
	oversized int // lines longer than limit
	deep      int // messages nested too deep
}

// NewJSONLines returns the filter of r, the stdout of the stdio server
// named server. limit is the longest line passed on, in bytes; it must be
// positive. Skipped and discarded lines are noted in notes (nil: nowhere)
// and logged to log.
func NewJSONLines(r io.Reader, server string, limit int, notes *Ring, log *slog.Logger) *JSONLines {
	return &JSONLines{r: r, server: server, limit: limit, notes: notes, log: log, raw: make([]byte, 32<<10)}
}

// Read returns the next passed-on lines; the underlying reader's error
// comes after the lines read before it.
func (f *JSONLines) Read(p []byte) (int, error) {
	for len(f.out) == 0 {
		if len(f.buf) == 0 {
			if f.err != nil {
				f.finish()
				if len(f.out) > 0 {
					break
				}
				return 0, f.err
			}
			n, err := f.r.Read(f.raw)
			f.buf, f.err = f.raw[:n], err
			continue
		}
		f.scan()
	}
	n := copy(p, f.out)
	f.out = f.out[n:]
	return n, nil
}

// scan consumes buf up to the end of the next line, or all of it when it
// holds no line end, and sets out if that line is to be passed on. out
// may point into raw or line: neither is written until out was read.
func (f *JSONLines) scan() {
	end := bytes.IndexByte(f.buf, '\n')
	if f.big != nil {
		if end < 0 {
			f.big.feed(f.buf)
			f.buf = nil
			return
		}
		f.big.feed(f.buf[:end])
		f.buf = f.buf[end+1:]
		f.endOversized()
		return
	}
	if end < 0 {
		if len(f.line)+len(f.buf) > f.limit {
			f.startOversized(f.buf)
		} else {
			f.line = append(f.line, f.buf...)
		}
		f.buf = nil
		return
	}
	chunk := f.buf[:end+1]
	f.buf = f.buf[end+1:]
	if len(f.line)+len(chunk)-1 > f.limit {
		f.startOversized(chunk[:len(chunk)-1])
		f.endOversized()
		return
	}
	line := chunk // the common case, a line within one read, is judged in place
	if len(f.line) > 0 {
		f.line = append(f.line, chunk...)
		line = f.line
	}
	f.take(line)
}

// finish judges a last line without a newline at the end of the stream.
func (f *JSONLines) finish() {
	switch {
	case f.big != nil:
		f.endOversized()
	case len(f.line) > 0:
		f.take(append(f.line, '\n'))
	}
}

// take passes line (ending in a newline) on when it is a JSON-RPC message,
// and skips it otherwise.
func (f *JSONLines) take(line []byte) {
	defer f.resetLine()
	lead := len(line) - len(bytes.TrimLeft(line, " \t\r"))
	msg := bytes.TrimRight(line[lead:], " \t\r\n")
	if len(msg) == 0 {
		return // blank lines are not worth a note
	}
	ok, tooDeep := checkJSONRPC(msg)
	if tooDeep {
		f.discardDeep(msg)
		return
	}
	if !ok {
		f.skipped++
		f.log.Debug("MCP server wrote a stdout line that is not JSON-RPC; skipped", "lines", f.skipped)
		f.note(fmt.Sprintf("skipped non-JSON-RPC stdout line %d: %s", f.skipped, excerpt(msg, 200)))
		return
	}
	if f.Tap != nil && f.Tap(msg) {
		return
	}
	// The go-sdk accepts a message followed by "\n" or "\r\n" and
	// nothing else on its line.
	if rest := line[lead+len(msg):]; string(rest) == "\n" || string(rest) == "\r\n" {
		f.out = line[lead:]
		return
	}
	f.out = append(msg[:len(msg):len(msg)], '\n')
}

// resetLine empties line for the next one, keeping its memory unless a
// long line grew it.
func (f *JSONLines) resetLine() {
	if cap(f.line) > 1<<20 {
		f.line = nil
		return
	}
	f.line = f.line[:0]
}

// startOversized begins discarding a line longer than limit: the part of
// it in line and then rest.
func (f *JSONLines) startOversized(rest []byte) {
	f.big = &topLevelScan{}
	f.big.feed(f.line)
	f.big.feed(rest)
	f.resetLine()
}

// endOversized ends the discarded line: when it answered a request, the
// request gets an error in its place.
func (f *JSONLines) endOversized() {
	big := f.big
	f.big = nil
	f.oversized++
	what := "message"
	switch {
	case !big.object:
		what = "line"
	case big.hasResult:
		what = "result"
	}
	f.log.Warn("MCP server sent a stdout line over the message size limit; discarded", "bytes", big.size, "limit", f.limit)
	f.note(fmt.Sprintf("discarded a stdout %s of %d bytes, over the %s limit", what, big.size, sizeText(f.limit)))
	f.answer(big, fmt.Sprintf("MCP server %q sent a %s of %d bytes, over the %s limit on one message (manager Options.MaxMessageSize); it was discarded",
		f.server, what, big.size, sizeText(f.limit)))
}

// discardDeep discards msg, a message nested deeper than the go-sdk
// decodes: when it answered a request, the request gets an error in its
// place.
func (f *JSONLines) discardDeep(msg []byte) {
	f.deep++
	_, what, answer := TooDeep(f.server, msg)
	f.log.Warn("MCP server sent a stdout message nested too deep; discarded", "bytes", len(msg), "maxDepth", maxJSONDepth)
	f.note(fmt.Sprintf("discarded a stdout %s of %d bytes nested more than %d levels deep", what, len(msg), maxJSONDepth))
	if answer != nil {
		f.out = append(answer, '\n')
	}
}

// TooDeep reports whether msg, one JSON-RPC message of the server named
// server, nests objects and arrays deeper than the go-sdk decodes (1000
// levels), which would end the connection it arrived on. When it does,
// what is "result" for a response with a result and "message" otherwise,
// and, when msg answers a request, answer is the JSON-RPC error response
// with its id that is to take its place (without a line end), saying it
// was nested too deep; msg without an answer (a request or a
// notification) is to be dropped. What follows the too-deep part of msg
// is not checked. It is safe for concurrent use.
func TooDeep(server string, msg []byte) (tooDeep bool, what string, answer []byte) {
	if _, tooDeep = checkJSONRPC(msg); !tooDeep {
		return false, "", nil
	}
	var top topLevelScan
	top.feed(msg)
	what = "message"
	if top.hasResult {
		what = "result"
	}
	return true, what, errorAnswer(&top, fmt.Sprintf("MCP server %q sent a %s nested too deep (more than %d levels of objects and arrays); it was discarded",
		server, what, maxJSONDepth))
}

// answer passes on an error response with message in place of the
// discarded message top scanned, when that was a response to a request.
func (f *JSONLines) answer(top *topLevelScan, message string) {
	if resp := errorAnswer(top, message); resp != nil {
		f.out = append(resp, '\n')
	}
}

// errorAnswer returns the error response with message that takes the
// place of the discarded message top scanned, when that was a response to
// a request, and nil otherwise.
func errorAnswer(top *topLevelScan, message string) []byte {
	id, ok := top.responseID()
	if !ok {
		return nil
	}
	resp, err := json.Marshal(errorResponse{Version: "2.0", ID: id, Error: responseError{Code: codeInternalError, Message: message}})
	if err != nil {
		return nil // a valid id and a string cannot fail to marshal
	}
	return resp
}

// errorResponse is a JSON-RPC error response.
type errorResponse struct {
	Version string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   responseError   `json:"error"`
}

type responseError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// codeInternalError is JSON-RPC's "Internal error".
const codeInternalError = -32603

// note appends a line about the filter to the server's stderr ring.
func (f *JSONLines) note(msg string) {
	if f.notes != nil {
		f.notes.Note("[mcplife: " + msg + "]")
	}
}

// excerpt returns the first n bytes of b, cut at a rune boundary, with
// invalid UTF-8 replaced, and "…" when cut.
func excerpt(b []byte, n int) string {
	if len(b) <= n {
		return string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return string(bytes.ToValidUTF8(b[:cut], []byte("\uFFFD"))) + "…"
}

// sizeText returns n bytes as "16 MiB", "64 KiB" or "1000 bytes".
func sizeText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
