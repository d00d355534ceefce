package manager

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Progress is one progress notification a server sent about a tool call.
type Progress struct {
	Progress float64
	Total    float64 // 0 when the server does not know
	Message  string
}

type progressKey struct{}

// progressGrace is how long a call's progress token stays routed after the
// call returned.
const progressGrace = time.Second

// WithProgress returns a context under which [Tool.Call] asks the server
// for progress notifications (it sends a progress token) and passes each
// one to fn. The go-sdk handles notifications concurrently with responses,
// so fn may be called in any order, and up to progressGrace (1 s) after
// Call returned; it must be safe for concurrent use, return quickly, and
// not call the manager.
func WithProgress(ctx context.Context, fn func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// progressTokens routes the progress notifications of one connection to
// the calls that asked for them.
type progressTokens struct {
	next atomic.Uint64
	fns  sync.Map // token string → func(Progress)
}

// register gives a call's params a new progress token routed to fn; the
// returned function forgets it.
func (p *progressTokens) register(params *mcp.CallToolParams, fn func(Progress)) func() {
	token := "mcplife-" + strconv.FormatUint(p.next.Add(1), 10)
	params.SetProgressToken(token)
	p.fns.Store(token, fn)
	return func() { p.fns.Delete(token) }
}

// notify is the client's progress handler.
func (p *progressTokens) notify(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	token, ok := req.Params.ProgressToken.(string)
	if !ok {
		return
	}
	if fn, ok := p.fns.Load(token); ok {
		fn.(func(Progress))(Progress{Progress: req.Params.Progress, Total: req.Params.Total, Message: req.Params.Message})
	}
}
