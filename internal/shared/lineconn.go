package shared

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLine is the longest message a [LineConn] reads, as the go-sdk's own
// bound on one line.
const maxLine = mcp.DefaultMaxLineLength

// errLineTooLong ends a connection whose peer sent a longer message.
var errLineTooLong = errors.New("shared: message over the maximum line length")

// LineConn is a stream of newline-delimited JSON-RPC as one MCP
// connection: the shared host's end of a host's stream, and the host's.
// Unlike the go-sdk's, it reads on the goroutine that calls Read (it has
// no goroutine of its own to hand each message over from) and decodes
// each message once; [LineConn.WriteResult] writes a result as it is, not
// encoded again. Closing it must end a Read in progress: close is to
// make the reader fail. Write is safe for concurrent use.
type LineConn struct {
	r     *bufio.Reader
	w     io.Writer
	close func() error

	queue []jsonrpc.Message // the rest of a batch; reads are serialized

	wmu sync.Mutex
	buf []byte // guarded by wmu
	// writeTimeout bounds each write, through setDeadline (see
	// [LineConn.SetWriteTimeout]); fixed before the first write.
	writeTimeout time.Duration
	setDeadline  func(time.Time) error
}

// SetWriteTimeout bounds each write to d, setting the deadline of the
// connection below with set before it: a peer that stops reading fails
// the writes to it after d instead of holding the writer. It must be
// called before the first write. After a write that failed the stream
// may hold part of a message: it is to be closed.
func (c *LineConn) SetWriteTimeout(d time.Duration, set func(time.Time) error) {
	c.writeTimeout, c.setDeadline = d, set
}

// deadline sets the deadline of the next write. Requires c.wmu.
func (c *LineConn) deadline() {
	if c.setDeadline != nil {
		c.setDeadline(time.Now().Add(c.writeTimeout))
	}
}

// NewLineConn returns the connection that reads r and writes w; its
// Close calls close.
func NewLineConn(r io.Reader, w io.Writer, close func() error) *LineConn {
	return &LineConn{r: bufio.NewReaderSize(r, 64<<10), w: w, close: close}
}

func (c *LineConn) SessionID() string { return "" }

func (c *LineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	for {
		line, err := c.line()
		if err != nil {
			return nil, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if line[0] != '[' {
			return decodeMessage(line)
		}
		var batch []json.RawMessage
		if err := json.Unmarshal(line, &batch); err != nil {
			return nil, err
		}
		if len(batch) == 0 {
			return nil, errors.New("shared: empty batch")
		}
		for _, raw := range batch {
			m, err := decodeMessage(raw)
			if err != nil {
				return nil, err
			}
			c.queue = append(c.queue, m)
		}
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
}

// line reads the next line, up to maxLine bytes.
func (c *LineConn) line() ([]byte, error) {
	b, err := c.r.ReadSlice('\n')
	if err == nil {
		return b, nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		if len(b) > 0 && errors.Is(err, io.EOF) {
			return b, nil
		}
		return nil, err
	}
	long := append([]byte(nil), b...)
	for {
		b, err = c.r.ReadSlice('\n')
		long = append(long, b...)
		if len(long) > maxLine {
			return nil, errLineTooLong
		}
		switch {
		case err == nil:
			return long, nil
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF) && len(long) > 0:
			return long, nil
		default:
			return nil, err
		}
	}
}

func (c *LineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.writeLine(data)
}

// WriteResult writes a response of id with result as it is (which must
// be valid JSON), when it can go on one line; otherwise encoded as any
// message.
func (c *LineConn) WriteResult(id jsonrpc.ID, result json.RawMessage) error {
	var idJSON []byte
	switch v := id.Raw().(type) {
	case int64:
		idJSON = strconv.AppendInt(nil, v, 10)
	case string:
		idJSON, _ = json.Marshal(v)
	}
	if idJSON == nil || len(result) == 0 || bytes.IndexByte(result, '\n') >= 0 {
		return c.Write(context.Background(), &jsonrpc.Response{ID: id, Result: result})
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	b := append(c.buf[:0], `{"jsonrpc":"2.0","id":`...)
	b = append(b, idJSON...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	b = append(b, "}\n"...)
	c.deadline()
	_, err := c.w.Write(b)
	if cap(b) <= 64<<10 {
		c.buf = b
	}
	return err
}

func (c *LineConn) writeLine(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	b := append(append(c.buf[:0], data...), '\n')
	c.deadline()
	_, err := c.w.Write(b)
	if cap(b) <= 64<<10 {
		c.buf = b
	}
	return err
}

// Close calls the close function given to [NewLineConn].
func (c *LineConn) Close() error { return c.close() }
