package events

import (
	"encoding/json"
	"time"
)

// Event is implemented by every lifecycle event.
type Event interface {
	// Type returns the stable type string recorded in the envelope.
	Type() string
}

// ServerEvent is implemented by events about one server.
type ServerEvent interface {
	Event
	ServerName() string
}

// Type strings. They are part of the stored format: never change one.
const (
	TypeSessionStarted     = "SessionStarted"
	TypeSessionClosed      = "SessionClosed"
	TypeDiscoveryFailed    = "DiscoveryFailed"
	TypeServerDiscovered   = "ServerDiscovered"
	TypeServerSkipped      = "ServerSkipped"
	TypeServerInvalid      = "ServerInvalid"
	TypeConnectStarted     = "ConnectStarted"
	TypeServerConnected    = "ServerConnected"
	TypeConnectFailed      = "ConnectFailed"
	TypeToolsListed        = "ToolsListed"
	TypeToolsListFailed    = "ToolsListFailed"
	TypeStartupGateElapsed = "StartupGateElapsed"
	TypeCachedToolsServed  = "CachedToolsServed"
	TypeToolListChanged    = "ToolListChanged"
	TypeToolCallStarted    = "ToolCallStarted"
	TypeToolCallFinished   = "ToolCallFinished"
	TypeDisconnected       = "Disconnected"
	TypeReloadRequested    = "ReloadRequested"
	TypeReloadCompleted    = "ReloadCompleted"
	TypeToolsActivated     = "ToolsActivated"
)

// SkipReason says why [ServerSkipped] (or [ServerInvalid]) left a server
// out.
type SkipReason string

// Skip reasons of [ServerSkipped].
const (
	SkipShadowed        SkipReason = "shadowed"
	SkipDisabled        SkipReason = "disabled"
	SkipProjectDisabled SkipReason = "project-disabled" // recorded by earlier versions
	SkipExa             SkipReason = "exa"
	SkipInvalid         SkipReason = "invalid"
)

// ListCause says why a [ToolsListed] list was taken.
type ListCause string

// Causes of [ToolsListed].
const (
	CauseInitial     ListCause = "initial"
	CauseLate        ListCause = "late"
	CauseListChanged ListCause = "list-changed"
	CauseRefresh     ListCause = "refresh"
	CauseReconnect   ListCause = "reconnect"
	// CauseCache: resources or prompts of a server still connecting,
	// served at the startup gate from a list recorded earlier, as
	// [CachedToolsServed] serves tools; or the tools of a connection to a
	// server of protocol 2026-07-28 or later taken from a list recorded
	// earlier that is still fresh by its ttlMs, instead of a tools/list.
	// Such a list repeats an earlier listing: the tool cache does not
	// take it as a new one.
	CauseCache ListCause = "cache"
)

// Outcome is what a startup gate decided for one server.
type Outcome string

// Gate outcomes of [StartupGateElapsed], per server.
const (
	OutcomeReady    Outcome = "ready"
	OutcomeFailed   Outcome = "failed"
	OutcomeDeferred Outcome = "deferred"
	OutcomeAwaited  Outcome = "awaited"
)

// DisconnectReason says why a connection ended ([Disconnected]).
type DisconnectReason string

// Reasons of [Disconnected].
const (
	ReasonRequested       DisconnectReason = "requested"
	ReasonReload          DisconnectReason = "reload"
	ReasonTransportClosed DisconnectReason = "transport closed"
	ReasonProcessExited   DisconnectReason = "process exited"
	ReasonError           DisconnectReason = "error"
)

// Chosen reports whether a [Disconnected] of this reason is one the
// session chose (requested, reload, config changed, idle), rather than a
// connection that ended on its own: no reconnect follows it and it is no
// fault of the server.
func (r DisconnectReason) Chosen() bool {
	switch r {
	case ReasonRequested, ReasonReload, ReasonConfigChanged, ReasonIdle:
		return true
	}
	return false
}

// ActivationCause says who loaded tools into a session ([ToolsActivated]).
type ActivationCause string

