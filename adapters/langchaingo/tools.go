package mcplangchaingo

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tmc/langchaingo/callbacks"
	"github.com/tmc/langchaingo/tools"

	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/session"
)

// Options say how the tools of [Tools] and [CallTool] answer. The zero
// value (or nil) means: results rendered by [ResultText], isError results
// as observations, no callbacks.
type Options struct {
	// ReturnErrors returns a result with isError set (the tool's own
	// failure, a call that failed on the client side, an unknown tool or
	// an input that is not arguments) as a [*ToolError], which ends an
	// executor's run, instead of as an observation the agent reads.
	ReturnErrors bool
	// Render turns a result into the tool's text; nil means [ResultText].
	// It is given every result, isError or not, and must be safe for
	// concurrent use.
	Render func(*mcp.CallToolResult) string
	// Callbacks, when set, is told of each call as langchaingo's own tools
	// tell theirs: HandleToolStart with the input, then HandleToolEnd
	// with the text returned or HandleToolError with the error returned.
	Callbacks callbacks.Handler
}

// Tools returns the session's tools as it holds them now, in the order of
// [session.Session.Tools], as [tools.Tool] values. Call it for each run
// and build the agent with the slice, to follow the session's changes:
//
//	agent := agents.NewOneShotAgent(llm, mcplangchaingo.Tools(s, nil))
//	out, err := chains.Run(ctx, agents.NewExecutor(agent), question)
//
// Each tool's Name is the session's (mcp_<server>_<tool> for an MCP
// tool); its Description is the tool's, followed by a line that says the
// input is a JSON object and gives the input schema. Call reads its input
// as the package doc says, calls the tool the session holds under that
// name at the time, and returns the result as text.
func Tools(s *session.Session, opts *Options) []tools.Tool {
	o := options(opts)
	list := s.Tools()
	out := make([]tools.Tool, len(list))
	for i, t := range list {
		out[i] = &tool{s: s, name: t.Name, desc: describe(t), opts: o}
	}
	return out
}

// tool is a session tool as a tools.Tool.
type tool struct {
	s    *session.Session
	name string
	desc string
	opts Options
}

var _ tools.Tool = (*tool)(nil)

// Name returns the session's name of the tool.
func (t *tool) Name() string { return t.name }

// Description returns the tool's description and how to write its input.
func (t *tool) Description() string { return t.desc }

// Call calls the tool with input, the JSON arguments, and returns the
// result as text. The error is ctx's when ctx ended first, a [*ToolError]
// for an isError result with Options.ReturnErrors, and nil otherwise.
func (t *tool) Call(ctx context.Context, input string) (string, error) {
	return run(ctx, t.s, t.name, input, t.opts)
}

// run is a call as langchaingo sees one: callbacks around the call, and
// the result as text or error.
func run(ctx context.Context, s *session.Session, name, input string, o Options) (string, error) {
	if o.Callbacks != nil {
		o.Callbacks.HandleToolStart(ctx, input)
	}
	out, err := answer(ctx, s, name, input, o)
	if o.Callbacks != nil {
		if err != nil {
			o.Callbacks.HandleToolError(ctx, err)
		} else {
			o.Callbacks.HandleToolEnd(ctx, out)
		}
	}
	return out, err
}

func answer(ctx context.Context, s *session.Session, name, input string, o Options) (string, error) {
	res, err := call(ctx, s, name, input)
	if err != nil {
		return "", err
	}
	render := o.Render
	if render == nil {
		render = ResultText
	}
	if res.Result.IsError && o.ReturnErrors {
		return "", &ToolError{Tool: name, Result: res.Result, Err: res.Err}
	}
	text := render(res.Result)
	if res.Result.IsError && !strings.HasPrefix(text, manager.ErrorPrefix) {
		text = "Error: " + text
	}
	return text, nil
}

// call runs the session tool named name with input read as its
// arguments. The error is ctx's: every other failure is a result with
// IsError set.
func call(ctx context.Context, s *session.Session, name, input string) (*manager.CallResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t, ok := s.Tool(name)
	if !ok {
		return failed(fmt.Errorf("%w: %s", session.ErrUnknownTool, name)), nil
	}
	args, err := arguments(input, t.InputSchema)
	if err != nil {
		return failed(fmt.Errorf("%s: %w", name, err)), nil
	}
	res, err := t.Call(ctx, args)
	if err != nil {
		return nil, err
	}
	if res.Err != nil && ctx.Err() != nil {
		// The call failed because ctx ended: that is the caller's doing,
		// not the tool's failure.
		return nil, ctx.Err()
	}
	return res, nil
}

// failed is the result of a call that failed on the client side, in the
// form the manager gives one.
func failed(err error) *manager.CallResult {
	return &manager.CallResult{
		Result: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: manager.ErrorPrefix + err.Error()}}, IsError: true},
		Err:    err,
	}
}

func options(opts *Options) Options {
	if opts == nil {
		return Options{}
	}
	return *opts
}
