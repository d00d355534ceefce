// Package splice passes JSON-RPC requests of another peer straight onto a
// manager's connection to a server: the shared host splices the tools/call
// requests of its hosts onto its own connection to the shared server, so a
// call costs neither a go-sdk server nor a second go-sdk client on the way.
//
// The manager wraps the transport of each server (when its options carry
// a [Registry]) and, once the server is connected, publishes the
// connection's [Point] under the server's name with the protocol version
// it speaks. [Point.Start] sends a request under an id of the point's own
// (a string the manager's go-sdk client, which numbers its requests, never
// uses) and its progress token replaced by one of the point's own; the
// point takes the response and the progress notifications of that id and
// token off the connection before the manager's client reads them, and
// hands them back with the caller's id and token. A connection that ends
// fails the calls in flight on it; [Point.Again] then says, by the
// manager's rule for its own calls cut off by a drop, whether such a call
// is made once more on the server's next connection.
//
//	reg := splice.NewRegistry()
//	splice.UseRegistry(&opts, reg) // opts is the manager's *manager.Options
//	...
//	if p := reg.Point(server); p != nil {
//		call, err := p.Start(req, sessionVersion, done, progress)
//	}
package splice

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/internal/proc"
)

// UseRegistry is set by package manager: it makes the manager that opts
// (a *manager.Options) configures publish the connections of its servers
// in r.
var UseRegistry func(opts any, r *Registry)

// Sentinel errors of [Point.Start].
var (
	// ErrNotPassthrough: the request cannot pass as it is (another
	// protocol version than the connection's, a tool the manager knows
	// under another name, params that are not an object).
	ErrNotPassthrough = errors.New("splice: not a plain passthrough")
	// ErrEnded: the connection ended.
	ErrEnded = errors.New("splice: connection ended")
)

// prefix starts every request id and progress token of a point.
const prefix = "mcplife-splice-"

// Method names the point rewrites.
const (
	methodProgress  = "notifications/progress"
	methodCancelled = "notifications/cancelled"
)

// Registry holds the connections calls can be spliced onto, by server
// name. It is safe for concurrent use.
type Registry struct {
	mu     sync.Mutex
	points map[string]*Point
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{points: map[string]*Point{}} }

// Point returns the connection of server calls can be spliced onto, nil
// when there is none (not connected, or its connection ended).
func (r *Registry) Point(server string) *Point {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.points[server]
}

// Publish makes p the connection of server, speaking protocol version.
// renamed, when set, reports the tool names the manager knows under
// another name than the server's own (their calls are not spliced).
// again, when set, is the manager's rule for a call of tool that the end
// of p's connection cut off after its request was written: it reports
// whether the call is made once more, once it waited (bounded by ctx)
// until the server is connected again. A point whose connection already
// ended is not published; one that ends later withdraws itself.
func (r *Registry) Publish(server string, p *Point, version string, renamed func(tool string) bool, again func(ctx context.Context, tool string) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended || p.conn == nil {
		return
	}
	p.version, p.renamed, p.again = version, renamed, again
	p.reg, p.server = r, server
	r.mu.Lock()
	r.points[server] = p
	r.mu.Unlock()
}

// withdraw removes p, if it is still server's point.
func (r *Registry) withdraw(server string, p *Point) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.points[server] == p {
		delete(r.points, server)
	}
}

// Wrap returns a transport that opens t's connection with a point on it,
// and the point.
func Wrap(t mcp.Transport) (mcp.Transport, *Point) {
	p := &Point{calls: map[string]*Call{}, tokens: map[string]*Call{}}
	return &transport{inner: t, p: p}, p
}

type transport struct {
	inner mcp.Transport
	p     *Point
}

func (t *transport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.p.mu.Lock()
	t.p.conn = c
	t.p.mu.Unlock()
	return &conn{Connection: c, p: t.p}, nil
}

// Point is one connection to a server that requests can be spliced onto.
// It is safe for concurrent use.
type Point struct {
	next     atomic.Uint64
	inflight atomic.Int32 // calls in flight
	ntokens  atomic.Int32 // calls in flight with a progress token

	mu      sync.Mutex
	conn    mcp.Connection // the connection below the manager's client
	version string
	renamed func(string) bool
	again   func(context.Context, string) bool
	reg     *Registry
	server  string
	calls   map[string]*Call // by the point's id
	tokens  map[string]*Call // by the point's progress token
	ended   bool

	// lines, when set (before the connection opens), writes a message
	// line to the server among the connection's own writes.
	lines func(line []byte) error
}

