// Package mcplangchaingo gives the tools of an mcplife session to
// tmc/langchaingo, in the two shapes langchaingo knows:
//
//   - [Tools] returns [tools.Tool] values for langchaingo's agents
//     (agents.NewOneShotAgent, agents.NewConversationalAgent,
//     agents.NewOpenAIFunctionsAgent) and its executor.
//   - [LLMTools] returns [llms.Tool] definitions for a model's native
//     function calling (llms.WithTools), with each tool's JSON-schema input
//     intact, and [CallTool] runs the [llms.ToolCall] the model returns
//     against the session and gives the [llms.ToolCallResponse] to send
//     back.
//
// # Input
//
// A [tools.Tool] takes one string. Here it is the tool's arguments as a
// JSON object, and each tool's Description ends with a line that says so
// and gives the tool's input schema, so a ReAct model knows the arguments
// to write after "Action Input:". The input is read as follows, in order:
//
//   - Surrounding whitespace and a Markdown code fence (```json … ```) are
//     removed.
//   - A JSON object is the arguments, as it is.
//   - Otherwise, when the schema has exactly one property: for a string
//     property the input is its value (a JSON string literal is unquoted
//     first, any other text is taken as it is), so "Action Input: hello"
//     reaches an echo tool as {"text":"hello"}; for a property of another
//     type the input must be a JSON value, which becomes the property's
//     value ("3" gives {"n":3}).
//   - Otherwise, when the schema has no properties and requires none, the
//     arguments are {} whatever the input ("None", empty).
//   - Anything else is not called: the tool answers with an error
//     observation that says the input must be a JSON object.
//
// The model's arguments of a [CallTool] call are read the same way (they
// are a JSON object from any model that follows the definition).
//
// # Results
//
// langchaingo's tools return text, and so does [CallTool]
// ([llms.ToolCallResponse] holds a string). A result becomes text by
// [ResultText]: each content item in order, one per line: text as it is;
// an embedded text resource as a "[embedded resource: uri, mime]" line
// followed by its text; images, audio and embedded binary resources as one
// line naming the kind, MIME type and size ("[image: image/png, 1234
// bytes]"); a resource link as one line with its URI, name, title, MIME
// type, size and description. Structured content is appended as compact
// JSON, unless a text item already holds the same JSON value (servers send
// both, the text for clients that read only text). What text cannot carry
// is lost to the model: the bytes of images, audio and binary resources,
// the annotations and _meta of the result and of each item, and a resource
// link's icons. A host that wants them (say, to save images to files and
// name the files) sets [Options.Render]; [ToolError] carries the whole
// result of a failed call.
//
// # Errors and cancellation
//
// langchaingo's own tools answer a failure with text, so that the agent
// can read it and try again: an error returned by a tool ends the
// executor's run. By default a result with isError set is therefore an
// observation: its text, after "Error: " (a call that failed on the client
// side, such as a server that is not connected, already reads "MCP error:
// …", see manager.ErrorPrefix). With [Options.ReturnErrors] it is a
// [*ToolError] instead. A name the session does not hold (any more) is
// such a failure too, wrapping [session.ErrUnknownTool].
//
// The context of Call goes to the MCP call: cancelling it (the context of
// chains.Run, say) cancels the call, and the tool returns the context's
// error, which ends the run.
//
// # Following the session
//
// A session's tools change while it runs: a server that connects after
// the startup gate adds its tools, a server that drops takes them away, a
// server that sends list_changed is listed again ([session.Session.Changes]
// signals each change). [Tools] and [LLMTools] return the tools the
// session holds at the call, and langchaingo's agents and executor take a
// fixed slice: build the agent for each run (it is cheap; the MRKL
// agent's prompt lists the tools it was built with) and pass
// LLMTools(s) to each GenerateContent. Each tool finds its session tool by
// name when it is called, so a tool whose server reconnected calls the new
// connection, and a tool that left the session fails as an unknown tool
// instead of reaching a stale server. An agent that must live across
// changes can run on a session with session.ToolsCallTool: its two tools
// (list, call by name) never change and reach every tool the session holds
// at each call.
//
// Everything here is safe for concurrent use.
package mcplangchaingo
