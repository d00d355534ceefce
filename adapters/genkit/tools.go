package mcpgenkit

import (
	"encoding/json"
	"fmt"

	"github.com/firebase/genkit/go/ai"

	"github.com/mcplife/mcplife/session"
)

// Tools returns the session's active tools as they are now, each as a
// dynamic Genkit tool (made with [ai.NewMultipartTool], not registered
// with any Genkit instance), in the session's order. Pass them to one
// Generate call with [ai.WithTools], or use [WithTools]; call Tools again
// for the next Generate call to follow the session's changes.
func Tools(s *session.Session) []ai.Tool {
	active := s.ActiveTools()
	out := make([]ai.Tool, len(active))
	for i, t := range active {
		out[i] = Tool(t)
	}
	return out
}

// WithTools is the option that gives one Generate call (or prompt
// execution) the session's active tools as they are when WithTools is
// called, followed by own: Genkit takes a single tools option per call,
// so a host's own tools go here too. Build it for each Generate call.
func WithTools(s *session.Session, own ...ai.ToolRef) ai.CommonGenOption {
	tools := Tools(s)
	refs := make([]ai.ToolRef, 0, len(tools)+len(own))
	for _, t := range tools {
		refs = append(refs, t)
	}
	return ai.WithTools(append(refs, own...)...)
}

// Tool returns one session tool as a dynamic Genkit tool: the session
// tool's name, description and input schema, and a function that calls it
// with the Generate call's context and turns its result into a
// [ai.MultipartToolResponse] (see the package documentation).
func Tool(t session.Tool) ai.Tool {
	return ai.NewMultipartTool(t.Name, t.Description,
		func(tc *ai.ToolContext, input any) (*ai.MultipartToolResponse, error) {
			if t.Call == nil {
				return nil, fmt.Errorf("mcpgenkit: tool %s has no Call", t.Name)
			}
			args := json.RawMessage(`{}`)
			if input != nil {
				b, err := json.Marshal(input)
				if err != nil {
					return nil, fmt.Errorf("mcpgenkit: tool %s: encode input: %w", t.Name, err)
				}
				args = b
			}
			res, err := t.Call(tc.Context, args)
			if err != nil {
				// The call was cancelled or its context expired: the
				// Generate call ends with it.
				return nil, err
			}
			return response(res.Result), nil
		},
		ai.WithInputSchema(inputSchema(t.InputSchema)))
}

// inputSchema decodes a tool's JSON-schema input as Genkit holds schemas;
// a schema that is missing or not an object becomes the empty object
// schema, which MCP tools without arguments mean.
func inputSchema(raw json.RawMessage) map[string]any {
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil || schema == nil {
		return map[string]any{"type": "object"}
	}
	return schema
}