// WriteLines has p write the requests it splices as lines through
// write (one message line, without its newline, written among the
// connection's own messages) rather than encoding them through the
// connection. It must be called before the connection opens.
func (p *Point) WriteLines(write func(line []byte) error) { p.lines = write }

// Version returns the protocol version the connection speaks.
func (p *Point) Version() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.version
}

// Call is one request spliced onto a point.
type Call struct {
	p         *Point
	id        string // the point's
	hostID    jsonrpc.ID
	token     string          // the point's progress token, "" without one
	hostToken json.RawMessage // the caller's
	done      func(*jsonrpc.Response, error)
	progress  func(*jsonrpc.Request)
	// writing: Start is writing the request (p.mu); endedWriting: the
	// connection ended meanwhile, and Start, not end, fails the call once
	// it knows whether the request left.
	writing, endedWriting bool
}

// callHead is what Start reads of a request's params: the tool's name,
// and of params._meta the protocol version (nil when not given) and the
// progress token (nil when not given).
type callHead struct {
	Name            string
	ProtocolVersion *string
	ProgressToken   json.RawMessage
}

// Member names of a call's params, matched as written, as the go-sdk's
// server matches them.
const (
	keyName            = "name"
	keyMeta            = "_meta"
	keyProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	keyProgressToken   = "progressToken"
)

// readHead reads the head of a call's params, a JSON object, in one pass
// over its members (not decoding the arguments).
func readHead(params []byte) (head callHead, ok bool) {
	str := func(v []byte) (string, bool) {
		if s, ok := proc.PlainString(v); ok {
			return s, true
		}
		var s string
		return s, json.Unmarshal(v, &s) == nil
	}
	valid := true
	ok = proc.Members(params, func(name, v []byte) bool {
		switch string(name) {
		case keyName:
			head.Name, valid = str(v)
		case keyMeta:
			if v[0] != '{' {
				break // not an object: the server judges it
			}
			proc.Members(v, func(name, v []byte) bool {
				switch string(name) {
				case keyProtocolVersion:
					if pv, ok := str(v); ok {
						head.ProtocolVersion = &pv
					}
				case keyProgressToken:
					head.ProgressToken = v
				}
				return true
			})
		}
		return valid
	})
	return head, ok && valid
}

// Start sends req, a request of the caller's, on the connection under an
// id of the point's own, with its progress token (params._meta
// progressToken) replaced by one of the point's own. The request's
// protocol version is the one its _meta names, sessionVersion when it
// names none; it must be the connection's, or Start returns
// [ErrNotPassthrough] and sends nothing.
//
// done is called once with the response, its id the caller's again, or
// with a nil response and [ErrEnded] when the connection ended after the
// request was written (maybe before Start returns); never after
// [Call.Cancel]. A request that could not be written is not a call: Start
// returns ErrEnded. progress gets each progress notification of
// the call, its token the caller's again. Both are called on the
// connection's reading goroutine: they must not block for long, since
// the manager's client reads nothing meanwhile.
func (p *Point) Start(req *jsonrpc.Request, sessionVersion string, done func(*jsonrpc.Response, error), progress func(*jsonrpc.Request)) (*Call, error) {
	head, ok := readHead(req.Params)
	if !ok {
		return nil, ErrNotPassthrough
	}
	version := sessionVersion
	if v := head.ProtocolVersion; v != nil {
		version = *v
	}
	p.mu.Lock()
	conn, want, renamed, ended := p.conn, p.version, p.renamed, p.ended
	p.mu.Unlock()
	if ended {
		return nil, ErrEnded
	}
	if version == "" || version != want || (renamed != nil && renamed(head.Name)) {
		return nil, ErrNotPassthrough
	}
	n := strconv.FormatUint(p.next.Add(1), 10)
	c := &Call{p: p, id: prefix + n, hostID: req.ID, done: done, progress: progress, writing: true}
	params := req.Params
	if tok := head.ProgressToken; len(tok) > 0 && string(tok) != "null" {
		c.token, c.hostToken = prefix+"t"+n, tok
		var err error
		if params, err = replaceToken(params, c.token); err != nil {
			return nil, ErrNotPassthrough
		}
	}
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		return nil, ErrEnded
	}
	p.calls[c.id] = c
	p.inflight.Add(1)
	if c.token != "" {
		p.tokens[c.token] = c
		p.ntokens.Add(1)
	}
	p.mu.Unlock()
	var err error
	if line, ok := requestLine(c.id, req.Method, params); ok && p.lines != nil {
		err = p.lines(line)
	} else {
		err = conn.Write(context.Background(), &jsonrpc.Request{ID: jsonrpc2StringID(c.id), Method: req.Method, Params: params})
	}
	p.mu.Lock()
	c.writing = false
	cut := c.endedWriting
	p.mu.Unlock()
	switch {
	case err != nil:
		if !cut {
			p.forget(c)
		}
		return nil, ErrEnded // never left: not cut off, just not made
	case cut:
		// Written, then cut off by the end of the connection.
		c.done(nil, ErrEnded)
	}
	return c, nil
}

