package manager

import (
	"bytes"
	"io"
	"log/slog"
)

// jsonLines filters a stdio server's stdout down to the lines that can be
// JSON-RPC messages: a line whose first non-blank byte is '{' or '[' passes
// through unchanged; any other line (a banner, a stray print, a log line)
// is dropped, as peer hosts do, instead of ending the connection. It
// buffers nothing beyond one read, so a long line is streamed, never held.
type jsonLines struct {
	r   io.Reader
	log *slog.Logger // the server's logger; dropped lines are logged at Debug

	raw     []byte // read buffer
	buf     []byte // unread part of raw
	err     error  // error of the underlying reader, returned once buf is empty
	state   lineState
	dropped int
}

type lineState int

const (
	lineStart lineState = iota // before the first non-blank byte of a line
	linePass                   // inside a JSON line
	lineDrop                   // inside a line being dropped
)

func newJSONLines(r io.Reader, log *slog.Logger) *jsonLines {
	return &jsonLines{r: r, log: log, raw: make([]byte, 32<<10)}
}

func (f *jsonLines) Read(p []byte) (int, error) {
	for {
		if len(f.buf) == 0 {
			if f.err != nil {
				return 0, f.err
			}
			n, err := f.r.Read(f.raw)
			f.buf, f.err = f.raw[:n], err
			if n == 0 {
				continue
			}
		}
		out := 0
		for len(f.buf) > 0 && out < len(p) {
			switch f.state {
			case lineStart:
				switch c := f.buf[0]; c {
				case ' ', '\t', '\r', '\n':
					f.buf = f.buf[1:]
				case '{', '[':
					f.state = linePass
				default:
					f.state = lineDrop
					f.dropped++
					f.log.Debug("MCP server wrote a non-JSON line to stdout; skipped", "lines", f.dropped)
				}
			case linePass:
				end := len(f.buf)
				if i := bytes.IndexByte(f.buf, '\n'); i >= 0 {
					end = i + 1
				}
				k := copy(p[out:], f.buf[:end])
				out += k
				if k == end && f.buf[end-1] == '\n' {
					f.state = lineStart
				}
				f.buf = f.buf[k:]
			case lineDrop:
				if i := bytes.IndexByte(f.buf, '\n'); i >= 0 {
					f.buf, f.state = f.buf[i+1:], lineStart
				} else {
					f.buf = f.buf[:0]
				}
			}
		}
		if out > 0 {
			return out, nil
		}
	}
}
