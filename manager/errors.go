package manager

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors returned by the manager wrap them with %w, so
// callers match them with [errors.Is].
var (
	// ErrNotConnected: the server has no live connection and no connect in
	// flight. Its message is the text agents see:
	// "MCP server not connected: <name>" (see [NotConnectedError]).
	ErrNotConnected = errors.New("MCP server not connected")
	// ErrUnknownServer: the manager knows no server of that name.
	ErrUnknownServer = errors.New("unknown MCP server")
	// ErrClosed: the manager was closed.
	ErrClosed = errors.New("manager: closed")
	// ErrTimeout: connect + initialize (or tools/list) exceeded the server's
	// timeout, or a tool call its tool timeout.
	ErrTimeout = errors.New("MCP server timed out")
	// ErrInvalidConfig: the server configuration failed validation.
	ErrInvalidConfig = errors.New("invalid MCP server config")
	// ErrDisconnected: the server was disconnected while the operation
	// was in flight.
	ErrDisconnected = errors.New("MCP server disconnected")
	// ErrNotReconnecting: [Manager.ReconnectNow] was asked for a server
	// that is not waiting to reconnect.
	ErrNotReconnecting = errors.New("MCP server not reconnecting")
	// ErrListTooLong: a list had more pages or items than
	// Options.MaxListPages, MaxListTools or MaxSessionTools allow.
	ErrListTooLong = errors.New("MCP server list too long")
)

// Operations named by [ServerError.Op].
const (
	OpValidate   = "validate"
	OpConnect    = "connect"
	OpList       = "list"
	OpCall       = "call"
	OpDisconnect = "disconnect"
)

// ServerError is an error about one server. Op is one of the Op constants.
// Its message never contains a resolved secret: texts that could quote one
// (stderr, transport errors) are scrubbed before they are wrapped.
type ServerError struct {
	Server string
	Op     string
	Err    error
}

// Error returns the message of the underlying error prefixed by nothing
// more than needed: validation and timeout messages already name the
// server, so they are returned as they are.
func (e *ServerError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("MCP server %q: %s failed", e.Server, e.Op)
	}
	return e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *ServerError) Unwrap() error { return e.Err }

// notConnected returns the error of a server without a connection and
// without connect work in flight.
func notConnected(name string) error {
	return &ServerError{Server: name, Op: OpConnect, Err: fmt.Errorf("%w: %s", ErrNotConnected, name)}
}

// scrubbedError carries a message from which secrets were removed while
// keeping the cause for [errors.Is]. The cause's own text is not part of
// the message.
type scrubbedError struct {
	msg   string
	cause error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.cause }