// Causes of [ToolsActivated].
const (
	// ActivatedBySearch: the session's search tool found the tools and
	// loaded them for the agent's next turn.
	ActivatedBySearch ActivationCause = "search"
	// ActivatedByHost: the host loaded them by name (an explicit call, a
	// tool call by name).
	ActivatedByHost ActivationCause = "host"
)

// SessionStarted is recorded when a runtime session begins.
type SessionStarted struct {
	Cwd     string            `json:"cwd"`
	Gate    time.Duration     `json:"gate"`
	Options map[string]string `json:"options,omitempty"`
	// Host is the process that runs the session, so that a later process
	// can tell that the session was abandoned: its host is gone (the pid
	// is free or names a process with another start time) and it never
	// recorded [SessionClosed]. Nil in sessions recorded without it.
	Host *ProcessRef `json:"host,omitempty"`
	// PidNamespace is the host's PID namespace (see [PidNamespace]), in
	// which Host's pid means something: a process of another namespace
	// (another container) cannot look the host up, so it never takes the
	// session for abandoned. 0 when unknown.
	PidNamespace uint64 `json:"pidNamespace,omitempty"`
}

// SessionClosed is recorded when a runtime session ends.
type SessionClosed struct {
	Reason string `json:"reason,omitempty"`
}

// DiscoveryFailed is recorded when loading configurations failed as a whole.
type DiscoveryFailed struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// ServerDiscovered is recorded when a usable server configuration was found.
// Config is redacted (see [ServerConfig.Redact]); ConfigHash is the hash of
// the unredacted, unresolved configuration.
type ServerDiscovered struct {
	Server     string       `json:"server"`
	Source     SourceMeta   `json:"source"`
	Transport  string       `json:"transport"`
	ConfigHash string       `json:"configHash"`
	Config     ServerConfig `json:"config"`
}

// ServerSkipped is recorded when a configuration was found but will not be
// connected. Reason is one of the Skip constants.
type ServerSkipped struct {
	Server string     `json:"server"`
	Reason SkipReason `json:"reason"`
	Detail string     `json:"detail,omitempty"`
	Source SourceMeta `json:"source"`
}

// ServerInvalid is recorded when a configuration failed validation.
type ServerInvalid struct {
	Server string     `json:"server"`
	Error  string     `json:"error"`
	Source SourceMeta `json:"source"`
}

// ConnectStarted is recorded when a connection attempt begins. Round names
// the ConnectServers call (see [StartupGateElapsed]).
type ConnectStarted struct {
	Server    string `json:"server"`
	Transport string `json:"transport"`
	Attempt   int    `json:"attempt"`
	Round     int64  `json:"round"`
}

// ServerConnected is recorded when initialize finished.
type ServerConnected struct {
	Server string `json:"server"`
	// Pid, Pgid and StartTime identify a stdio server's process (StartTime
	// in clock ticks since boot, 0 when unknown), so a later process can
	// reap it if this host dies without tearing it down.
	Pid             int             `json:"pid,omitempty"`
	Pgid            int             `json:"pgid,omitempty"`
	StartTime       uint64          `json:"startTime,omitempty"`
	PeerName        string          `json:"peerName,omitempty"`
	PeerVersion     string          `json:"peerVersion,omitempty"`
	ProtocolVersion string          `json:"protocolVersion,omitempty"`
	Capabilities    json.RawMessage `json:"capabilities,omitempty"`
	Instructions    string          `json:"instructions,omitempty"`
	Duration        time.Duration   `json:"duration"`
	// Transport and SharedInstance are set only for a server the
	// session asked to share: Transport "shared" with the shared host's
	// instance id, or "stdio" when no shared host could be used and the
	// session ran the server itself. Empty otherwise (the transport is
	// the ConnectStarted's).
	Transport      string `json:"transport,omitempty"`
	SharedInstance string `json:"sharedInstance,omitempty"`
}

