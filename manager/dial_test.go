package manager_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/store/memory"
)

// Options.Dial opens every server's transport: it gets the config with
// its values substituted, a failure is that server's connect error (the
// others connect), and the recorded config keeps the reference, not the
// value.
func TestDialSeam(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "inproc", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "ping"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
	})
	var mu sync.Mutex
	got := map[string]events.ServerConfig{}
	st := memory.New()
	j, err := journal.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	m, err := manager.New(j, "dial", &manager.Options{
		Gate: time.Minute, Cwd: t.TempDir(),
		Resolver: tokenResolver{},
		Dial: func(ctx context.Context, cfg events.ServerConfig) (mcp.Transport, error) {
			mu.Lock()
			got[cfg.Name] = cfg
			mu.Unlock()
			if cfg.Name == "refused" {
				return nil, errors.New("no such server here")
			}
			s, c := mcp.NewInMemoryTransports()
			if _, err := srv.Connect(ctx, s, nil); err != nil {
				return nil, err
			}
			return c, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	defer m.Close(context.Background())
	res, err := m.ConnectServers(ctx, []events.ServerConfig{
		{Name: "ok", Command: "x", Env: map[string]string{"TOKEN": "${TOKEN}"}},
		{Name: "refused", Command: "x"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e := res.Errors["refused"]; e == nil || !strings.Contains(e.Error(), "no such server here") || !strings.Contains(e.Error(), `"refused"`) {
		t.Errorf("refused: %v, want the Dial error naming the server", e)
	}
	if len(res.Connected) != 1 || res.Connected[0] != "ok" {
		t.Errorf("connected %v, want [ok]", res.Connected)
	}
	if v := got["ok"].Env["TOKEN"]; v != "s3cret-value-123" {
		t.Errorf("Dial got env TOKEN=%q, want the substituted value", v)
	}
	tool, ok := m.Tool("mcp_ok_ping")
	if !ok {
		t.Fatal("no mcp_ok_ping")
	}
	if r, err := tool.Call(ctx, nil); err != nil || r.Text() != "pong" {
		t.Fatalf("call: %+v %v", r, err)
	}
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for env, err := range st.ReadAll(ctx, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(env.Data), "s3cret-value-123") {
			t.Errorf("%s records the substituted value", env.Type)
		}
	}
}

// tokenResolver substitutes the test's secret for ${TOKEN}.
type tokenResolver struct{}

func (tokenResolver) Resolve(_ context.Context, v string) (string, error) {
	return strings.ReplaceAll(v, "${TOKEN}", "s3cret-value-123"), nil
}
