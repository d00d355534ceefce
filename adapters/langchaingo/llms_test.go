package mcplangchaingo_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"

	mcplangchaingo "github.com/mcplife/mcplife/adapters/langchaingo"
	"github.com/mcplife/mcplife/session"
)

// langchaingo's OpenAI functions agent, with a model that calls the tool
// natively: whether the model gives the arguments as the object itself or
// wrapped in the agent's own "__arg1" parameter, the tool gets them.
func TestOpenAIFunctionsAgent(t *testing.T) {
	s := startSession(t, map[string]fixture{"demo": {srv: echoServer()}}, nil)
	ready(t, s)
	ctx := context.Background()
	for _, tc := range []struct{ args, want string }{
		{`{"text":"direct"}`, "direct"},
		{`{"__arg1":"{\"text\":\"wrapped\"}"}`, "wrapped"},
		{`{"__arg1":"plain"}`, "plain"},
	} {
		m := &toolCallModel{tool: "mcp_demo_echo", args: tc.args}
		agent := agents.NewOpenAIFunctionsAgent(m, mcplangchaingo.Tools(s, nil))
		out, err := chains.Run(ctx, agents.NewExecutor(agent, agents.WithMaxIterations(3)), "Echo it.")
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		if out != tc.want {
			t.Errorf("%s: got %q, want %q", tc.args, out, tc.want)
		}
		if len(m.calls) != 2 {
			t.Errorf("%s: the model was called %d times, want 2", tc.args, len(m.calls))
		}
	}
}

// A loop of one's own over native function calling: the model is given
// LLMTools, with each input schema as the server sent it, calls a tool,
// CallTool runs the call, and the model sees the response.
func TestNativeFunctionCalling(t *testing.T) {
	srv := echoServer()
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","maximum":100,"description":"how many"}},"required":["n"],"$defs":{"x":{"type":"string"}}}`)
	srv.AddTool(&mcp.Tool{Name: "count", Description: "Counts.", InputSchema: schema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(string(req.Params.Arguments)), nil
		})
	srv.AddTool(&mcp.Tool{Name: "noargs", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("done"), nil
		})
	s := startSession(t, map[string]fixture{"demo": {srv: srv}}, nil)
	ready(t, s)
	ctx := context.Background()

	defs := mcplangchaingo.LLMTools(s)
	byName := map[string]llms.Tool{}
	for _, d := range defs {
		if d.Type != "function" {
			t.Fatalf("definition of type %q", d.Type)
		}
		byName[d.Function.Name] = d
	}
	count, ok := byName["mcp_demo_count"]
	if !ok {
		t.Fatalf("definitions %v", byName)
	}
	if count.Function.Description != "Counts." {
		t.Errorf("description %q", count.Function.Description)
	}
	got, err := json.Marshal(count.Function.Parameters)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, got, schema) {
		t.Errorf("parameters %s, want the schema as the server sent it: %s", got, schema)
	}
	noargs, _ := json.Marshal(byName["mcp_demo_noargs"].Function.Parameters)
	if !jsonEqual(t, noargs, []byte(`{"type":"object","properties":{}}`)) {
		t.Errorf("parameters of a tool without properties: %s", noargs)
	}

	m := &toolCallModel{tool: "mcp_demo_count", args: `{"n":3}`}
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Count to three.")}
	var answer string
	for turn := 0; turn < 3 && answer == ""; turn++ {
		resp, err := m.GenerateContent(ctx, msgs, llms.WithTools(mcplangchaingo.LLMTools(s)))
		if err != nil {
			t.Fatal(err)
		}
		choice := resp.Choices[0]
		if len(choice.ToolCalls) == 0 {
			answer = choice.Content
			break
		}
		for _, call := range choice.ToolCalls {
			msgs = append(msgs, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{call}})
			r, err := mcplangchaingo.CallTool(ctx, s, call, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.ToolCallID != call.ID || r.Name != "mcp_demo_count" {
				t.Errorf("response %+v to call %+v", r, call)
			}
			msgs = append(msgs, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{r}})
		}
	}
	if answer != `{"n":3}` {
		t.Fatalf("the model answered %q", answer)
	}
	if len(m.calls[0].Tools) != len(defs) {
		t.Errorf("the model was given %d tools, want %d", len(m.calls[0].Tools), len(defs))
	}
}

// CallTool follows the rules of the tools: a cancelled context is the
// call's error, an isError result is a response or, with ReturnErrors, a
// *ToolError, and a name the session does not hold is an unknown tool.
func TestCallToolErrors(t *testing.T) {
	s := startSession(t, map[string]fixture{"calc": {srv: isErrorServer()}}, nil)
	ready(t, s)
	call := llms.ToolCall{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "mcp_calc_divide", Arguments: `{"a":1,"b":0}`}}

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := mcplangchaingo.CallTool(cancelled, s, call, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled context: %v", err)
	}

	ctx := context.Background()
	r, err := mcplangchaingo.CallTool(ctx, s, call, nil)
	if err != nil || r.Content != "Error: division by zero" {
		t.Fatalf("an isError result: %+v, %v", r, err)
	}
	var te *mcplangchaingo.ToolError
	if _, err := mcplangchaingo.CallTool(ctx, s, call, &mcplangchaingo.Options{ReturnErrors: true}); !errors.As(err, &te) || te.Tool != "mcp_calc_divide" {
		t.Fatalf("an isError result with ReturnErrors: %v", err)
	}

	unknown := llms.ToolCall{ID: "c2", FunctionCall: &llms.FunctionCall{Name: "mcp_calc_nothing", Arguments: "{}"}}
	if _, err := mcplangchaingo.CallTool(ctx, s, unknown, &mcplangchaingo.Options{ReturnErrors: true}); !errors.Is(err, session.ErrUnknownTool) {
		t.Fatalf("an unknown tool: %v", err)
	}
	if _, err := mcplangchaingo.CallTool(ctx, s, llms.ToolCall{ID: "c3"}, nil); err == nil {
		t.Fatal("a call without a function: no error")
	}
}
