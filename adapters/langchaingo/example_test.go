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
	s, done, err := greeterSession(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	answer, err := ask(ctx, s, model{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(answer)
	for _, t := range mcplangchaingo.Tools(s, nil) {
		fmt.Println(t.Name())
		fmt.Println(t.Description())
	}
	// Output:
	// hello, Ada
	// mcp_greeter_greet
	// Greets someone.
	// Input: a JSON object with the tool's arguments, as this JSON schema describes: {"additionalProperties":false,"properties":{"name":{"type":"string"}},"required":["name"],"type":"object"} (or the value of "name" alone, as plain text)
}

// ask is the README's snippet: a ReAct agent over the session's tools.
func ask(ctx context.Context, s *session.Session, llm llms.Model) (string, error) {
	// README: begin
	// Build the agent for each run: its tools are the session's now (a
	// server that connected late, a list that changed).
	agent := agents.NewOneShotAgent(llm, mcplangchaingo.Tools(s, nil))
	answer, err := chains.Run(ctx, agents.NewExecutor(agent), "Greet Ada.")
	if err != nil {
		return "", err // ctx ended (the MCP call is cancelled), or the model failed
	}
	return answer, nil
	// README: end
}

// Native function calling: the model is given the tools' definitions with
// their input schemas, returns a tool call, CallTool runs it, and the model
// sees the response.
func ExampleCallTool() {
	ctx := context.Background()
	s, done, err := greeterSession(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	answer, err := askNative(ctx, s, callingModel{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(answer)
	// Output:
	// the tool said: hello, Ada
}

// askNative is the README's second snippet: a loop of one's own over
// native function calling.
func askNative(ctx context.Context, s *session.Session, llm llms.Model) (string, error) {
	// README: begin
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Greet Ada.")}
	for {
		// The definitions carry each tool's JSON schema as the server sent it.
		resp, err := llm.GenerateContent(ctx, msgs, llms.WithTools(mcplangchaingo.LLMTools(s)))
		if err != nil {
			return "", err
		}
		choice := resp.Choices[0]
		if len(choice.ToolCalls) == 0 {
			return choice.Content, nil
		}
		for _, call := range choice.ToolCalls {
			msgs = append(msgs, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{call}})
			r, err := mcplangchaingo.CallTool(ctx, s, call, nil)
			if err != nil {
				return "", err // ctx ended: the MCP call was cancelled
			}
			msgs = append(msgs, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{r}})
		}
	}
	// README: end
}

// greeterSession starts a session, recorded in memory, whose one server,
// greeter, runs in process with one tool, greet. done closes it.
func greeterSession(ctx context.Context) (_ *session.Session, done func(), err error) {
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
		// The server is reached over in-memory transports.
		Manager: &manager.Options{Dial: func(ctx context.Context, cfg events.ServerConfig) (mcp.Transport, error) {
			serverSide, clientSide := mcp.NewInMemoryTransports()
			if _, err := srv.Connect(ctx, serverSide, nil); err != nil {
				return nil, err
			}
			return clientSide, nil
		}},
	})
	done = func() {
		if s != nil {
			s.Close(ctx)
		}
		j.Close()
		st.Close()
	}
	if err == nil {
		err = s.WaitReady(ctx)
	}
	if err != nil {
		done()
		return nil, nil, err
	}
	return s, done, nil
}

// callingModel is a fake chat model with native function calling: it
// calls the first tool it is given with {"name":"Ada"}, and once it has a
// tool's response it answers with it.
type callingModel struct{}

func (callingModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	var o llms.CallOptions
	for _, opt := range opts {
		opt(&o)
	}
	if r, ok := msgs[len(msgs)-1].Parts[0].(llms.ToolCallResponse); ok {
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "the tool said: " + r.Content}}}, nil
	}
	call := llms.ToolCall{ID: "call-1", Type: "function",
		FunctionCall: &llms.FunctionCall{Name: o.Tools[0].Function.Name, Arguments: `{"name":"Ada"}`}}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{call}}}}, nil
}

func (m callingModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
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
