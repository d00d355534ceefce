package events

import "time"

// Events of the resilience lifecycle: reconnects, health, live config and
// the processes a host leaves behind.

// Type strings of the resilience events. They are part of the stored
// format: never change one.
const (
	TypeReconnectScheduled = "ReconnectScheduled"
	TypeReconnectGaveUp    = "ReconnectGaveUp"
	TypeHostResumed        = "HostResumed"
	TypeConfigChanged      = "ConfigChanged"
	TypeProcessesSeen      = "ProcessesSeen"
	TypeSessionAbandoned   = "SessionAbandoned"
	TypeOrphansReaped      = "OrphansReaped"
	TypeRecordingGap       = "RecordingGap"
)

// Reasons of [Disconnected] for health checks and config edits (the others
// are beside [DisconnectReason]).
const (
	// ReasonUnresponsive: the server did not answer a health check.
	ReasonUnresponsive DisconnectReason = "unresponsive"
	// ReasonConfigChanged: a config edit removed the server or changed
	// its config ([ConfigChanged]).
	ReasonConfigChanged DisconnectReason = "config changed"
)

// ReconnectScheduled is recorded after an unrequested [Disconnected] (or a
// failed reconnect attempt) when another attempt will follow after DelayMs.
// Attempt is the number the next [ConnectStarted] will carry; Cause is the
// reason of the drop or the error of the failed attempt.
type ReconnectScheduled struct {
	Server  string `json:"server"`
	Attempt int    `json:"attempt"`
	DelayMs int64  `json:"delayMs"`
	Cause   string `json:"cause"`
}

// ReconnectGaveUp is recorded when the crash-loop breaker stopped
// reconnecting a server: Attempts failed attempts within the breaker's
// window. The server's status is failed until an explicit connect, a
// reload or a config change.
type ReconnectGaveUp struct {
	Server    string `json:"server"`
	Attempts  int    `json:"attempts"`
	LastError string `json:"lastError"`
}

// HostResumed is recorded when the wall clock jumped far past the
// monotonic clock: the host slept for about SleptMs. Every remote server
// is health-checked at once after it.
type HostResumed struct {
	SleptMs int64 `json:"sleptMs"`
}

// ConfigChanged is recorded when a watched config file changed, before
// the difference is applied: Added, Changed and Removed name the servers
// (dis)connected because of it. Error holds a discovery error that kept
// the running servers as they were.
type ConfigChanged struct {
	Paths   []string `json:"paths"`
	Added   []string `json:"added,omitempty"`
	Changed []string `json:"changed,omitempty"`
	Removed []string `json:"removed,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// ProcessRef names one process: its pid and its start time in clock ticks
// since boot (0 when unknown), so a reused pid is never taken for it.
type ProcessRef struct {
	Pid       int    `json:"pid"`
	StartTime uint64 `json:"startTime,omitempty"`
}

// ProcessesSeen is recorded when a stdio server's descendants were first
// seen, at connect and at each health check, so a later process can reap
// them if this host dies without tearing the server down.
type ProcessesSeen struct {
	Server string       `json:"server"`
	Pids   []ProcessRef `json:"pids"`
}

// SessionAbandoned is appended to a session's stream by a later session
// (DetectedBy) that found it open with no live host: the host was killed.
type SessionAbandoned struct {
	Session    string `json:"session"`
	DetectedBy string `json:"detectedBy"`
}

// OrphansReaped is appended after [SessionAbandoned]: Pids are the
// processes of the abandoned session that were still running as the
// same processes and were killed.
type OrphansReaped struct {
	Session string       `json:"session"`
	Pids    []ProcessRef `json:"pids"`
}

// RecordingGap is recorded in a session's stream where events of the
// session could not be stored: the store was unavailable for longer than
// the journal could hold the session's events, or a waited-for append
// failed while it was. Dropped events, recorded between From and To (the
// times of the first and the last), are missing at this point of the
// stream. The later events of a tool call whose ToolCallStarted is among
// them are not stored either (those that come after the gap was recorded
// are not counted), so the stream never holds a ToolCallFinished without
// its start; a call open at the gap may have finished inside it.
type RecordingGap struct {
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	Dropped int       `json:"dropped"`
}

func (*ReconnectScheduled) Type() string { return TypeReconnectScheduled }
func (*ReconnectGaveUp) Type() string    { return TypeReconnectGaveUp }
func (*HostResumed) Type() string        { return TypeHostResumed }
func (*ConfigChanged) Type() string      { return TypeConfigChanged }
func (*ProcessesSeen) Type() string      { return TypeProcessesSeen }
func (*SessionAbandoned) Type() string   { return TypeSessionAbandoned }
func (*OrphansReaped) Type() string      { return TypeOrphansReaped }
func (*RecordingGap) Type() string       { return TypeRecordingGap }

func (e *ReconnectScheduled) ServerName() string { return e.Server }
func (e *ReconnectGaveUp) ServerName() string    { return e.Server }
func (e *ProcessesSeen) ServerName() string      { return e.Server }