// requestLine returns the message line of a request with the point's id
// (a plain string), method and params (a JSON object, or nil), when
// method needs no escapes and params has no line end in it.
func requestLine(id, method string, params json.RawMessage) ([]byte, bool) {
	for i := 0; i < len(method); i++ {
		if c := method[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return nil, false
		}
	}
	if bytes.IndexByte(params, '\n') >= 0 {
		return nil, false
	}
	b := make([]byte, 0, len(idHead)+len(id)+len(method)+len(params)+24)
	b = append(b, idHead...)
	b = append(b, id...)
	b = append(b, `","method":"`...)
	b = append(b, method...)
	b = append(b, '"')
	if len(params) > 0 {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}'), true
}

// Again reports whether req, a call that the end of p's connection cut
// off (done got [ErrEnded]), is made once more, by the manager's rule for
// its own calls cut off by a drop (a read-only or idempotent tool), and
// returns the server's connection to make it on: it waits, bounded by
// ctx, until the server is connected again. It returns nil when the call
// is not made again (then it fails as cut off), and when the server is
// not connected again in time.
func (p *Point) Again(ctx context.Context, req *jsonrpc.Request) *Point {
	p.mu.Lock()
	again, reg, server := p.again, p.reg, p.server
	p.mu.Unlock()
	head, ok := readHead(req.Params)
	if again == nil || reg == nil || !ok {
		return nil
	}
	if !again(ctx, head.Name) {
		return nil
	}
	return reg.Point(server)
}

// Cancel tells the server the call is cancelled (notifications/cancelled
// with the point's id) and forgets it: its response, should one come, is
// dropped, and its done is not called.
func (c *Call) Cancel(reason string) {
	if !c.p.forget(c) {
		return
	}
	c.p.mu.Lock()
	conn, ended := c.p.conn, c.p.ended
	c.p.mu.Unlock()
	if ended {
		return
	}
	params, _ := json.Marshal(struct {
		RequestID string `json:"requestId"`
		Reason    string `json:"reason,omitempty"`
	}{c.id, reason})
	conn.Write(context.Background(), &jsonrpc.Request{Method: methodCancelled, Params: params})
}

// forget removes c from the point and reports whether it was there.
func (p *Point) forget(c *Call) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.calls[c.id] != c {
		return false
	}
	delete(p.calls, c.id)
	p.inflight.Add(-1)
	if c.token != "" {
		delete(p.tokens, c.token)
		p.ntokens.Add(-1)
	}
	return true
}

// end marks the connection ended, withdraws the point and fails the
// calls in flight.
func (p *Point) end() {
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		return
	}
	p.ended = true
	calls := p.calls
	for id, c := range calls {
		if c.writing {
			c.endedWriting = true
			delete(calls, id)
		}
	}
	p.calls, p.tokens = map[string]*Call{}, map[string]*Call{}
	p.inflight.Store(0)
	p.ntokens.Store(0)
	reg, server := p.reg, p.server
	p.mu.Unlock()
	if reg != nil {
		reg.withdraw(server, p)
	}
	for _, c := range calls {
		c.done(nil, ErrEnded)
	}
}

// conn is the connection as the manager's client sees it: the responses
// and progress notifications of spliced calls are taken out.
type conn struct {
	mcp.Connection
	p *Point
}

func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			c.p.end()
			return nil, err
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			if id, ok := m.ID.Raw().(string); ok && strings.HasPrefix(id, prefix) {
				c.p.answer(id, m)
				continue
			}
		case *jsonrpc.Request:
			if m.Method == methodProgress && c.p.ntokens.Load() > 0 && c.p.progress(m) {
				continue
			}
		}
		return msg, nil
	}
}

