package events

// Events of the MCP client surface beyond tools: what servers say on their
// own (log notifications).

// Type strings of the client-surface events. They are part of the stored
// format: never change one.
const (
	TypeServerLog = "ServerLog"
)

// LogLevel is the severity of a [ServerLog], one of the MCP logging levels
// (RFC 5424 names), lowest first: debug, info, notice, warning, error,
// critical, alert, emergency. A level a server invents is kept as it sent
// it.
type LogLevel string

// The MCP logging levels.
const (
	LogDebug     LogLevel = "debug"
	LogInfo      LogLevel = "info"
	LogNotice    LogLevel = "notice"
	LogWarning   LogLevel = "warning"
	LogError     LogLevel = "error"
	LogCritical  LogLevel = "critical"
	LogAlert     LogLevel = "alert"
	LogEmergency LogLevel = "emergency"
)

// ServerLog is recorded for a log message a server sent
// (notifications/message). Text is the message's data (a string as it is,
// anything else as its JSON), scrubbed of the secrets the connection
// resolved and of credential-like name=value pairs, and cut to a few KiB
// with a marker saying how long it was.
//
// A server that sends more messages than the manager records in a second
// loses the rest of that second's messages; one ServerLog then says how
// many: Dropped is their count, Logger is "mcplife" and Level is warning.
type ServerLog struct {
	Server  string   `json:"server"`
	Level   LogLevel `json:"level"`
	Logger  string   `json:"logger,omitempty"`
	Text    string   `json:"text"`
	Dropped int      `json:"dropped,omitempty"`
}

func (*ServerLog) Type() string { return TypeServerLog }

func (e *ServerLog) ServerName() string { return e.Server }
