package mcpgenkit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/session"

	mcpgenkit "github.com/mcplife/mcplife/adapters/genkit"
)

// wide is a session of one server with n tools, echo among them.
func wide(b *testing.B, n int) *session.Session {
	srv := server("wide")
	addEcho(srv)
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"a file"},"limit":{"type":"integer","minimum":1}},"required":["path"]}`)
	for i := range n - 1 {
		srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("tool%03d", i), Description: "One of many tools.", InputSchema: schema},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return textResult("ok"), nil
			})
	}
	s := fixture{servers: map[string]*mcp.Server{"wide": srv}}.start(b)
	if err := s.WaitReady(b.Context()); err != nil {
		b.Fatal(err)
	}
	if got := len(s.ActiveTools()); got != n {
		b.Fatalf("%d tools", got)
	}
	return s
}

// The tools are built afresh for every Generate call: this is what that
// costs for a server of 100 tools, beside reading the session's list,
// building them with Genkit's constructor, and a whole Generate call that
// offers them and calls one.
func BenchmarkTools(b *testing.B) {
	s := wide(b, 100)
	b.Run("ActiveTools", func(b *testing.B) {
		for b.Loop() {
			_ = s.ActiveTools()
		}
	})
	b.Run("Tools", func(b *testing.B) {
		for b.Loop() {
			_ = mcpgenkit.Tools(s)
		}
	})
	// The same tools made by Genkit's constructor, which infers the
	// response type's schema for each: what Tools would cost built that
	// way.
	b.Run("ai.NewMultipartTool", func(b *testing.B) {
		for b.Loop() {
			for _, t := range s.ActiveTools() {
				var schema map[string]any
				json.Unmarshal(t.InputSchema, &schema)
				_ = ai.NewMultipartTool(t.Name, t.Description,
					func(tc *ai.ToolContext, input any) (*ai.MultipartToolResponse, error) { return nil, nil },
					ai.WithInputSchema(schema))
			}
		}
	})
	b.Run("genkit.Generate", func(b *testing.B) {
		g, sm := newScripted(b)
		for b.Loop() {
			got, err := sm.ask(b.Context(), g, mcpgenkit.WithTools(s), call{Tool: "mcp_wide_echo", Input: map[string]any{"text": "hi"}})
			if err != nil || got != `"hi"` {
				b.Fatal(got, err)
			}
			sm.reset()
		}
	})
}

// One tool call through a whole Generate call (two turns of a scripted
// model), beside the same call made on the session directly.
func BenchmarkCall(b *testing.B) {
	srv := server("main")
	addEcho(srv)
	s := fixture{servers: map[string]*mcp.Server{"main": srv}}.start(b)
	if err := s.WaitReady(b.Context()); err != nil {
		b.Fatal(err)
	}
	echo, ok := s.Tool("mcp_main_echo")
	if !ok {
		b.Fatal("no echo")
	}
	b.Run("session", func(b *testing.B) {
		for b.Loop() {
			if _, err := echo.Call(b.Context(), json.RawMessage(`{"text":"hi"}`)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("genkit.Generate", func(b *testing.B) {
		g, sm := newScripted(b)
		for b.Loop() {
			got, err := sm.ask(b.Context(), g, mcpgenkit.WithTools(s), call{Tool: "mcp_main_echo", Input: map[string]any{"text": "hi"}})
			if err != nil || got != `"hi"` {
				b.Fatal(got, err)
			}
			sm.reset()
		}
	})
}
