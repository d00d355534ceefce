package mcplangchaingo_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"

	mcplangchaingo "github.com/mcplife/mcplife/adapters/langchaingo"
	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/session"
	"github.com/mcplife/mcplife/store/memory"
)

// A langchaingo ReAct agent uses the tool of an MCP server: the fake model
// decides to call mcp_greeter_greet, the executor calls it through the
// session, and the model answers with what the tool returned.
func Example() {
	ctx := context.Background()

	// The server, in process: one tool, greet.
	type args struct {
		Name string `json:"name"`
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "greet", Description: "Greets someone."},
		func(ctx context.Context, req *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello, " + in.Name}}}, nil, nil
		})

	// The session, recorded in memory, reaching the server over in-memory
	// transports.
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
	if err := s.WaitReady(ctx); err != nil {
		fmt.Println(err)
		return
	}

	// README: begin
	// Build the agent for each run: the tools are the session's now.
	tools := mcplangchaingo.Tools(s, nil)
	agent := agents.NewOneShotAgent(model{}, tools)
	answer, err := chains.Run(ctx, agents.NewExecutor(agent), "Greet Ada.")
	// README: end
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range tools {
		fmt.Println(t.Name())
		fmt.Println(t.Description())
	}
	fmt.Println(answer)
	// Output:
	// mcp_greeter_greet
	// Greets someone.
	// Input: a JSON object with the tool's arguments, as this JSON schema describes: {"additionalProperties":false,"properties":{"name":{"type":"string"}},"required":["name"],"type":"object"} (or the value of "name" alone, as plain text)
	// hello, Ada
}

// model is a fake chat model for the Example, in the ReAct format of
// langchaingo's MRKL agent: it calls the greet tool, and once the prompt
// holds the tool's observation it answers with it.
type model struct{}

func (model) GenerateContent(ctx context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	prompt := msgs[len(msgs)-1].Parts[0].(llms.TextContent).Text
	out := "Thought: I should greet Ada.\nAction: mcp_greeter_greet\nAction Input: {\"name\":\"Ada\"}"
	if _, obs, ok := strings.Cut(prompt[strings.LastIndex(prompt, "Begin!"):], "\nObservation: "); ok {
		out = "Thought: I now know the final answer.\nFinal Answer: " + strings.TrimSpace(obs)
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: out}}}, nil
}

func (m model) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}
