package otel

import (
	"net"
	"net/url"
	"strconv"

	"go.opentelemetry.io/otel/attribute"

	"github.com/mcplife/mcplife/events"
)

// Attribute keys of the MCP semantic conventions and of the general ones
// they use.
const (
	KeyMethodName       = attribute.Key("mcp.method.name")
	KeyProtocolVersion  = attribute.Key("mcp.protocol.version")
	KeySessionID        = attribute.Key("mcp.session.id")
	KeyResourceURI      = attribute.Key("mcp.resource.uri")
	KeyToolName         = attribute.Key("gen_ai.tool.name")
	KeyPromptName       = attribute.Key("gen_ai.prompt.name")
	KeyOperationName    = attribute.Key("gen_ai.operation.name")
	KeyErrorType        = attribute.Key("error.type")
	KeyNetworkTransport = attribute.Key("network.transport")
	KeyServerAddress    = attribute.Key("server.address")
	KeyServerPort       = attribute.Key("server.port")
	KeyRequestID        = attribute.Key("jsonrpc.request.id")
)

// Attribute keys of what the conventions do not cover: mcplife's own
// lifecycle.
const (
	KeySession        = attribute.Key("mcplife.session.id")
	KeyServer         = attribute.Key("mcplife.server.name")
	KeyTransport      = attribute.Key("mcplife.server.transport")
	KeyAttempt        = attribute.Key("mcplife.connect.attempt")
	KeyRound          = attribute.Key("mcplife.connect.round")
	KeyOutcome        = attribute.Key("mcplife.outcome")
	KeyExposedName    = attribute.Key("mcplife.tool.exposed_name")
	KeyDeferred       = attribute.Key("mcplife.tool.deferred")
	KeyRetried        = attribute.Key("mcplife.tool.retried")
	KeyOutputBytes    = attribute.Key("mcplife.tool.output_bytes")
	KeyTruncated      = attribute.Key("mcplife.tool.truncated")
	KeyListCause      = attribute.Key("mcplife.list.cause")
	KeyListCount      = attribute.Key("mcplife.list.count")
	KeyGateBudget     = attribute.Key("mcplife.gate.budget_ms")
	KeyUnfinished     = attribute.Key("mcplife.unfinished")
	KeyPartial        = attribute.Key("mcplife.session.partial")
	KeyReason         = attribute.Key("mcplife.reason")
	KeyError          = attribute.Key("mcplife.error")
	KeyDelayMs        = attribute.Key("mcplife.reconnect.delay_ms")
	KeyBreakerTripped = attribute.Key("mcplife.breaker.attempts")
	KeyCacheAgeMs     = attribute.Key("mcplife.cache.age_ms")
	KeyReconnecting   = attribute.Key("mcplife.reconnecting")
)

// Values of the well-known attributes.
const (
	// ErrorToolError is the error.type of a call whose result has isError
	// set by the tool itself.
	ErrorToolError = "tool_error"
	// ErrorTimeout, ErrorCancelled, ErrorDisconnected, ErrorNotConnected
	// and ErrorNeedsAuth are the error.type of calls, lists and connects
	// that failed on the client's side; ErrorOther is any other failure.
	ErrorTimeout      = "timeout"
	ErrorCancelled    = "cancelled"
	ErrorDisconnected = "disconnected"
	ErrorNotConnected = "not_connected"
	ErrorNeedsAuth    = "needs_auth"
	ErrorOther        = "_OTHER"
)

// Span names and event names of mcplife's own lifecycle.
const (
	SpanSession = "mcplife.session"
	SpanConnect = "mcplife.connect"
	SpanGate    = "mcplife.gate"
	SpanReload  = "mcplife.reload"
)

// networkTransport maps a server's transport to network.transport: a
// stdio server speaks over pipes, the remote ones over TCP.
func networkTransport(transport string) string {
	switch transport {
	case "":
		return ""
	case events.TransportStdio:
		return "pipe"
	default:
		return "tcp"
	}
}

// hostPort returns the host and port of a (redacted) server URL; the port
// is the scheme's default when the URL names none, 0 when unknown.
func hostPort(raw string) (string, int) {
	if raw == "" {
		return "", 0
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", 0
	}
	host := u.Hostname()
	port, _ := strconv.Atoi(u.Port())
	if port == 0 {
		switch u.Scheme {
		case "https":
			port = 443
		case "http":
			port = 80
		}
	}
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	}
	return host, port
}
