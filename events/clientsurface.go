package events

import "time"

// Events of the MCP client surface beyond tools: what servers say on their
// own (log notifications) and what they ask the host (elicitation,
// sampling).

// Type strings of the client-surface events. They are part of the stored
// format: never change one.
const (
	TypeServerLog            = "ServerLog"
	TypeElicitationRequested = "ElicitationRequested"
	TypeElicitationAnswered  = "ElicitationAnswered"
	TypeSamplingRequested    = "SamplingRequested"
	TypeSamplingAnswered     = "SamplingAnswered"

	TypeServerMessagesLimited = "ServerMessagesLimited"
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

// ElicitationRequested is recorded when a server asks the user for input
// (elicitation/create). Neither the message nor the schema is recorded:
// Mode is "form" or "url", Fields the number of fields a form asks for.
// The answer follows under the same correlation id.
type ElicitationRequested struct {
	Server string `json:"server"`
	Mode   string `json:"mode"`
	Fields int    `json:"fields,omitempty"`
}

// ElicitationAnswered is recorded when the host answered an elicitation:
// Action is accept, decline or cancel; Fields the number of fields the
// answer holds (their values are not recorded). Error is set when the
// host's callback failed.
type ElicitationAnswered struct {
	Server   string        `json:"server"`
	Action   string        `json:"action,omitempty"`
	Fields   int           `json:"fields,omitempty"`
	Error    string        `json:"error,omitempty"`
	Duration time.Duration `json:"duration"`
}

// SamplingRequested is recorded when a server asks the host's model for a
// completion (sampling/createMessage): how many messages and at most how
// many tokens, without the messages.
type SamplingRequested struct {
	Server    string `json:"server"`
	Messages  int    `json:"messages"`
	MaxTokens int64  `json:"maxTokens"`
}

// SamplingAnswered is recorded when the host answered a sampling request:
// the model that answered and why it stopped, without the answer. Error is
// set when the host's callback failed or refused.
type SamplingAnswered struct {
	Server     string        `json:"server"`
	Model      string        `json:"model,omitempty"`
	StopReason string        `json:"stopReason,omitempty"`
	Error      string        `json:"error,omitempty"`
	Duration   time.Duration `json:"duration"`
}

// ServerMessagesLimited is recorded, at most once a second per
// connection, when the manager answered or dropped messages of a server
// without recording each: Declined counts, by method
// (elicitation/create, sampling/createMessage, roots/list), the requests
// it declined at once because too many of that method were in flight or
// because more elicitation and sampling requests came in a second than it
// records; Ignored counts, by method, the notifications it dropped
// (notifications/resources/updated for a URI the session did not
// subscribe to).
type ServerMessagesLimited struct {
	Server   string         `json:"server"`
	Declined map[string]int `json:"declined,omitempty"`
	Ignored  map[string]int `json:"ignored,omitempty"`
}

func (*ServerMessagesLimited) Type() string         { return TypeServerMessagesLimited }
func (e *ServerMessagesLimited) ServerName() string { return e.Server }

func (*ElicitationRequested) Type() string { return TypeElicitationRequested }
func (*ElicitationAnswered) Type() string  { return TypeElicitationAnswered }
func (*SamplingRequested) Type() string    { return TypeSamplingRequested }
func (*SamplingAnswered) Type() string     { return TypeSamplingAnswered }

func (e *ElicitationRequested) ServerName() string { return e.Server }
func (e *ElicitationAnswered) ServerName() string  { return e.Server }
func (e *SamplingRequested) ServerName() string    { return e.Server }
func (e *SamplingAnswered) ServerName() string     { return e.Server }
