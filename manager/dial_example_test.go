package manager_test

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/store/memory"
)

// A go-sdk server in the same process, reached through Options.Dial over
// in-memory transports: no child process, no network, and the whole
// lifecycle recorded as for any other server.
func ExampleOptions_dial() {
	ctx := context.Background()

	// The server: one tool, greet.
	type args struct {
		Name string `json:"name"`
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "greet", Description: "Greets someone."},
		func(ctx context.Context, req *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello, " + in.Name}}}, nil, nil
		})

	st := memory.New()
	defer st.Close()
	j, err := journal.New(st, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer j.Close()
	m, err := manager.New(j, "example", &manager.Options{
		Dial: func(ctx context.Context, cfg events.ServerConfig) (mcp.Transport, error) {
			serverSide, clientSide := mcp.NewInMemoryTransports()
			if _, err := srv.Connect(ctx, serverSide, nil); err != nil {
				return nil, err
			}
			return clientSide, nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close(ctx)

	// The command is not run: Dial opens every transport.
	res, err := m.ConnectServers(ctx, []events.ServerConfig{{Name: "greeter", Command: "in-process"}}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := res.Errors["greeter"]; err != nil {
		fmt.Println(err)
		return
	}
	if err := m.WaitReady(ctx); err != nil {
		fmt.Println(err)
		return
	}
	greet, ok := m.Tool("mcp_greeter_greet")
	if !ok {
		fmt.Println("no greet tool")
		return
	}
	r, err := greet.Call(ctx, map[string]any{"name": "Ada"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Text())
	fmt.Println(m.Status("greeter"))
	// Output:
	// hello, Ada
	// connected
}