// ConnectFailed is recorded when connect or initialize failed or timed out.
type ConnectFailed struct {
	Server   string        `json:"server"`
	Error    string        `json:"error"`
	Duration time.Duration `json:"duration"`
	TimedOut bool          `json:"timedOut,omitempty"`
}

// ToolDef is one tool definition as the server sent it.
type ToolDef struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	// Icons is the tool's icons array as the server sent it; nil when it
	// sent none, so lists recorded before icons existed hash as before.
	Icons json.RawMessage `json:"icons,omitempty"`
}

// ToolsListed is recorded when a tools/list (all pages) finished, or
// when a connection took its tools from a cached list still fresh by its
// ttlMs (Cause "cache", CacheAge the list's age then, Duration zero).
// ConfigHash identifies the configuration the list belongs to, so the tool
// cache can be keyed by server and hash.
type ToolsListed struct {
	Server     string        `json:"server"`
	ConfigHash string        `json:"configHash"`
	Tools      []ToolDef     `json:"tools"`
	ToolsHash  string        `json:"toolsHash"`
	Count      int           `json:"count"`
	Duration   time.Duration `json:"duration"`
	Cause      ListCause     `json:"cause"`
	CacheAge   time.Duration `json:"cacheAge,omitempty"`
	CacheHints
}

// ToolsListFailed is recorded when tools/list failed.
type ToolsListFailed struct {
	Server   string        `json:"server"`
	Error    string        `json:"error"`
	Duration time.Duration `json:"duration"`
}

// StartupGateElapsed is recorded once per connect round when the gate
// returned. Outcomes maps each server of the round to one of the Outcome
// constants.
type StartupGateElapsed struct {
	Round    int64              `json:"round"`
	Gate     time.Duration      `json:"gate"`
	Elapsed  time.Duration      `json:"elapsed"`
	Outcomes map[string]Outcome `json:"outcomes"`
}

// CachedToolsServed is recorded when deferred tools were built from the
// tool cache for a server still pending at the gate.
type CachedToolsServed struct {
	Server     string        `json:"server"`
	ConfigHash string        `json:"configHash"`
	Tools      []ToolDef     `json:"tools"`
	Count      int           `json:"count"`
	CacheAge   time.Duration `json:"cacheAge"`
}

// ToolListChanged is recorded when a server sent
// notifications/tools/list_changed.
type ToolListChanged struct {
	Server string `json:"server"`
}

