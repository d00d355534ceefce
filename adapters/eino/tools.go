package mcpeino

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"

	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/session"
)

// Keys of [schema.ToolInfo.Extra] for an MCP tool; the first three are the
// keys eino-ext's MCP tools use, so code that reads them reads these too.
const (
	ExtraServerName      = "mcp.server_name"       // the server's configured name
	ExtraRawToolName     = "mcp.raw_tool_name"     // the tool's own name on its server
	ExtraExposedToolName = "mcp.exposed_tool_name" // the name the model sees (mcp_<server>_<tool>)
	ExtraAnnotations     = "mcp.annotations"       // the tool's annotations as the server sent them
	ExtraOutputSchema    = "mcp.output_schema"     // the tool's output schema as the server sent it
)

// Options say how the tools of [Tools] present results. The zero value (or
// nil) means text results and isError results as errors.
type Options struct {
	// Multimodal makes each tool a [tool.EnhancedInvokableTool], whose
	// result is a [schema.ToolResult] with one part per content item:
	// images and audio as image and audio parts (base64 data and MIME
	// type), an embedded binary resource as a file part, and everything
	// else as text parts. The ToolsNode turns it into the tool message's
	// UserInputMultiContent, which only some chat models accept: leave it
	// off for a model that takes text tool messages alone. Off, each tool
	// is a [tool.InvokableTool] whose result is text, and binary content
	// is named there (kind, MIME type, size) but not carried.
	Multimodal bool
	// ErrorsAsResults returns the text of an isError result (a tool's own
	// failure, or a call that failed on the client side) as the tool's
	// result instead of a [*ToolError], so the model reads it and the run
	// goes on; an error return ends an eino run. A cancelled context is
	// an error either way.
	ErrorsAsResults bool
}

// Tools returns the session's tools as it holds them now, in the order of
// [session.Session.Tools], as eino tools: [tool.InvokableTool] values, or
// [tool.EnhancedInvokableTool] values with Options.Multimodal. Call it at
// each run to follow the session's changes (a server that connects late,
// one that drops, a re-listed tool list), and give the slice to the run:
// react.WithTools(ctx, tools...) for the react agent, or
// compose.WithToolsNodeOption(compose.WithToolList(tools...)) with the
// chat model's model.WithTools for a graph of one's own. A host that runs
// often keeps a [Toolset] instead, which converts only what changed.
//
// Each tool resolves its session tool by name when it is called, so a
// tool whose server reconnected calls the new connection, and a tool that
// left the session since Tools returned fails as a call to an unknown tool
// ([session.ErrUnknownTool]) instead of reaching a stale server. Its Info
// converts the input schema when first called and returns the same value
// after; treat it as read-only.
//
// The context of a call goes to the MCP call: cancelling it cancels the
// call, and the tool returns the context's error. The tools are safe for
// concurrent use.
func Tools(s *session.Session, opts *Options) []tool.BaseTool {
	return NewToolset(s, opts).Tools()
}

// Toolset follows one session across runs: its Tools returns what [Tools]
// does, and reuses the info of a tool whose definition (description,
// schemas, annotations) is the one it saw last, so a run converts only the
// schemas of tools that are new or changed. It holds the infos of the
// session's current tools alone. It is safe for concurrent use.
type Toolset struct {
	s    *session.Session
	opts Options

	mu    sync.Mutex
	infos map[string]cachedInfo // by tool name
}

type cachedInfo struct {
	def  definition
	info func() (*schema.ToolInfo, error)
}

// definition is what a tool's info is built from.
type definition struct {
	desc, input, output, annotations, server, original string
}

func definitionOf(t session.Tool) definition {
	d := definition{desc: t.Description, input: string(t.InputSchema)}
	if m := t.MCP; m != nil {
		d.output, d.annotations, d.server, d.original = string(m.OutputSchema), string(m.Annotations), m.Server, m.Original
	}
	return d
}

// NewToolset returns a Toolset of s; nil opts mean the zero Options.
func NewToolset(s *session.Session, opts *Options) *Toolset {
	ts := &Toolset{s: s, infos: map[string]cachedInfo{}}
	if opts != nil {
		ts.opts = *opts
	}
	return ts
}

// Tools returns the session's tools as they are now; see [Tools].
func (ts *Toolset) Tools() []tool.BaseTool {
	list := ts.s.Tools()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	infos := make(map[string]cachedInfo, len(list))
	out := make([]tool.BaseTool, len(list))
	for i, t := range list {
		def := definitionOf(t)
		c, ok := ts.infos[t.Name]
		if !ok || c.def != def {
			c = cachedInfo{def: def, info: sync.OnceValues(func() (*schema.ToolInfo, error) { return toolInfo(t) })}
		}
		infos[t.Name] = c
		out[i] = newTool(ts.s, t.Name, c.info, ts.opts)
	}
	ts.infos = infos
	return out
}

