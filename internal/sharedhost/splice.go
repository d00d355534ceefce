package sharedhost

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/internal/shared"
	"github.com/mcplife/mcplife/internal/splice"
	"github.com/mcplife/mcplife/manager"
)

// Spliced calls. A host's tools/call on its stream passes straight onto
// the shared host's connection to the server (package splice) when that
// is a plain passthrough: the request's protocol version is the one the
// shared host speaks to the server. The request goes under an id and a
// progress token of the connection's own, and its response and progress
// come back to the host with its own; the call costs neither the relay's
// go-sdk server nor the manager's client, and the shared host does not
// record it (the host does). Every other request, and a call that cannot
// pass as it is, goes through the relay.
//
// A host's notifications/cancelled of a spliced call is passed on under
// the spliced id; the end of the host's stream (or of its control stream,
// which closes the stream) cancels its spliced calls in flight, whose
// responses are then dropped. A server request that comes during a
// spliced call (elicitation, sampling, roots) goes to the host with calls
// in flight as for any call: spliced calls count among the relay
// session's calls. A server connection that ends cuts off the spliced
// calls in flight on it; each then follows the shared host's manager's
// rule for its own calls cut off by a drop: a call of a read-only or
// idempotent tool waits for the reconnect and is spliced once more onto
// the new connection (its answer and progress reach the host under its
// own id and token as before), any other fails with the error a call
// through the manager would have, without running twice. (A request that
// could not be written at all goes through the relay, whose call waits
// for the reconnect.)

const (
	methodCallTool  = "tools/call"
	methodCancelled = "notifications/cancelled"
)

// splicer is the transport of a host's stream as the relay's go-sdk
// server sees it: the tools/call requests that can be spliced, and the
// cancellations of spliced calls, are taken out of what it reads.
type splicer struct {
	in   *instance
	s    *stream
	conn *shared.LineConn // set by Connect

	bindOnce sync.Once
	bound    chan struct{} // closed by bind
	ss       *mcp.ServerSession

	mu    sync.Mutex
	calls map[jsonrpc.ID]*splicedCall // by the host's id
	ended bool
}

// splicer returns the splicing transport of a stream of in.
func (in *instance) splicer(s *stream) *splicer {
	return &splicer{in: in, s: s, bound: make(chan struct{}), calls: map[jsonrpc.ID]*splicedCall{}}
}

// splicedCall is a host's call in flight on the server's connection.
type splicedCall struct {
	req     *jsonrpc.Request // the host's
	version string           // the host's session's protocol version
	p       *splice.Point    // the connection it was spliced onto

	call      *splice.Call // set once Start returned (sp.mu)
	abandoned bool         // the host's stream ended before it was set (sp.mu)
	// again: cut off by the end of p's connection, it is being made once
	// more (sp.mu); stop ends its wait for the reconnect.
	again     bool
	stop      context.CancelFunc
	leaveOnce sync.Once
}

// hostWriteTimeout bounds a write to a host's stream. The answers of
// spliced calls are written on the reading goroutine of the server's
// connection, so a host that stops reading its stream would hold every
// host's calls and the shared host's own requests: after this long its
// stream is closed instead (it reconnects).
const hostWriteTimeout = 5 * time.Second

func (sp *splicer) Connect(ctx context.Context) (mcp.Connection, error) {
	sp.conn = shared.NewLineConn(sp.s, sp.s, sp.s.Close)
	sp.conn.SetWriteTimeout(hostWriteTimeout, sp.s.Conn.SetWriteDeadline)
	return &spliceConn{Connection: sp.conn, sp: sp}, nil
}

// bind names the relay session of the stream (nil when it did not
// connect); no call is spliced before.
func (sp *splicer) bind(ss *mcp.ServerSession) {
	sp.bindOnce.Do(func() {
		sp.ss = ss
		close(sp.bound)
	})
}

// spliceConn is the stream's connection as the relay's server reads it.
type spliceConn struct {
	mcp.Connection
	sp *splicer
}

func (c *spliceConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return nil, err
		}
		if req, ok := msg.(*jsonrpc.Request); ok {
			switch {
			case req.Method == methodCallTool && req.IsCall():
				if c.sp.start(ctx, req) {
					continue
				}
			case req.Method == methodCancelled:
				if c.sp.cancel(req) {
					continue
				}
			}
		}
		return msg, nil
	}
}

// start splices req onto the server's connection and reports whether it
// did.
func (sp *splicer) start(ctx context.Context, req *jsonrpc.Request) bool {
	select {
	case <-sp.bound:
	case <-ctx.Done():
		return false
	}
	ss := sp.ss
	if ss == nil {
		return false
	}
	p := sp.in.h.splices.Point(sp.in.id)
	if p == nil {
		return false
	}
	var version string
	if ip := ss.InitializeParams(); ip != nil {
		version = ip.ProtocolVersion
	}
	sc := &splicedCall{req: req, version: version, p: p}
	hostID := req.ID
	sp.mu.Lock()
	if _, busy := sp.calls[hostID]; busy || sp.ended {
		sp.mu.Unlock()
		return false
	}
	sp.calls[hostID] = sc
	sp.mu.Unlock()
	sp.in.relay.enter(ss)
	call, err := p.Start(req, version, func(resp *jsonrpc.Response, err error) { sp.finish(hostID, sc, resp, err) }, sp.notify)
	if err != nil {
		sp.mu.Lock()
		if sp.calls[hostID] == sc {
			delete(sp.calls, hostID)
		}
		sp.mu.Unlock()
		sc.leave(sp)
		return false // the relay's path
	}
	sp.mu.Lock()
	if !sc.again { // else cut off already, and maybe made again
		sc.call = call
	}
	abandoned := sc.abandoned
	sp.mu.Unlock()
	if abandoned {
		call.Cancel("the host's stream ended")
	}
	return true
}

