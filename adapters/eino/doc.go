// Package mcpeino gives the tools of an mcplife session to cloudwego/eino:
// [Tools] returns them as eino tools ([tool.InvokableTool], or
// [tool.EnhancedInvokableTool] for multimodal results) for a react agent
// or a compose graph's ToolsNode, a [Toolset] does the same run after run
// converting only what changed, and [NewClientSession] gives one server of
// the session in the two-method shape eino-ext's MCP tools take.
//
// # Following the session
//
// An eino ToolsNode holds a fixed tool list, and a chat model the tool
// infos it was bound to; both can be replaced per run, which is how these
// tools follow a session whose servers connect late, drop, or change their
// lists: call Tools at each run and give the slice to that run, with
// react.WithTools for the react agent (it sets the chat model's tool infos
// and the ToolsNode's list together), or with compose.WithToolList and
// model.WithTools for a graph of one's own:
//
//	tools := mcpeino.NewToolset(s, nil) // once per session
//	...
//	opts, err := react.WithTools(ctx, tools.Tools()...) // at each run
//	if err != nil { ... }
//	answer, err := agent.Generate(ctx, messages, opts...)
//
// Within a run the list stays as it was at its start. Each tool finds its
// session tool by name when it is called, so it calls the server's
// current connection, and a tool that left the session fails as an
// unknown tool. [UnknownToolsHandler] lets a ToolsNode call a session
// tool that arrived after the run started (with a tool budget, a tool
// the search loaded), which the model can call within the same run.
//
// # Results
//
// The model's JSON arguments go to the server as they are, and the tool's
// input schema goes to [schema.ToolInfo] through eino's jsonschema type
// with every keyword kept (keywords it has no field for travel in its
// Extras); the tool's annotations and output schema are in ToolInfo.Extra.
// A result's text content is the tool's output; its structured content
// follows as JSON unless a text item holds that JSON already. eino's text
// tools cannot carry binary content: images, audio and embedded blobs are
// named (kind, MIME type, size) in the text. With Options.Multimodal they
// are image, audio and file parts of a [schema.ToolResult]; resource
// links and embedded text resources are text parts either way, with the
// MCP item in the part's Extra, and eino passes no text part's Extra to a
// model. The result's own _meta is not carried (an item's is, in Extra).
//
// An isError result is an error of type [*ToolError], which ends an eino
// run as any tool error does; Options.ErrorsAsResults gives its text to
// the model instead. A call that failed on the client side (the server is
// not connected, dropped, or timed out) is an isError result too, its
// ToolError wrapping the manager's error. The run's context goes to the
// MCP call: cancelling it cancels the call on the server, and the tool
// returns the context's error.
package mcpeino
