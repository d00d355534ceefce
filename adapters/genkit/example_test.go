package mcpgenkit_test

import (
	"context"
	"fmt"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/session"
	"github.com/mcplife/mcplife/store/memory"

	mcpgenkit "github.com/mcplife/mcplife/adapters/genkit"
)

// A Genkit Generate call whose model calls an MCP tool of a mcplife
// session: the server runs in process (reached through the manager's Dial
// over in-memory transports), the session records into an in-memory
// store, and a scripted model stands in for a real one.
func Example() {
	ctx := context.Background()

	// The MCP server: one tool, greet.
	type args struct {
		Name string `json:"name"`
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "greet", Description: "Greets someone."},
		func(ctx context.Context, req *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello, " + in.Name}}}, nil, nil
		})

	// The session.
	st := memory.New()
	defer st.Close()
	j, err := journal.New(st, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer j.Close()
	s, err := session.Start(ctx, j, &session.Options{
		Servers: []events.ServerConfig{{Name: "greeter", Command: "in-process"}},
		Manager: &manager.Options{Dial: func(ctx context.Context, cfg events.ServerConfig) (mcp.Transport, error) {
			serverSide, clientSide := mcp.NewInMemoryTransports()
			if _, err := srv.Connect(ctx, serverSide, nil); err != nil {
				return nil, err
			}
			return clientSide, nil
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close(ctx)

	// Genkit, with a model that asks for the tool on its first turn and
	// reports the tool's answer once it has it.
	g := genkit.Init(ctx)
	m := genkit.DefineModel(g, "example/scripted",
		&ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true}},
		func(ctx context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			last := req.Messages[len(req.Messages)-1]
			for _, p := range last.Content {
				if p.IsToolResponse() {
					return &ai.ModelResponse{Message: ai.NewModelTextMessage(fmt.Sprintf("The tool said: %v", p.ToolResponse.Output))}, nil
				}
			}
			return &ai.ModelResponse{Message: &ai.Message{Role: ai.RoleModel, Content: []*ai.Part{
				ai.NewToolRequestPart(&ai.ToolRequest{Name: "mcp_greeter_greet", Input: map[string]any{"name": "Ada"}}),
			}}}, nil
		})

	// README: begin
	resp, err := genkit.Generate(ctx, g,
		ai.WithModel(m),
		ai.WithPrompt("Greet Ada."),
		// The session's tools as they are now: build the option for each
		// Generate call, so it sees servers that came or went since.
		mcpgenkit.WithTools(s),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Text())
	// README: end

	// Output:
	// The tool said: hello, Ada
}
