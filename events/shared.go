package events

// Events of shared servers: one shared host owns the server processes of
// every agent process of a user, and the hosts attach to it over a local
// socket. The shared host's session records the servers' lifecycle as any
// session does, and who attached; each attached session records its
// connection with [TransportShared] and the instance it was given.

// TransportShared is the transport of a server a session uses through a
// shared host ([ConnectStarted], [ServerConnected]), rather than a process
// of its own.
const TransportShared = "shared"

// Type strings of the shared-server events. They are part of the stored
// format: never change one.
const (
	TypeHostAttached = "HostAttached"
	TypeHostDetached = "HostDetached"
)

// HostAttached is recorded by a shared host when the host process Pid,
// recording session Session, attached to the shared instance Server (the
// instance's name in the shared host's session, which its own
// ServerConnected and ToolsListed carry).
type HostAttached struct {
	Server  string `json:"server"`
	Session string `json:"session"`
	Pid     int    `json:"pid"`
}

// HostDetached is recorded by a shared host when the host of Session
// (process Pid) stopped using the instance Server: it detached, or
// Reason "host gone" when its connection to the shared host ended
// (its calls in flight were cancelled then).
type HostDetached struct {
	Server  string `json:"server"`
	Session string `json:"session"`
	Pid     int    `json:"pid"`
	Reason  string `json:"reason,omitempty"`
}

// Reasons of [HostDetached].
const (
	DetachRequested = "detached"
	DetachHostGone  = "host gone"
)

// ReasonIdle is the reason of the [Disconnected] a shared host records
// when it stopped an instance because its idle period ended with no host
// attached.
const ReasonIdle DisconnectReason = "idle"

func (*HostAttached) Type() string { return TypeHostAttached }
func (*HostDetached) Type() string { return TypeHostDetached }

func (e *HostAttached) ServerName() string { return e.Server }
func (e *HostDetached) ServerName() string { return e.Server }
