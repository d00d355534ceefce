package mcpgenkit

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/core/api"
	"github.com/firebase/genkit/go/core/tracing"

	"github.com/mcplife/mcplife/session"
)

// Tools returns the session's active tools as they are now, each as a
// dynamic Genkit tool (registered with no Genkit instance), in the
// session's order. Pass them to one Generate call with [ai.WithTools], or
// use [WithTools]; call Tools again for the next Generate call to follow
// the session's changes.
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
// tool's name, description and input schema, and a run that calls it with
// the Generate call's context and turns its result into a
// [ai.MultipartToolResponse] (see the package documentation).
func Tool(t session.Tool) ai.Tool {
	return &tool{t: t, desc: api.ActionDesc{
		Type:        api.ActionTypeToolV2,
		Key:         api.KeyFromName(api.ActionTypeToolV2, t.Name),
		Name:        t.Name,
		Description: t.Description,
		InputSchema: inputSchema(t.InputSchema),
		// What Genkit's own dynamic multipart tools carry: the
		// multipart flag is how Genkit tells, from the registered
		// action, that the tool returns a whole MultipartToolResponse.
		Metadata: map[string]any{
			"type":        api.ActionTypeToolV2,
			"name":        t.Name,
			"description": t.Description,
			"tool":        map[string]any{"multipart": true},
			"dynamic":     true,
		},
	}}
}

// tool is a session tool as both of Genkit's views of a tool: the
// [ai.Tool] a Generate call is given and the [api.Action] registered for
// it, which Genkit's tool loop looks up by name and runs.
//
// It is its own action, rather than one made by [ai.NewMultipartTool],
// for two reasons. Genkit's constructors infer the JSON schema of the
// response type by reflection for every tool they make (about a quarter
// of a millisecond each), and these tools are made afresh for every
// Generate call. And Genkit's actions check and rewrite a tool's input
// before it runs (null-valued fields dropped; an input its validator
// finds off the schema ends the whole Generate call), where an MCP server
// takes the arguments as the model sent them and answers a wrong one with
// an isError result the model can act on.
//
// A tool holds no state of its own after Tool returns: Register records
// nothing on it, so one value may be given to several Generate calls,
// even at the same time.
type tool struct {
	t    session.Tool
	desc api.ActionDesc
}

var (
	_ ai.Tool    = (*tool)(nil)
	_ api.Action = (*tool)(nil)
)

// Name is the session tool's name.
func (x *tool) Name() string { return x.desc.Name }

// Desc describes the action as Genkit's registry lists it.
func (x *tool) Desc() api.ActionDesc { return x.desc }

// Definition is what a model is told about the tool.
func (x *tool) Definition() *ai.ToolDefinition {
	return &ai.ToolDefinition{
		Name:        x.desc.Name,
		Description: x.desc.Description,
		InputSchema: x.desc.InputSchema,
		Metadata:    map[string]any{"multipart": true},
	}
}

// Register registers the tool's action in r, as Genkit does for the
// dynamic tools of a Generate call in that call's own registry.
func (x *tool) Register(r api.Registry) { r.RegisterAction(x.desc.Key, x) }

// RunJSON runs the tool with a JSON input and returns its
// [ai.MultipartToolResponse] as JSON; Genkit's tool loop calls it.
func (x *tool) RunJSON(ctx context.Context, input json.RawMessage, cb func(context.Context, json.RawMessage) error) (json.RawMessage, error) {
	r, err := x.RunJSONWithTelemetry(ctx, input, cb)
	if err != nil {
		return nil, err
	}
	return r.Result, nil
}

// RunJSONWithTelemetry is RunJSON in a Genkit trace span of its own, as
// Genkit's actions run, with the span's ids. A tool does not stream: cb is
// not called.
func (x *tool) RunJSONWithTelemetry(ctx context.Context, input json.RawMessage, _ func(context.Context, json.RawMessage) error) (*api.ActionRunResult[json.RawMessage], error) {
	var info tracing.TraceInfo
	out, err := tracing.RunInNewSpan(ctx,
		&tracing.SpanMetadata{Name: x.desc.Name, Type: "action", Subtype: string(api.ActionTypeToolV2)},
		input,
		func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
			info = tracing.SpanTraceInfo(ctx)
			resp, err := x.call(ctx, input)
			if err != nil {
				return nil, err
			}
			return json.Marshal(resp)
		})
	return &api.ActionRunResult[json.RawMessage]{Result: out, TraceId: info.TraceID, SpanId: info.SpanID}, err
}

// RunRawMultipart runs the tool with input (any value that encodes to the
// JSON arguments) and returns its whole response.
func (x *tool) RunRawMultipart(ctx context.Context, input any) (*ai.MultipartToolResponse, error) {
	in, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("mcpgenkit: tool %s: encode input: %w", x.desc.Name, err)
	}
	out, err := x.RunJSON(ctx, in, nil)
	if err != nil {
		return nil, err
	}
	var resp ai.MultipartToolResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, fmt.Errorf("mcpgenkit: tool %s: decode response: %w", x.desc.Name, err)
	}
	return &resp, nil
}

// RunRaw runs the tool and returns its response's Output.
func (x *tool) RunRaw(ctx context.Context, input any) (any, error) {
	resp, err := x.RunRawMultipart(ctx, input)
	if err != nil {
		return nil, err
	}
	return resp.Output, nil
}

// Respond and Restart build the parts that answer or re-run an
// interrupted request, which depend on the request alone; these tools
// never interrupt, but a host may stop the loop at their requests
// (ai.WithReturnToolRequests) and answer them this way.
func (x *tool) Respond(req *ai.Part, output any, opts *ai.RespondOptions) *ai.Part {
	return new(ai.ToolDef[any, any]).Respond(req, output, opts)
}

func (x *tool) Restart(req *ai.Part, opts *ai.RestartOptions) *ai.Part {
	return new(ai.ToolDef[any, any]).Restart(req, opts)
}

// call calls the session tool with the JSON arguments Genkit passes (an
// empty object when the model gave none) and turns its result into
// Genkit's response. Its error is the call's cancellation, which ends the
// Generate call; every other failure is an isError result.
func (x *tool) call(ctx context.Context, input json.RawMessage) (*ai.MultipartToolResponse, error) {
	if x.t.Call == nil {
		return nil, fmt.Errorf("mcpgenkit: tool %s has no Call", x.desc.Name)
	}
	args := input
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	res, err := x.t.Call(ctx, args)
	if err != nil {
		return nil, err
	}
	if res == nil {
		return response(nil), nil
	}
	return response(res.Result), nil
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
