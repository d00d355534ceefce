package manager

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store/memory"
)

// A tool call of protocol 2026-07-28 that needs input answers "input
// required" round after round; the host's callbacks answer each round,
// and ToolCallFinished counts the rounds (two requests in one round count
// once). The same server's server-to-client requests of the legacy era
// are no rounds.
func TestInputRoundsAreCounted(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "rounds", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "deploy", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		switch req.Params.RequestState {
		case "":
			return &mcp.CallToolResult{RequestState: "asked", InputRequests: mcp.InputRequestMap{
				"confirm": &mcp.ElicitParams{Message: "Deploy?"},
				"why":     &mcp.ElicitParams{Message: "Why?"},
			}}, nil
		case "asked":
			return &mcp.CallToolResult{RequestState: "drafted", InputRequests: mcp.InputRequestMap{
				"note": &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "note"}}}},
			}}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deployed"}}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if _, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Sure?"}); err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "asked"}}}, nil
	})
	for _, tc := range []struct {
		version string
		tool    string
		rounds  int
	}{
		{"2026-07-28", "deploy", 2},
		{"2025-11-25", "ask", 0},
	} {
		t.Run(tc.version, func(t *testing.T) {
			j := memJournal(t, memory.New())
			t.Cleanup(func() { j.Close() })
			m, err := New(j, "s", &Options{Cwd: t.TempDir(), ProtocolVersion: tc.version, Elicit: AcceptElicitationDefaults,
				Sample: func(context.Context, string, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
					return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "ok"}}, nil
				},
				Dial: func(ctx context.Context, _ events.ServerConfig) (mcp.Transport, error) {
					s, c := mcp.NewInMemoryTransports()
					if _, err := srv.Connect(ctx, s, nil); err != nil {
						return nil, err
					}
					return c, nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close(context.Background()) })
			if res, err := m.ConnectServers(t.Context(), []events.ServerConfig{{Name: "r", Command: "x"}}, nil); err != nil || len(res.Errors) > 0 {
				t.Fatal(res.Errors, err)
			}
			r, err := tool(t, m, "mcp_r_"+tc.tool).Call(t.Context(), nil)
			if err != nil || r.Result.IsError {
				t.Fatalf("call: %+v %v", r, err)
			}
			if err := j.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			var fin []*events.ToolCallFinished
			for env, err := range j.Store().ReadStream(t.Context(), "s", 1) {
				if err != nil {
					t.Fatal(err)
				}
				if ev, _ := events.Decode(env); ev != nil {
					if f, ok := ev.(*events.ToolCallFinished); ok {
						fin = append(fin, f)
					}
				}
			}
			if len(fin) != 1 || fin[0].InputRounds != tc.rounds {
				t.Fatalf("ToolCallFinished %+v, want one with %d input rounds", fin, tc.rounds)
			}
		})
	}
}
