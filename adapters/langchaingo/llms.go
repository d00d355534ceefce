package mcplangchaingo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/tmc/langchaingo/llms"

	"github.com/mcplife/mcplife/session"
)

// LLMTools returns the session's tools as it holds them now, in the order
// of [session.Session.Tools], as function definitions for a model's native
// function calling (llms.WithTools). Call it for each GenerateContent to
// follow the session's changes.
//
// Each definition has the session's name and the tool's own description,
// and its Parameters are the tool's input schema as the server sent it,
// decoded into a map[string]any (the form every langchaingo provider
// takes), its numbers as json.Number, so a provider that encodes the map
// writes each number as the session's schema has it. Two things are
// filled in, neither of which changes what the schema accepts: a schema
// that is missing or not a JSON object becomes {"type":"object"}, and an
// object schema without "properties" gets an empty one, which some
// providers (googleai) require.
func LLMTools(s *session.Session) []llms.Tool {
	list := s.Tools()
	out := make([]llms.Tool, len(list))
	for i, t := range list {
		out[i] = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
			Name:        t.Name,
			Description: t.Description,
			Parameters:  parameters(t.InputSchema),
		}}
	}
	return out
}

// parameters is an input schema as the Parameters of a definition.
func parameters(schema json.RawMessage) map[string]any {
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(schema))
	d.UseNumber()
	if len(bytes.TrimSpace(schema)) == 0 || d.Decode(&m) != nil || m == nil {
		m = map[string]any{"type": "object"}
	}
	if m["type"] == "object" {
		if _, ok := m["properties"]; !ok {
			m["properties"] = map[string]any{}
		}
	}
	return m
}

// errNoFunction is the error of a tool call that names no function.
var errNoFunction = errors.New("mcplangchaingo: tool call without a function")

// CallTool runs a tool call the model returned (a ContentChoice's
// ToolCalls) against the session: the session tool named by the call's
// function, with the function's arguments, read as the package doc says.
// It returns the response to send back to the model in a message of role
// tool:
//
//	llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{resp}}
//
// Its Content is the result as text, with the same rules and options as
// a tool of [Tools] (an isError result is a response starting "Error: ",
// or a [*ToolError] with Options.ReturnErrors); its ToolCallID and Name
// are the call's. The error is ctx's when ctx ended first (the MCP call is
// cancelled), a [*ToolError], or an error for a call without a function.
func CallTool(ctx context.Context, s *session.Session, call llms.ToolCall, opts *Options) (llms.ToolCallResponse, error) {
	if call.FunctionCall == nil {
		return llms.ToolCallResponse{}, errNoFunction
	}
	name := call.FunctionCall.Name
	out, err := run(ctx, s, name, call.FunctionCall.Arguments, options(opts))
	if err != nil {
		return llms.ToolCallResponse{}, err
	}
	return llms.ToolCallResponse{ToolCallID: call.ID, Name: name, Content: out}, nil
}
