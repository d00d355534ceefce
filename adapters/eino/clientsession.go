package mcpeino

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/session"
)

// ClientSession is one server of a session in the shape of a go-sdk client
// session: the two methods eino-ext's MCP tools (officialmcp.ClientSession)
// take from one, served by the session's manager. It can be given as
// officialmcp.Config's Cli where a host already builds its eino tools with
// eino-ext; the manager keeps the connection (reconnects, deferred
// tools, recording) behind it. It is safe for concurrent use.
type ClientSession struct {
	s      *session.Session
	server string
}

// NewClientSession returns the server named server of s as a
// [ClientSession]. The server need not be connected yet: ListTools lists
// what the manager holds for it at each call.
func NewClientSession(s *session.Session, server string) *ClientSession {
	return &ClientSession{s: s, server: server}
}

// ListTools returns the server's tools under their own names, in one page,
// as the manager holds them now: its latest list, or the cached one while
// it is still connecting. A non-empty cursor is an error (there is no
// second page); so is a session without MCP.
func (c *ClientSession) ListTools(ctx context.Context, params *mcp.ListToolsParams) (*mcp.ListToolsResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if params != nil && params.Cursor != "" {
		return nil, fmt.Errorf("mcpeino: %s: invalid cursor %q", c.server, params.Cursor)
	}
	m := c.s.Manager()
	if m == nil {
		return nil, c.notConnected()
	}
	res := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
	for _, t := range m.Tools() {
		if t.Server != c.server {
			continue
		}
		mt := &mcp.Tool{Name: t.Original, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema}
		if len(t.OutputSchema) > 0 {
			mt.OutputSchema = t.OutputSchema
		}
		if len(t.Annotations) > 0 {
			var a mcp.ToolAnnotations
			if json.Unmarshal(t.Annotations, &a) == nil {
				mt.Annotations = &a
			}
		}
		if len(t.Icons) > 0 {
			_ = json.Unmarshal(t.Icons, &mt.Icons)
		}
		res.Tools = append(res.Tools, mt)
	}
	return res, nil
}

// CallTool calls the server's tool params.Name (its own name) with
// params.Arguments through the manager. As a go-sdk session does, it
// returns the server's result, isError results included, and an error
// when the call failed on the client side: the server is not connected
// or dropped, the call timed out (errors.Is with manager.ErrNotConnected,
// manager.ErrDisconnected, manager.ErrTimeout), the server has no such
// tool (session.ErrUnknownTool), or ctx ended. params.Meta is not sent.
func (c *ClientSession) CallTool(ctx context.Context, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	if params == nil {
		return nil, errors.New("mcpeino: CallTool: nil params")
	}
	m := c.s.Manager()
	if m == nil {
		return nil, c.notConnected()
	}
	var target *manager.Tool
	for _, t := range m.Tools() {
		if t.Server == c.server && t.Original == params.Name {
			target = t
			break
		}
	}
	if target == nil {
		return nil, fmt.Errorf("%w: %s on %s", session.ErrUnknownTool, params.Name, c.server)
	}
	res, err := target.Call(ctx, params.Arguments)
	if err != nil {
		return nil, err
	}
	if res.Err != nil {
		return nil, res.Err
	}
	return res.Result, nil
}

func (c *ClientSession) notConnected() error {
	return &manager.ServerError{Server: c.server, Op: manager.OpCall, Err: manager.ErrNotConnected}
}
