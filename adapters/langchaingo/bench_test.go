package mcplangchaingo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tmc/langchaingo/llms"

	mcplangchaingo "github.com/mcplife/mcplife/adapters/langchaingo"
)

// benchServer is a server with n tools, each with a
// small object schema, answering their text argument.
func benchServer(n int) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1.0.0"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"what to echo"},"times":{"type":"integer","minimum":1}},"required":["text"]}`)
	for i := range n {
		srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("tool%02d", i), Description: "Echoes its text.", InputSchema: schema},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return text(string(req.Params.Arguments)), nil
			})
	}
	return srv
}

// A call through a tools.Tool against the same call through the session
// tool it wraps: the difference is the adapter's (reading the input,
// rendering the result).
func BenchmarkCall(b *testing.B) {
	s := startSession(b, map[string]fixture{"bench": {srv: benchServer(1)}}, nil)
	ready(b, s)
	ctx := context.Background()
	input := `{"text":"hello","times":2}`
	b.Run("session", func(b *testing.B) {
		st, ok := s.Tool("mcp_bench_tool00")
		if !ok {
			b.Fatal("no tool")
		}
		for b.Loop() {
			t, _ := s.Tool(st.Name)
			r, err := t.Call(ctx, json.RawMessage(input))
			if err != nil || r.Result.IsError {
				b.Fatal(err, r.Text())
			}
			_ = r.Text()
		}
	})
	b.Run("tools.Tool", func(b *testing.B) {
		tool := mcplangchaingo.Tools(s, nil)[0]
		for b.Loop() {
			if _, err := tool.Call(ctx, input); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CallTool", func(b *testing.B) {
		call := llms.ToolCall{ID: "c", Type: "function", FunctionCall: &llms.FunctionCall{Name: "mcp_bench_tool00", Arguments: input}}
		for b.Loop() {
			if _, err := mcplangchaingo.CallTool(ctx, s, call, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// What taking the tools for a run costs, for 50 tools: Tools (with each
// description's schema line) and LLMTools (each schema decoded), against
// the session's own list they are made from.
func BenchmarkTools50(b *testing.B) {
	s := startSession(b, map[string]fixture{"bench": {srv: benchServer(50)}}, nil)
	ready(b, s)
	if n := len(s.Tools()); n != 50 {
		b.Fatalf("%d tools", n)
	}
	b.Run("session.Tools", func(b *testing.B) {
		for b.Loop() {
			_ = s.Tools()
		}
	})
	b.Run("Tools", func(b *testing.B) {
		for b.Loop() {
			_ = mcplangchaingo.Tools(s, nil)
		}
	})
	b.Run("LLMTools", func(b *testing.B) {
		for b.Loop() {
			_ = mcplangchaingo.LLMTools(s)
		}
	})
}
