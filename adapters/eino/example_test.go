package mcpeino_test

import (
	"context"
	"fmt"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpeino "github.com/mcplife/mcplife/adapters/eino"
	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/session"
	"github.com/mcplife/mcplife/store/memory"
)

// A react agent calls a session's MCP tool: the model asks for
// mcp_greeter_greet, the agent's ToolsNode calls the server through the
// session, and the model answers with what the tool said. The server is a
// go-sdk server in the same process; the model is a stand-in that decides
// as a real one would.
func Example() {
	ctx := context.Background()
	s, cleanup, err := greeterSession(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()
	if err := s.WaitReady(ctx); err != nil {
		fmt.Println(err)
		return
	}
	if err := ask(ctx, s, greetingModel{}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// model sees: mcp_greeter_greet
	// tool says: hello, Ada
	// answer: The greeter said: hello, Ada
}

// ask is the README's snippet: the lines between the markers.
func ask(ctx context.Context, s *session.Session, chatModel model.ToolCallingChatModel) error {
	// README: begin
	agent, err := react.NewAgent(ctx, &react.AgentConfig{ToolCallingModel: chatModel})
	if err != nil {
		return err
	}
	// Take the session's tools at each run: a server that connected late,
	// or a list that changed, is in the next run's tools.
	opts, err := react.WithTools(ctx, mcpeino.Tools(s, nil)...)
	if err != nil {
		return err
	}
	answer, err := agent.Generate(ctx, []*schema.Message{schema.UserMessage("Greet Ada.")}, opts...)
	if err != nil {
		return err // a cancelled run, or an isError result (*mcpeino.ToolError)
	}
	fmt.Println("answer:", answer.Content)
	// README: end
	return nil
}

// greeterSession starts a session whose one server, greeter, is a go-sdk
// server in this process, reached over in-memory transports, recording
// into an in-memory store.
func greeterSession(ctx context.Context) (*session.Session, func(), error) {
	type args struct {
		Name string `json:"name"`
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "greet", Description: "Greets someone."},
		func(ctx context.Context, req *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello, " + in.Name}}}, nil, nil
		})
	st := memory.New()
	j, err := journal.New(st, nil)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
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
		j.Close()
		st.Close()
		return nil, nil, err
	}
	return s, func() { s.Close(ctx); j.Close(); st.Close() }, nil
}

// greetingModel stands in for a chat model: it calls the greet tool it was
// given, then answers with the tool's result.
type greetingModel struct{ tools []*schema.ToolInfo }

func (m greetingModel) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	return greetingModel{tools: tools}, nil
}

func (m greetingModel) Generate(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.Message, error) {
	if last := in[len(in)-1]; last.Role == schema.Tool {
		fmt.Println("tool says:", last.Content)
		return schema.AssistantMessage("The greeter said: "+last.Content, nil), nil
	}
	for _, t := range model.GetCommonOptions(&model.Options{Tools: m.tools}, opts...).Tools {
		fmt.Println("model sees:", t.Name)
		if t.Name == "mcp_greeter_greet" {
			return schema.AssistantMessage("", []schema.ToolCall{{ID: "1", Function: schema.FunctionCall{Name: t.Name, Arguments: `{"name":"Ada"}`}}}), nil
		}
	}
	return schema.AssistantMessage("I have no greeting tool.", nil), nil
}

func (m greetingModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}
