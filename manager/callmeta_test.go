package manager_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/store/memory"
)

type metaKey struct{}

// Options.CallMeta adds its keys to each tools/call request's _meta, taken
// from the caller's context, and never replaces a key the manager sets
// itself (the progress token).
func TestCallMetaReachesServer(t *testing.T) {
	seen := make(chan map[string]any, 1)
	srv := mcp.NewServer(&mcp.Implementation{Name: "meta", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "look"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		seen <- req.Params.Meta
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	j, err := journal.New(memory.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	m, err := manager.New(j, "callmeta", &manager.Options{
		Gate: time.Minute, Cwd: t.TempDir(),
		Dial: func(ctx context.Context, cfg events.ServerConfig) (mcp.Transport, error) {
			s, c := mcp.NewInMemoryTransports()
			if _, err := srv.Connect(ctx, s, nil); err != nil {
				return nil, err
			}
			return c, nil
		},
		CallMeta: func(ctx context.Context) map[string]any {
			tp, _ := ctx.Value(metaKey{}).(string)
			return map[string]any{"traceparent": tp, "progressToken": "not-the-managers"}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	ctx := t.Context()
	if _, err := m.ConnectServers(ctx, []events.ServerConfig{{Name: "meta", Command: "in-process"}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	look, ok := m.Tool("mcp_meta_look")
	if !ok {
		t.Fatal("no mcp_meta_look")
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	callCtx := manager.WithProgress(context.WithValue(ctx, metaKey{}, tp), func(manager.Progress) {})
	if r, err := look.Call(callCtx, nil); err != nil || r.Text() != "ok" {
		t.Fatalf("call: %+v %v", r, err)
	}
	meta := <-seen
	if got := meta["traceparent"]; got != tp {
		t.Errorf("_meta.traceparent = %v, want %s", got, tp)
	}
	if got, _ := meta["progressToken"].(string); !strings.HasPrefix(got, "mcplife-") {
		t.Errorf("_meta.progressToken = %v, want the manager's own token", meta["progressToken"])
	}
}
