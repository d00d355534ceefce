package mcpeino_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpeino "github.com/mcplife/mcplife/adapters/eino"
	"github.com/mcplife/mcplife/session"
)

// benchSchema is a typical tool schema, one eino's jsonschema type can
// decode by itself.
const benchSchema = `{"type":"object","properties":{"path":{"type":"string","description":"File to read."},` +
	`"offset":{"type":"integer","minimum":0},"limit":{"type":"integer","minimum":1,"maximum":1000},` +
	`"mode":{"type":"string","enum":["text","binary"]}},"required":["path"],"additionalProperties":false}`

func benchSession(b *testing.B, n int) *session.Session {
	f := newFixture(false)
	for i := range n {
		f.server.AddTool(&mcp.Tool{Name: fmt.Sprintf("t%03d", i), Description: "A tool.", InputSchema: json.RawMessage(benchSchema)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			})
	}
	s := f.start(b)
	if err := s.WaitReady(context.Background()); err != nil {
		b.Fatal(err)
	}
	return s
}

// What a run pays to follow the session, for 50 tools: Tools and
// react.WithTools (every tool's Info, so every schema converted), or a
// Toolset's Tools, which converts only what changed; the baseline is
// reading the session's registry alone.
func BenchmarkPerRunTools(b *testing.B) {
	s := benchSession(b, 50)
	ctx := context.Background()
	b.Run("baseline=session.Tools", func(b *testing.B) {
		for b.Loop() {
			_ = s.Tools()
		}
	})
	b.Run("Tools+react.WithTools", func(b *testing.B) {
		for b.Loop() {
			if _, err := react.WithTools(ctx, mcpeino.Tools(s, nil)...); err != nil {
				b.Fatal(err)
			}
		}
	})
	ts := mcpeino.NewToolset(s, nil)
	b.Run("Toolset.Tools+react.WithTools", func(b *testing.B) {
		for b.Loop() {
			if _, err := react.WithTools(ctx, ts.Tools()...); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// One call through an eino tool against the same call through the
// session's tool, over in-memory transports.
func BenchmarkCall(b *testing.B) {
	s := benchSession(b, 1)
	ctx := context.Background()
	st, _ := s.Tool("mcp_demo_t000")
	b.Run("baseline=session.Tool.Call", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.Call(ctx, json.RawMessage(`{"path":"x"}`)); err != nil {
				b.Fatal(err)
			}
		}
	})
	it := mcpeino.Tools(s, nil)[0].(tool.InvokableTool)
	b.Run("InvokableRun", func(b *testing.B) {
		for b.Loop() {
			if _, err := it.InvokableRun(ctx, `{"path":"x"}`); err != nil {
				b.Fatal(err)
			}
		}
	})
}
