package manager

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/manager/internal/transport"
	"github.com/mcplife/mcplife/store/memory"
)

// chattyTransport is an in-memory connection to a go-sdk server into which
// the test injects notifications/tools/list_changed, as a server that
// sends them in a loop would.
type chattyTransport struct {
	inner  mcp.Transport
	inject chan struct{}
}

func (t *chattyTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	c := &chattyConn{Connection: conn, inject: t.inject, in: make(chan jsonrpc.Message), done: make(chan struct{}), stop: make(chan struct{})}
	go c.pump()
	return c, nil
}

type chattyConn struct {
	mcp.Connection
	inject chan struct{}
	in     chan jsonrpc.Message
	err    error // set before done is closed
	done   chan struct{}
	stop   chan struct{} // closed by Close
	once   sync.Once
}

func (c *chattyConn) Close() error {
	c.once.Do(func() { close(c.stop) })
	return c.Connection.Close()
}

func (c *chattyConn) pump() {
	defer close(c.done)
	for {
		msg, err := c.Connection.Read(context.Background())
		if err != nil {
			c.err = err
			return
		}
		select {
		case c.in <- msg:
		case <-c.stop:
			return
		}
	}
}

func (c *chattyConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-c.inject:
		return &jsonrpc.Request{Method: "notifications/tools/list_changed", Params: json.RawMessage(`{}`)}, nil
	case msg := <-c.in:
		return msg, nil
	case <-c.done:
		return nil, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// A server that sends tools/list_changed every millisecond without
// changing anything costs one tools/list per RelistInterval and records no
// list; a real change is recorded once.
func TestListChangedFloodIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		j := memJournal(t, memory.New())
		defer j.Close()
		m := memManager(t, j)
		inject := make(chan struct{})
		var lists atomic.Int32
		var srv *mcp.Server
		m.dial = func(name string, _ events.ServerConfig, _ transport.Resolved, _ string) (mcp.Transport, error) {
			srv = mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
			srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
			srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					if method == "tools/list" {
						lists.Add(1)
					}
					return next(ctx, method, req)
				}
			})
			st, ct := mcp.NewInMemoryTransports()
			if _, err := srv.Connect(context.Background(), st, nil); err != nil {
				return nil, err
			}
			return &chattyTransport{inner: ct, inject: inject}, nil
		}
		if _, err := m.ConnectServers(ctx, []events.ServerConfig{{Name: "chatty", Command: "x"}}, nil); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		start := time.Now()
		for range 5000 { // 5 s of notifications, one a millisecond
			inject <- struct{}{}
			time.Sleep(time.Millisecond)
		}
		synctest.Wait()
		elapsed := time.Since(start)
		count := func() (changed, listed int) {
			for env, err := range j.Store().ReadStream(ctx, "s", 1) {
				if err != nil {
					t.Fatal(err)
				}
				switch env.Type {
				case events.TypeToolListChanged:
					changed++
				case events.TypeToolsListed:
					listed++
				}
			}
			return changed, listed
		}
		changed, listed := count()
		maxRelists := int(elapsed/defaultRelistInterval) + 1
		if n := int(lists.Load()) - 1; n > maxRelists || n < 1 {
			t.Errorf("%d re-lists in %v, want 1..%d", n, elapsed, maxRelists)
		}
		if changed > maxRelists || changed < 1 {
			t.Errorf("%d ToolListChanged in %v, want 1..%d", changed, elapsed, maxRelists)
		}
		if listed != 1 {
			t.Errorf("%d ToolsListed, want only the initial one (nothing changed)", listed)
		}

		// A real change is recorded, once.
		time.Sleep(defaultRelistInterval)
		srv.AddTool(&mcp.Tool{Name: "added", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
		synctest.Wait() // the server's own notification goes through too
		inject <- struct{}{}
		time.Sleep(2 * defaultRelistInterval)
		synctest.Wait()
		if _, listed := count(); listed != 2 {
			t.Errorf("%d ToolsListed after a change, want 2", listed)
		}
		if got := toolNames(m.Tools()); len(got) != 2 {
			t.Errorf("tools after the change: %v", got)
		}
		if err := m.Close(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