// ToolCallStarted is recorded before a tool call. Arguments are recorded
// (redacted) only when capture is switched on.
type ToolCallStarted struct {
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Name      string          `json:"name"`
	Deferred  bool            `json:"deferred,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ToolCallFinished is recorded after a tool call, successful or not.
type ToolCallFinished struct {
	Server    string        `json:"server"`
	Tool      string        `json:"tool"`
	Duration  time.Duration `json:"duration"`
	IsError   bool          `json:"isError,omitempty"`
	Error     string        `json:"error,omitempty"`
	Cancelled bool          `json:"cancelled,omitempty"`
	// Retried: the connection dropped during the call and the call,
	// annotated read-only or idempotent, was made once more after the
	// reconnect; the rest of the fields describe that second try.
	Retried bool `json:"retried,omitempty"`
	// OutputBytes is the size of the result's text as the server sent it:
	// its text items and the text of its embedded resources, in bytes.
	// Zero when the call returned no result from the server.
	OutputBytes int64 `json:"outputBytes,omitempty"`
	// Truncated: the text was over the server's output budget
	// (maxOutputBytes) and the caller got it cut, with a marker naming
	// the file that holds the whole result.
	Truncated bool `json:"truncated,omitempty"`
	// InputRounds counts the rounds of a multi-round-trip call (protocol
	// 2026-07-28: the server answered "input required" and the call was
	// made again with the answers) whose input requests the host's
	// callbacks answered (elicitation, sampling).
	InputRounds int `json:"inputRounds,omitempty"`
}

// Disconnected is recorded when a connection ended, requested or not.
type Disconnected struct {
	Server     string           `json:"server"`
	Reason     DisconnectReason `json:"reason"`
	ExitStatus *int             `json:"exitStatus,omitempty"`
	Error      string           `json:"error,omitempty"`
	// Reconnecting: a [ReconnectScheduled] follows; the server's tools
	// stay in the view, deferred, until it is back or given up.
	Reconnecting bool `json:"reconnecting,omitempty"`
}

// ReloadRequested is recorded when a reload begins.
type ReloadRequested struct {
	Servers int `json:"servers"`
}

// ReloadCompleted is recorded when a reload finished.
type ReloadCompleted struct {
	Servers  int           `json:"servers"`
	Failed   int           `json:"failed"`
	Tools    int           `json:"tools"`
	Duration time.Duration `json:"duration"`
}

// ToolsActivated is recorded when tools held back by a session's tool
// budget were loaded into the session, so the agent can call them. Tools
// holds exposed names (mcp_<server>_<tool>) as the session's tool view
// named them at that moment. What the agent searched for is not recorded:
// a query may quote anything, secrets included.
type ToolsActivated struct {
	Tools []string        `json:"tools"`
	By    ActivationCause `json:"by"`
}

func (*SessionStarted) Type() string     { return TypeSessionStarted }
func (*SessionClosed) Type() string      { return TypeSessionClosed }
func (*DiscoveryFailed) Type() string    { return TypeDiscoveryFailed }
func (*ServerDiscovered) Type() string   { return TypeServerDiscovered }
func (*ServerSkipped) Type() string      { return TypeServerSkipped }
func (*ServerInvalid) Type() string      { return TypeServerInvalid }
func (*ConnectStarted) Type() string     { return TypeConnectStarted }
func (*ServerConnected) Type() string    { return TypeServerConnected }
func (*ConnectFailed) Type() string      { return TypeConnectFailed }
func (*ToolsListed) Type() string        { return TypeToolsListed }
func (*ToolsListFailed) Type() string    { return TypeToolsListFailed }
func (*StartupGateElapsed) Type() string { return TypeStartupGateElapsed }
func (*CachedToolsServed) Type() string  { return TypeCachedToolsServed }
func (*ToolListChanged) Type() string    { return TypeToolListChanged }
func (*ToolCallStarted) Type() string    { return TypeToolCallStarted }
func (*ToolCallFinished) Type() string   { return TypeToolCallFinished }
func (*Disconnected) Type() string       { return TypeDisconnected }
func (*ReloadRequested) Type() string    { return TypeReloadRequested }
func (*ReloadCompleted) Type() string    { return TypeReloadCompleted }
func (*ToolsActivated) Type() string     { return TypeToolsActivated }

func (e *ServerDiscovered) ServerName() string  { return e.Server }
func (e *ServerSkipped) ServerName() string     { return e.Server }
func (e *ServerInvalid) ServerName() string     { return e.Server }
func (e *ConnectStarted) ServerName() string    { return e.Server }
func (e *ServerConnected) ServerName() string   { return e.Server }
func (e *ConnectFailed) ServerName() string     { return e.Server }
func (e *ToolsListed) ServerName() string       { return e.Server }
func (e *ToolsListFailed) ServerName() string   { return e.Server }
func (e *CachedToolsServed) ServerName() string { return e.Server }
func (e *ToolListChanged) ServerName() string   { return e.Server }
func (e *ToolCallStarted) ServerName() string   { return e.Server }
func (e *ToolCallFinished) ServerName() string  { return e.Server }
func (e *Disconnected) ServerName() string      { return e.Server }

// decoders is the explicit decoder table: type string → schema version and
// constructor. Adding an event means adding a line here.
var decoders = map[string]struct {
	schema int
	new    func() Event
}{
	TypeSessionStarted:       {1, func() Event { return new(SessionStarted) }},
	TypeSessionClosed:        {1, func() Event { return new(SessionClosed) }},
	TypeDiscoveryFailed:      {1, func() Event { return new(DiscoveryFailed) }},
	TypeServerDiscovered:     {1, func() Event { return new(ServerDiscovered) }},
	TypeServerSkipped:        {1, func() Event { return new(ServerSkipped) }},
	TypeServerInvalid:        {1, func() Event { return new(ServerInvalid) }},
	TypeConnectStarted:       {1, func() Event { return new(ConnectStarted) }},
	TypeServerConnected:      {1, func() Event { return new(ServerConnected) }},
	TypeConnectFailed:        {1, func() Event { return new(ConnectFailed) }},
	TypeToolsListed:          {1, func() Event { return new(ToolsListed) }},
	TypeToolsListFailed:      {1, func() Event { return new(ToolsListFailed) }},
	TypeStartupGateElapsed:   {1, func() Event { return new(StartupGateElapsed) }},
	TypeCachedToolsServed:    {1, func() Event { return new(CachedToolsServed) }},
	TypeToolListChanged:      {1, func() Event { return new(ToolListChanged) }},
	TypeToolCallStarted:      {1, func() Event { return new(ToolCallStarted) }},
	TypeToolCallFinished:     {1, func() Event { return new(ToolCallFinished) }},
	TypeDisconnected:         {1, func() Event { return new(Disconnected) }},
	TypeReloadRequested:      {1, func() Event { return new(ReloadRequested) }},
	TypeReloadCompleted:      {1, func() Event { return new(ReloadCompleted) }},
	TypeToolsActivated:       {1, func() Event { return new(ToolsActivated) }},
	TypeReconnectScheduled:   {1, func() Event { return new(ReconnectScheduled) }},
	TypeReconnectGaveUp:      {1, func() Event { return new(ReconnectGaveUp) }},
	TypeHostResumed:          {1, func() Event { return new(HostResumed) }},
	TypeConfigChanged:        {1, func() Event { return new(ConfigChanged) }},
	TypeProcessesSeen:        {1, func() Event { return new(ProcessesSeen) }},
	TypeSessionAbandoned:     {1, func() Event { return new(SessionAbandoned) }},
	TypeOrphansReaped:        {1, func() Event { return new(OrphansReaped) }},
	TypeRecordingGap:         {1, func() Event { return new(RecordingGap) }},
	TypeServerLog:            {1, func() Event { return new(ServerLog) }},
	TypeElicitationRequested: {1, func() Event { return new(ElicitationRequested) }},
	TypeElicitationAnswered:  {1, func() Event { return new(ElicitationAnswered) }},
	TypeSamplingRequested:    {1, func() Event { return new(SamplingRequested) }},
	TypeSamplingAnswered:     {1, func() Event { return new(SamplingAnswered) }},
	TypeResourcesListed:      {1, func() Event { return new(ResourcesListed) }},
	TypePromptsListed:        {1, func() Event { return new(PromptsListed) }},
	TypeResourceUpdated:      {1, func() Event { return new(ResourceUpdated) }},
	TypeAuthRequired:         {1, func() Event { return new(AuthRequired) }},
	TypeAuthCompleted:        {1, func() Event { return new(AuthCompleted) }},
	TypeAuthFailed:           {1, func() Event { return new(AuthFailed) }},
	TypeServerEraDetected:    {1, func() Event { return new(ServerEraDetected) }},
	TypeResourceRead:         {1, func() Event { return new(ResourceRead) }},
	TypePromptRetrieved:      {1, func() Event { return new(PromptRetrieved) }},

	TypeServerMessagesLimited: {1, func() Event { return new(ServerMessagesLimited) }},
	TypeHostAttached:          {1, func() Event { return new(HostAttached) }},
	TypeHostDetached:          {1, func() Event { return new(HostDetached) }},
}

// Types returns every known event type string, sorted.
func Types() []string {
	out := make([]string, 0, len(decoders))
	for t := range decoders {
		out = append(out, t)
	}
	sortStrings(out)
	return out
}

// SchemaOf returns the current schema version of an event type, or 0 when
// the type is unknown.
func SchemaOf(eventType string) int { return decoders[eventType].schema }