// leave takes the call off the relay session's calls in flight, once.
func (sc *splicedCall) leave(sp *splicer) {
	sc.leaveOnce.Do(func() { sp.in.relay.leave(sp.ss) })
}

// finish passes a spliced call's response to the host. When the server's
// connection ended first, a call cut off the first time goes on waiting
// to be made once more (again); otherwise the host gets the error result
// of a disconnected server. A call the host cancelled meanwhile gets
// nothing.
func (sp *splicer) finish(hostID jsonrpc.ID, sc *splicedCall, resp *jsonrpc.Response, err error) {
	sp.mu.Lock()
	mine := sp.calls[hostID] == sc
	if mine && err != nil && !sc.again {
		// Not on the connection's reading goroutine: the call waits.
		ctx, stop := context.WithCancel(context.Background())
		sc.again, sc.stop = true, stop
		sp.mu.Unlock()
		go sp.callAgain(ctx, hostID, sc)
		return
	}
	if mine {
		delete(sp.calls, hostID)
		if sc.stop != nil {
			sc.stop()
		}
	}
	sp.mu.Unlock()
	sc.leave(sp)
	if !mine {
		return
	}
	if err != nil {
		resp = disconnectedResponse(hostID, sp.in.id)
	}
	if resp.Error == nil {
		err = sp.conn.WriteResult(resp.ID, resp.Result)
	} else {
		err = sp.conn.Write(context.Background(), resp)
	}
	sp.failed(err)
}

// callAgain makes sc, cut off by the end of its server's connection, once
// more on the server's next connection when the manager's rule for calls
// cut off by a drop says so, and fails it as cut off otherwise. ctx ends
// when the host cancels the call or its stream ends.
func (sp *splicer) callAgain(ctx context.Context, hostID jsonrpc.ID, sc *splicedCall) {
	var call *splice.Call
	err := splice.ErrEnded
	if p := sc.p.Again(ctx, sc.req); p != nil {
		call, err = p.Start(sc.req, sc.version, func(resp *jsonrpc.Response, err error) { sp.finish(hostID, sc, resp, err) }, sp.notify)
	}
	sp.mu.Lock()
	mine := sp.calls[hostID] == sc
	if mine && call != nil {
		sc.call = call
	}
	sp.mu.Unlock()
	switch {
	case !mine && call != nil:
		// Cancelled, or answered already (then this does nothing).
		call.Cancel("the host's call ended")
	case mine && call == nil:
		// Not made again (or it could not be): the error of a call cut
		// off by the drop.
		sp.finish(hostID, sc, nil, err)
	}
}

// notify passes a progress notification of a spliced call to the host.
func (sp *splicer) notify(n *jsonrpc.Request) {
	sp.failed(sp.conn.Write(context.Background(), n))
}

// failed ends the host's stream after a write to it failed (it may hold
// part of a message).
func (sp *splicer) failed(err error) {
	if err != nil {
		sp.s.Conn.Close()
	}
}

// cancel passes a host's notifications/cancelled of a spliced call on and
// reports whether it was one.
func (sp *splicer) cancel(req *jsonrpc.Request) bool {
	var p struct {
		RequestID any    `json:"requestId"`
		Reason    string `json:"reason"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return false
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return false
	}
	sp.mu.Lock()
	sc := sp.calls[id]
	if sc == nil {
		sp.mu.Unlock()
		return false // a call of the relay's
	}
	delete(sp.calls, id)
	call := sc.call
	if sc.stop != nil {
		sc.stop()
	}
	sp.mu.Unlock()
	if call != nil {
		call.Cancel(p.Reason)
	}
	sc.leave(sp)
	return true
}

// end cancels the spliced calls still in flight: the host's stream ended.
func (sp *splicer) end() {
	sp.mu.Lock()
	sp.ended = true
	calls := sp.calls
	sp.calls = map[jsonrpc.ID]*splicedCall{}
	var cancel []*splice.Call
	for _, sc := range calls {
		if sc.stop != nil {
			sc.stop()
		}
		if sc.call != nil {
			cancel = append(cancel, sc.call)
		} else {
			sc.abandoned = true
		}
	}
	sp.mu.Unlock()
	for _, c := range cancel {
		c.Cancel("the host's stream ended")
	}
	for _, sc := range calls {
		sc.leave(sp)
	}
}

// disconnectedResponse is the answer to a call whose server's connection
// ended during it: the error result a call through the manager gets.
func disconnectedResponse(id jsonrpc.ID, server string) *jsonrpc.Response {
	text := manager.ErrorPrefix + fmt.Errorf("%w: %s", manager.ErrDisconnected, server).Error()
	res, _ := json.Marshal(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}})
	return &jsonrpc.Response{ID: id, Result: res}
}

// enter counts a call of ss in flight.
func (r *Relay) enter(ss *mcp.ServerSession) {
	r.mu.Lock()
	r.calls[ss]++
	r.mu.Unlock()
}

// leave counts a call of ss out.
func (r *Relay) leave(ss *mcp.ServerSession) {
	r.mu.Lock()
	if r.calls[ss]--; r.calls[ss] <= 0 {
		delete(r.calls, ss)
	}
	r.mu.Unlock()
}
