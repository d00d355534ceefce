package transport

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// methodListen is the request whose response is the stream of list-changed
// (and resource) notifications under protocol 2026-07-28: its result, the
// stream's last message, comes only when the server ends the subscription.
const methodListen = "subscriptions/listen"

// OnListenEnd has ended called when a subscriptions/listen stream of t
// ends before its final response arrived: the server went away (a
// restart, a reset connection) and its notifications with it. The go-sdk
// notices nothing then, so list changes would stop arriving on a
// connection that looks healthy. A stream its own client closed (a
// cancelled listen, the session's close) is no such end. ended gets the
// error that ended the stream's body (io.EOF when the server closed it)
// and is called at most once per stream, from the go-sdk's reading
// goroutine: it must not block. OnListenEnd reports false, and does
// nothing, for a transport that [New] did not return for a streamable
// HTTP server.
func OnListenEnd(t mcp.Transport, ended func(error)) bool {
	pt, ok := t.(*pooledTransport)
	if !ok {
		return false
	}
	if _, ok := pt.Transport.(*mcp.StreamableClientTransport); !ok {
		return false
	}
	pt.depth.listenEnded.Store(&ended)
	return true
}

// listenHook is depthTransport's part in watching listen streams.
type listenHook struct {
	listenEnded atomic.Pointer[func(error)]
}

// watch returns the watch of the response to r, nil when r is not a
// subscriptions/listen request or nobody asked to hear of its end. Under
// protocol 2026-07-28 (the only one with subscriptions/listen) the
// go-sdk names every request's method in its Mcp-Method header.
func (h *listenHook) watch(r *http.Request, resp *http.Response) *listenWatch {
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Method") != methodListen || resp.StatusCode/100 != 2 {
		return nil
	}
	f := h.listenEnded.Load()
	if f == nil {
		return nil
	}
	return &listenWatch{ctx: r.Context(), ended: *f}
}

// listenWatch follows one listen stream: complete once a response (the
// listen's result or error) went by.
type listenWatch struct {
	ctx      context.Context // the request's: cancelled when its client closes the stream
	ended    func(error)
	complete bool
	done     bool
}

// saw notes one message of the stream. The stream of one POST carries the
// notifications of its request and that request's response only, so any
// response is the final one.
func (w *listenWatch) saw(msg []byte) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(msg, &m) == nil && m.Method == "" && len(m.ID) > 0 && string(m.ID) != "null" {
		w.complete = true
	}
}

// end is called when the stream's body ends with err.
func (w *listenWatch) end(err error) {
	if w.done {
		return
	}
	w.done = true
	if !w.complete && w.ctx.Err() == nil {
		w.ended(err)
	}
}