// UnknownToolsHandler returns a handler for compose.ToolsNodeConfig's
// UnknownToolsHandler that calls, by name, a session tool that the run's
// tool list does not hold: one that arrived in the session after the run
// started (a late server, a tool a search loaded), which a model may call
// in the same run once a tool result named it. Its result is text, as
// Options.Multimodal off; a name the session does not know either is an
// unknown-tool result ([session.ErrUnknownTool]) under the same
// ErrorsAsResults rule as any other isError result.
func UnknownToolsHandler(s *session.Session, opts *Options) func(ctx context.Context, name, input string) (string, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	return func(ctx context.Context, name, input string) (string, error) {
		res, err := call(ctx, s, name, input)
		if err != nil {
			return "", err
		}
		return textResult(name, res, o.ErrorsAsResults)
	}
}

// invokable is a session tool as a tool.InvokableTool.
type invokable struct {
	s    *session.Session
	name string
	info func() (*schema.ToolInfo, error)
	opts Options
}

// enhanced is a session tool as a tool.EnhancedInvokableTool.
type enhanced struct{ *invokable }

var (
	_ tool.InvokableTool         = (*invokable)(nil)
	_ tool.EnhancedInvokableTool = enhanced{}
)

func newTool(s *session.Session, name string, info func() (*schema.ToolInfo, error), o Options) tool.BaseTool {
	it := &invokable{s: s, name: name, opts: o, info: info}
	if o.Multimodal {
		return enhanced{it}
	}
	return it
}

// Info returns the tool's name, description and input schema.
func (t *invokable) Info(context.Context) (*schema.ToolInfo, error) { return t.info() }

// InvokableRun calls the tool with the model's JSON arguments and returns
// the result's text.
func (t *invokable) InvokableRun(ctx context.Context, args string, _ ...tool.Option) (string, error) {
	res, err := call(ctx, t.s, t.name, args)
	if err != nil {
		return "", err
	}
	return textResult(t.name, res, t.opts.ErrorsAsResults)
}

// InvokableRun calls the tool with the model's JSON arguments and returns
// the result as parts.
func (t enhanced) InvokableRun(ctx context.Context, args *schema.ToolArgument, _ ...tool.Option) (*schema.ToolResult, error) {
	var text string
	if args != nil {
		text = args.Text
	}
	res, err := call(ctx, t.s, t.name, text)
	if err != nil {
		return nil, err
	}
	return partsResult(t.name, res, t.opts.ErrorsAsResults)
}

// call calls the session's current tool name with args. A name the
// session no longer holds is a client-side error result, as a server that
// is gone is.
func call(ctx context.Context, s *session.Session, name, args string) (*manager.CallResult, error) {
	st, ok := s.Tool(name)
	if !ok {
		err := fmt.Errorf("%w: %s", session.ErrUnknownTool, name)
		return &manager.CallResult{Result: errorResult(err), Err: err}, nil
	}
	var raw json.RawMessage
	if args != "" {
		raw = json.RawMessage(args)
	}
	res, err := st.Call(ctx, raw)
	if err != nil {
		return nil, err
	}
	if res == nil || res.Result == nil {
		return nil, fmt.Errorf("mcpeino: %s returned no result", name)
	}
	return res, nil
}

// toolInfo builds the eino tool info of a session tool.
func toolInfo(t session.Tool) (*schema.ToolInfo, error) {
	info := &schema.ToolInfo{Name: t.Name, Desc: t.Description}
	if len(t.InputSchema) > 0 {
		js, err := toSchema(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("mcpeino: tool %s: input schema: %w", t.Name, err)
		}
		info.ParamsOneOf = schema.NewParamsOneOfByJSONSchema(js)
	}
	if m := t.MCP; m != nil {
		info.Extra = map[string]any{
			ExtraServerName:      m.Server,
			ExtraRawToolName:     m.Original,
			ExtraExposedToolName: m.Name,
		}
		if v, ok := decodeRaw(m.Annotations); ok {
			info.Extra[ExtraAnnotations] = v
		}
		if v, ok := decodeRaw(m.OutputSchema); ok {
			info.Extra[ExtraOutputSchema] = v
		}
	}
	return info, nil
}

func decodeRaw(raw json.RawMessage) (any, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false
	}
	v, err := decodeAny(raw)
	return v, err == nil
}
