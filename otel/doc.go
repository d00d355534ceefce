// Package otel turns the lifecycle events mcplife records into
// OpenTelemetry spans and metrics, following the semantic conventions for
// the Model Context Protocol where they apply, and carries the caller's
// trace context into tool calls.
//
// [Observe] subscribes to a journal and makes, for each session, one
// trace whose spans are timed by the events' recorded times:
//
//   - mcplife.session, from SessionStarted to SessionClosed, holding the
//     lifecycle the conventions do not cover as span events: servers
//     discovered, skipped or invalid, reconnects scheduled and given up
//     (the crash-loop breaker), tools served from the cache, logins
//     required, config changes, disconnects;
//   - mcplife.connect <server>, one per connect attempt, with its client
//     span initialize (or server/discover, for protocol 2026-07-28 and
//     later) under it;
//   - mcplife.gate, the startup gate of a connect round, each server's
//     outcome an attribute and an event;
//   - client spans named {mcp.method.name} {target}: tools/call <tool>,
//     tools/list, resources/list, prompts/list, with mcp.method.name,
//     gen_ai.tool.name, gen_ai.operation.name, mcp.protocol.version,
//     network.transport, server.address, server.port and error.type
//     (tool_error for a result with isError, the error's class for a
//     client-side failure).
//
// It records the histograms mcp.client.operation.duration and
// mcp.client.session.duration (seconds, with the conventions' buckets,
// [DurationBuckets]) and the gauge mcplife.servers.connected.
//
// [Replay] makes the same spans from a recorded session; the command
// mcp-audit-otlp exports them over OTLP/HTTP. [CallMeta] is the function
// for manager.Options.CallMeta that puts traceparent and tracestate into
// each tools/call request's _meta.
//
// The spans carry what the recording holds, which is scrubbed of secrets
// before it is stored: no resolved env or header value, no token, no
// tool arguments or results.
//
// Example (the runnable form is the package's Example):
//
//	obs, err := otel.Observe(ctx, j, &otel.Options{TracerProvider: tp, Session: id})
//	if err != nil { ... }
//	defer obs.Close()
//	// ... run the session, close it ...
//	obs.Flush(ctx) // every recorded event is a span now
package otel
