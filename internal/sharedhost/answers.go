package sharedhost

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/internal/shared"
)

// The attach answer carries the relay's answers to server/discover and
// to the first tools/list, so a host need not ask over its stream (see
// shared.Answering). They are made by asking the relay itself, over an
// in-memory session, once per revision of its tools: what the host reads
// is what the stream would have answered.
//
// A host answered from revision n opens its stream with n; when its
// subscriptions/listen is acknowledged, the relay tells it its tools
// changed if the revision is no longer n. A change after the
// acknowledgement reaches the listen as any change does: the revision
// is counted up before the relay's tools change, under the relay's lock,
// so a change either precedes the check or follows the listen.

// answers returns the relay's answers as of its current revision of
// tools.
func (r *Relay) answers(ctx context.Context) (*shared.Answers, error) {
	r.mu.Lock()
	rev, a := r.rev, r.ans
	r.mu.Unlock()
	if a != nil && a.Revision == rev {
		return a, nil
	}
	a, err := r.ask(ctx)
	if err != nil {
		return nil, err
	}
	a.Revision = rev
	r.mu.Lock()
	if r.rev == rev {
		r.ans = a
	}
	r.mu.Unlock()
	return a, nil
}

// ask asks the relay for server/discover and tools/list at
// shared.AnswersProtocol, on a session of its own.
func (r *Relay) ask(ctx context.Context) (*shared.Answers, error) {
	var discover, tools mcp.Result
	c := mcp.NewClient(&mcp.Implementation{Name: "mcplife-shared-host", Version: "0"}, nil)
	c.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if err == nil {
				switch method {
				case "server/discover":
					discover = res
				case "tools/list":
					tools = res
				}
			}
			return res, err
		}
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := r.srv.Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	defer ss.Wait()
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: shared.AnswersProtocol})
	if err != nil {
		ss.Close()
		return nil, err
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, &mcp.ListToolsParams{}); err != nil {
		return nil, err
	}
	if discover == nil || tools == nil {
		return nil, errors.New("the relay's answers were not seen")
	}
	a := &shared.Answers{}
	if a.Discover, err = json.Marshal(discover); err != nil {
		return nil, err
	}
	if a.Tools, err = json.Marshal(tools); err != nil {
		return nil, err
	}
	return a, nil
}

// revisionKey is the context key of the revision of the answers a
// stream's host had (a uint64).
type revisionKey struct{}

// withRevision returns the context of a stream's session whose upgrade
// named the revision its host was answered from, ctx when it named none.
func withRevision(ctx context.Context, header string) context.Context {
	if header == "" {
		return ctx
	}
	rev, err := strconv.ParseUint(header, 10, 64)
	if err != nil {
		return ctx
	}
	return context.WithValue(ctx, revisionKey{}, rev)
}

// tellChanges is the relay's sending middleware: after the
// acknowledgement of a listen for tool changes, on a stream whose host
// was answered from an older revision of the tools, it tells the stream
// they changed.
func (r *Relay) tellChanges(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "notifications/subscriptions/acknowledged" || err != nil {
			return res, err
		}
		rev, ok := ctx.Value(revisionKey{}).(uint64)
		p, _ := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams)
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if !ok || p == nil || ss == nil || !p.Notifications.ToolsListChanged {
			return res, err
		}
		r.mu.Lock()
		changed := r.rev != rev
		r.mu.Unlock()
		if changed {
			params := &mcp.ToolListChangedParams{}
			if id, ok := p.Meta[mcp.MetaKeySubscriptionID]; ok {
				params.Meta = mcp.Meta{mcp.MetaKeySubscriptionID: id}
			}
			// A failure is the stream's end: its host lists again when
			// it connects again.
			next(ctx, "notifications/tools/list_changed", &mcp.ServerRequest[*mcp.ToolListChangedParams]{Session: ss, Params: params})
		}
		return res, err
	}
}