func (c *conn) Close() error {
	err := c.Connection.Close()
	c.p.end()
	return err
}

// Tap takes the response or a progress notification of a spliced call
// off a line of the connection (one message, as the server wrote it) and
// reports whether it did; a transport that sees its lines before the
// connection reads them calls it, so they need not wait for the
// connection's reader. It does not keep line.
func (p *Point) Tap(line []byte) bool {
	if p.inflight.Load() == 0 || !bytes.Contains(line, tapMark) {
		return false
	}
	if id, result, ok := plainResult(line); ok {
		p.answer(id, &jsonrpc.Response{Result: bytes.Clone(result)})
		return true
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return false
	}
	switch m := msg.(type) {
	case *jsonrpc.Response:
		if id, ok := m.ID.Raw().(string); ok && strings.HasPrefix(id, prefix) {
			p.answer(id, m)
			return true
		}
	case *jsonrpc.Request:
		return m.Method == methodProgress && p.progress(m)
	}
	return false
}

// tapMark is in every line Tap takes.
var tapMark = []byte(`"` + prefix)

// idHead starts a message with a string id as the go-sdk writes it, and
// requestLine; resultKey frames the result of a spliced call:
// {"jsonrpc":"2.0","id":"<id>","result":<result>}.
const (
	idHead    = `{"jsonrpc":"2.0","id":"`
	resultKey = `,"result":`
)

// plainResult returns the id and the result of a response line of a
// spliced call in the go-sdk's layout, without decoding the result, and
// false for any other line (which is decoded instead).
func plainResult(line []byte) (id string, result []byte, ok bool) {
	if !bytes.HasPrefix(line, []byte(idHead+prefix)) {
		return "", nil, false
	}
	rest := line[len(idHead):]
	q := bytes.IndexByte(rest, '"')
	if q < len(prefix)+1 {
		return "", nil, false
	}
	for _, c := range rest[len(prefix):q] {
		if c < '0' || c > '9' {
			return "", nil, false
		}
	}
	after := rest[q+1:]
	if !bytes.HasPrefix(after, []byte(resultKey)) || !bytes.HasSuffix(after, []byte("}")) {
		return "", nil, false
	}
	result = after[len(resultKey) : len(after)-1]
	if !json.Valid(result) { // one value, nothing after it
		return "", nil, false
	}
	return string(rest[:q]), result, true
}

// answer passes the response of a spliced call to its caller.
func (p *Point) answer(id string, m *jsonrpc.Response) {
	p.mu.Lock()
	c := p.calls[id]
	p.mu.Unlock()
	if c == nil || !p.forget(c) {
		return // cancelled: dropped
	}
	c.done(&jsonrpc.Response{ID: c.hostID, Result: m.Result, Error: m.Error}, nil)
}

// progress passes a progress notification of a spliced call to its
// caller and reports whether it was one.
func (p *Point) progress(m *jsonrpc.Request) bool {
	var head struct {
		Token json.RawMessage `json:"progressToken"`
	}
	if json.Unmarshal(m.Params, &head) != nil {
		return false
	}
	var token string
	if json.Unmarshal(head.Token, &token) != nil || !strings.HasPrefix(token, prefix) {
		return false
	}
	p.mu.Lock()
	c := p.tokens[token]
	p.mu.Unlock()
	if c == nil {
		return true // of a call that ended: dropped
	}
	params, err := replaceKey(m.Params, "progressToken", c.hostToken)
	if err != nil {
		return true
	}
	c.progress(&jsonrpc.Request{Method: m.Method, Params: params})
	return true
}

// replaceToken returns params with _meta.progressToken set to token.
func replaceToken(params json.RawMessage, token string) (json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(params, &top); err != nil {
		return nil, err
	}
	tok, _ := json.Marshal(token)
	meta, err := replaceKey(top["_meta"], "progressToken", tok)
	if err != nil {
		return nil, err
	}
	top["_meta"] = meta
	return json.Marshal(top)
}

// replaceKey returns the object obj with key set to v.
func replaceKey(obj json.RawMessage, key string, v json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		return nil, err
	}
	m[key] = v
	return json.Marshal(m)
}

// jsonrpc2StringID is the id of a spliced request.
func jsonrpc2StringID(s string) jsonrpc.ID {
	id, _ := jsonrpc.MakeID(s)
	return id
}
