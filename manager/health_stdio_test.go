package manager

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
)

// sentTransport tells the method of each request the client writes on
// seen, while it has room.
type sentTransport struct {
	inner mcp.Transport
	seen  chan string
}

func (t *sentTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &sentConn{Connection: c, seen: t.seen}, nil
}

type sentConn struct {
	mcp.Connection
	seen chan string
}

func (c *sentConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Request); ok && r.IsCall() {
		select {
		case c.seen <- r.Method:
		default:
		}
	}
	return c.Connection.Write(ctx, msg)
}

// TestModernStdioServerIsCheckedWithDiscover: the fixture over stdio,
// at 2026-07-28, is checked with server/discover on its pipe, answers
// each check, and is never dropped: five checks go out on the one
// connection (a check that failed would have closed it).
func TestModernStdioServerIsCheckedWithDiscover(t *testing.T) {
	seen := make(chan string, 256)
	e := newEnv(t, &Options{ProtocolVersion: "2026-07-28", Health: HealthOptions{Interval: 20 * time.Millisecond},
		Dial: func(context.Context, events.ServerConfig) (mcp.Transport, error) {
			return &sentTransport{inner: &mcp.CommandTransport{Command: fixturetest.Cmd(t)}, seen: seen}, nil
		}})
	ctx := testCtx(t)
	res, err := e.m.ConnectServers(ctx, []events.ServerConfig{{Name: "fx", Command: "fixture"}}, nil)
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("connect: %v %v", err, res.Errors)
	}
	counts := map[string]int{}
	for counts["server/discover"] < 1+5 { // the connect's, then five checks
		select {
		case m := <-seen:
			counts[m]++
		case <-ctx.Done():
			t.Fatalf("requests sent: %v: %v", counts, ctx.Err())
		}
	}
	if counts["ping"] != 0 {
		t.Errorf("%d pings sent to a server without ping", counts["ping"])
	}
	for _, ev := range e.decoded(e.session) {
		switch x := ev.(type) {
		case *events.Disconnected:
			t.Errorf("a healthy server was dropped: %s", events.Describe(x))
		case *events.ServerConnected:
			if x.ProtocolVersion != "2026-07-28" {
				t.Errorf("connected at %s, want 2026-07-28", x.ProtocolVersion)
			}
		}
	}
}
