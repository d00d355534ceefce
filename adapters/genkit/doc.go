// Package mcpgenkit gives a mcplife session's tools to Firebase Genkit (Go)
// as Genkit's own [ai.Tool] values, so a Genkit Generate call, prompt or
// flow calls MCP servers through the session: its connections, startup
// gate, reconnects, recording and tool budget, in place of Genkit's MCP
// plugin, which connects its servers one after another, without a
// context, when its host is made, and leaves out a server that fails.
//
//	resp, err := genkit.Generate(ctx, g,
//		ai.WithModel(m),
//		ai.WithPrompt("Greet Ada."),
//		mcpgenkit.WithTools(s), // the session's tools as they are now
//	)
//
// # Refreshes
//
// Genkit resolves the tools of a Generate call once, when the call starts,
// and keeps them for every turn of its tool loop; it has no hook that adds
// or removes a tool during a call, and a tool registered with a Genkit
// instance stays registered for the instance's lifetime. The tools given
// here are therefore dynamic (unregistered) tools, built afresh from the
// session on each call of [Tools] or [WithTools]: Genkit registers them in
// the Generate call's own child registry, which ends with the call. A host
// follows the session by building them for each Generate call (each user
// turn); a server that connected late, a re-listed server's new tools and
// the tools a tool search loaded appear in the next call, and tools that
// went are gone from it. A tool that goes away during a call still answers
// when called: the manager reports that its server is gone (or the server
// that it no longer has the tool) as an isError result.
//
// Sessions with a tool budget load the tools their search tool finds for
// the next turn; under Genkit that is the next Generate call, since the
// loop of one call keeps its tool set. A host that wants the tools it
// finds callable within one call uses the session's ToolsCallTool mode,
// whose two tools never change.
//
// The tools follow the session's active set ([session.Session.ActiveTools]):
// every tool of the session unless the host narrowed it with SetActive.
//
// # Arguments and results
//
// A tool's definition carries the session tool's name, description and
// input schema, unchanged, as a JSON object (a schema that is not one
// becomes {"type":"object"}). The model's input reaches the server as the
// model sent it (no input at all becomes {}): the tools are actions of
// their own rather than ones Genkit's constructors make, which would check
// the input with Genkit's validator, drop its null-valued fields and end
// the whole Generate call on an input off the schema. The server checks
// its arguments and answers a wrong one with an isError result, which the
// model reads and can act on.
//
// A result becomes Genkit's [ai.MultipartToolResponse]: its Output is the
// JSON value a model reads, its Content the media parts a model plugin
// may forward beside it.
//
//   - A result of text alone: Output is the text (items joined by a blank
//     line).
//   - Structured content (CallToolResult.StructuredContent), with no text
//     or only text that is its JSON serialization: Output is the
//     structured content.
//   - Anything else (text beside structured content it does not
//     serialize, resource links, embedded resources): Output is an object
//     with "text", "structuredContent" and "content" (the items that are
//     neither text nor media, each in its MCP wire form; an embedded
//     blob's entry without its bytes), the empty ones left out.
//   - An isError result, the server's or one the manager made for a
//     client-side failure (not connected, dropped, timed out): Output is
//     {"error": <text>} (with "structuredContent" and "content" when the
//     result has them) and the tool returns no Go error, so the loop goes
//     on and the model sees the error. This is what Genkit's MCP plugin
//     for JavaScript does; a tool's Go error would end the whole Generate
//     call.
//   - Images, audio and embedded blobs: media parts with data: URLs in
//     Content, their annotations and _meta in the part's metadata.
//
// What Genkit cannot carry: an error flag on a tool response (models see
// the "error" object, Anthropic's tool_result is sent with is_error
// false), the result's own _meta, and the annotations of text items.
// Whether a model sees the media parts is up to its plugin: googlegenai
// forwards them with the function response, the Anthropic and
// OpenAI-compatible plugins send Output alone. A tool's output schema is
// not given to Genkit, since Output is the structured content only when
// the result is that alone.
//
// # Cancellation
//
// A tool runs with the context of the Generate call that called it, so
// cancelling that context cancels the MCP call (the server is sent
// notifications/cancelled) and the tool returns the context's error,
// which ends the Generate call. Genkit reports it in an error of its own
// that holds the cause's text without wrapping it: check the context's
// Err to tell a cancellation.
//
// # Tracing and concurrency
//
// Each call runs in a Genkit trace span of its own, as Genkit's tools do
// (Genkit's per-action metrics are not recorded for them; mcplife records
// every call). A tool value holds no state once made: one [WithTools]
// option or [Tools] slice may serve several Generate calls, also at the
// same time.
package mcpgenkit
