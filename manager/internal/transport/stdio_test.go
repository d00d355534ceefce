package transport

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture/fixturetest"
)

func TestLineWriterNotStdio(t *testing.T) {
	tr, err := New("remote", events.ServerConfig{URL: "http://127.0.0.1:1/mcp"}, Resolved{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if LineWriter(tr) != nil {
		t.Fatal("LineWriter of an HTTP transport is not nil")
	}
	if LineWriter(&mcp.InMemoryTransport{}) != nil {
		t.Fatal("LineWriter of an in-memory transport is not nil")
	}
}

// readResponse reads the connection's next message, which must be the
// response to the request with the string id.
func readResponse(t *testing.T, conn mcp.Connection, id string) *jsonrpc.Response {
	t.Helper()
	msg, err := conn.Read(testCtx(t))
	if err != nil {
		t.Fatalf("read the response to %q: %v", id, err)
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		t.Fatalf("read %T, not the response to %q", msg, id)
	}
	if got, ok := resp.ID.Raw().(string); !ok || got != id {
		t.Fatalf("response id = %#v; want %q", resp.ID.Raw(), id)
	}
	if resp.Error != nil {
		t.Fatalf("response to %q is an error: %v", id, resp.Error)
	}
	return resp
}

func TestLineWriterStdio(t *testing.T) {
	cmd, args := fixturetest.Command(t, "only=echo")
	tr, err := New("fx", events.ServerConfig{Command: cmd, Args: args}, Resolved{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	write := LineWriter(tr)
	if write == nil {
		t.Fatal("LineWriter of a stdio transport is nil")
	}
	if err := write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err == nil {
		t.Fatal("LineWriter wrote before the transport connected")
	}

	conn, err := tr.Connect(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			conn.Close()
		}
	})

	// Each message goes as one line through the writer; the responses
	// come back through the connection.
	if err := write([]byte(`{"jsonrpc":"2.0","id":"init-1","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)); err != nil {
		t.Fatal(err)
	}
	readResponse(t, conn, "init-1")
	if err := write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		t.Fatal(err)
	}
	if err := write([]byte(`{"jsonrpc":"2.0","id":"list-1","method":"tools/list"}`)); err != nil {
		t.Fatal(err)
	}
	resp := readResponse(t, conn, "list-1")
	var res mcp.ListToolsResult
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != "echo" {
		t.Fatalf("tools/list gave %d tools (%+v); want echo alone", len(res.Tools), res.Tools)
	}

	// The connection's own writes and LineWriter's share the stdin.
	id, err := jsonrpc.MakeID("list-2")
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Write(testCtx(t), &jsonrpc.Request{ID: id, Method: "tools/list"}); err != nil {
		t.Fatal(err)
	}
	readResponse(t, conn, "list-2")

	closed = true
	if err := conn.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if err := write([]byte(`{"jsonrpc":"2.0","id":"late","method":"tools/list"}`)); err == nil {
		t.Fatal("LineWriter wrote after the connection closed")
	}
}
