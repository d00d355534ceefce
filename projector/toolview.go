package projector

import (
	"bytes"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/mcplife/mcplife/events"
)

// Status is a server's connection status in the view.
type Status string

// Server statuses.
const (
	StatusConnected    Status = "connected"    // initialize finished and the connection is up
	StatusConnecting   Status = "connecting"   // a connect (and its first tool load) is in flight
	StatusDisconnected Status = "disconnected" // anything else, including unknown servers
	// StatusReconnecting: the connection dropped and a reconnect is
	// scheduled or in flight; the server's tools stay, deferred.
	StatusReconnecting Status = "reconnecting"
	// StatusFailed: reconnecting gave up (the crash-loop breaker); an
	// explicit connect, a reload or a config change tries again.
	StatusFailed Status = "failed"
	// StatusNeedsAuth: the server answered its connect with 401 and no
	// stored token could satisfy it (AuthRequired); a login connects it.
	StatusNeedsAuth Status = "needs-auth"
)

// ServerState is one server as a session sees it.
type ServerState struct {
	Name   string
	Status Status // one of the Status constants
	// Transport is the connection's transport: the configured one, or
	// for a server the session asked to share, what its ServerConnected
	// says happened ("shared", or "stdio" when it ran in the session's
	// own process instead).
	Transport string
	// SharedInstance is the shared host's instance a shared server's
	// connection uses ("" when not shared).
	SharedInstance string
	// NotShared is true when the session asked to share the server but
	// could not and ran it itself.
	NotShared  bool
	Source     events.SourceMeta
	ConfigHash string
	Config     events.ServerConfig // redacted, as discovered
	// Tools are the server's exposed tools: the latest list after the
	// config's EnabledTools/DisabledTools filters, in the server's order,
	// each name once.
	Tools []events.ToolDef
	// Hidden holds the original names the filters removed, sorted.
	Hidden []string
	// Resources, Templates and Prompts are the server's latest lists
	// (ResourcesListed, PromptsListed), kept while it reconnects.
	Resources []events.ResourceDef
	Templates []events.ResourceTemplateDef
	Prompts   []events.PromptDef
	// Deferred is true when Tools came from the tool cache
	// (CachedToolsServed) and no live tools/list has replaced them yet.
	Deferred bool
	CacheAge time.Duration // age of the cached list when Deferred
	// Error is the latest failure: validation, connect, tools/list, or the
	// error of a disconnect. A new connect attempt and a successful
	// tools/list clear it.
	Error           string
	Instructions    string // from initialize, untruncated
	Pid             int    // a stdio server's process, from ServerConnected
	PeerName        string
	PeerVersion     string
	ProtocolVersion string
	Attempt         int
	// DisconnectReason is the reason of the latest Disconnected (one of the
	// events.Reason constants), cleared by a new connect attempt.
	DisconnectReason events.DisconnectReason
	// Timing of the latest connect attempt: when it started, when
	// initialize finished, and when its first tools/list finished.
	ConnectStartedAt time.Time
	ConnectedAt      time.Time
	ToolsListedAt    time.Time
}

// ReadyAfter returns how long the latest connect attempt took until its
// first tool list arrived, and false when it has not (yet).
func (s ServerState) ReadyAfter() (time.Duration, bool) {
	if s.ConnectStartedAt.IsZero() || s.ToolsListedAt.IsZero() {
		return 0, false
	}
	return s.ToolsListedAt.Sub(s.ConnectStartedAt), true
}

// clone returns a copy of s that shares no slice or map with it. The JSON
// bytes inside tool definitions are shared; they are never modified.
func (s ServerState) clone() ServerState {
	s.Config = s.Config.Clone()
	s.Tools = slices.Clone(s.Tools)
	s.Hidden = slices.Clone(s.Hidden)
	s.Resources = slices.Clone(s.Resources)
	s.Templates = slices.Clone(s.Templates)
	s.Prompts = slices.Clone(s.Prompts)
	return s
}

// Tool is one exposed tool.
type Tool struct {
	Name     string // exposed name, see [AssignNames]
	Server   string // server name
	Original string // the tool's name as the server sent it
	Def      events.ToolDef
	Deferred bool // served from the cache; calls wait for the connection
	Source   events.SourceMeta
}

// ToolView is the fold of one session's events into the status of each
// server and the session's tool view. Replaying a session's events rebuilds
// exactly the view the session had live.
//
// Transitions, per server: ServerDiscovered records source, transport,
// config hash and the redacted config (status unchanged; a new server is
// disconnected); ServerInvalid records the error (disconnected, no tools);
// ConnectStarted → connecting and clears the error; ServerConnected →
// connected; ConnectFailed → disconnected with the error, tools cleared;
// ToolsListed replaces the tools with live ones and clears the error;
// ToolsListFailed records the error and keeps the tools; CachedToolsServed
// sets deferred tools while connecting or while the first tools/list of a
// connected server is pending, unless a live list arrived;
// Disconnected → disconnected, tools removed; SessionClosed disconnects
// every server; ToolsActivated loads tools (see [ToolView.LoadedTools])
// without changing the tool list or Version. A ToolsListed for a disconnected or unknown server, and a
// CachedToolsServed for a disconnected server, are out of order
// (see mcp-audit verify) and change nothing.
//
// A ToolView is not safe for concurrent use, not even for queries alone
// (Tools fills a cache): one goroutine applies events and queries it, or
// the caller guards it, or hands out a [ToolView.Clone].
// The slices returned by its queries are copies; the JSON bytes inside tool
// definitions are shared and must not be modified.
type ToolView struct {
	session string
	// lean keeps only tool names, for counting (see SessionIndex).
	lean bool

	servers   map[string]*serverEntry
	discovery []events.DiscoveryFailed
	visible   int // number of exposed tools over all servers

	lastSeq uint64
	version uint64
	counts  Counts

	// changed is set by applyEvent when the current event changed the
	// tool list or a status.
	changed bool

	// loaded holds the tools a session's tool budget loaded
	// (ToolsActivated), by server and original name.
	loaded map[ToolRef]bool

	// names holds every exposed name the session gave out, claimed when
	// a tool is first exposed (see [ToolView.Tools]); a lean view names
	// nothing.
	names NameClaims
	// order ranks the tools in the order they were first exposed and
	// loaded (see [ToolView.Rank]); a lean view ranks nothing.
	order toolOrder

	// Cache of Tools(), rebuilt when toolsValid is false.
	toolsValid bool
	tools      []Tool
	collisions []Collision
}

// serverEntry is a server's state plus its unfiltered tool list.
type serverEntry struct {
	state   ServerState
	raw     []events.ToolDef // the latest list, before filters
	hasLive bool             // raw came from a live tools/list
	// reconnecting is set from a Disconnected that a reconnect follows
	// until the server is connected again or given up: a failed attempt
	// then keeps the tools.
	reconnecting bool
	// liveResources and livePrompts are set once the server listed them
	// itself: lists served from the cache no longer replace them.
	liveResources, livePrompts bool
}

// NewToolView returns an empty view of session. Apply folds in only
// envelopes whose SessionID (or, when empty, Stream) equals session.
func NewToolView(session string) *ToolView {
	return &ToolView{session: session, servers: make(map[string]*serverEntry)}
}

// Session returns the session the view follows.
func (v *ToolView) Session() string { return v.session }

// LastSeq returns the highest sequence passed to Apply, whether or not the
// envelope belonged to the view's session.
func (v *ToolView) LastSeq() uint64 { return v.lastSeq }

// Version returns a number that grows whenever the visible tool list or
// any server's status (including a server appearing) changed, so a caller
// can tell after Apply whether to notify subscribers.
func (v *ToolView) Version() uint64 { return v.version }

// Counts returns how many envelopes were applied and skipped, and why.
func (v *ToolView) Counts() Counts { return v.counts }

// Apply folds env into the view. Envelopes are expected in sequence order:
// one whose Seq is not above LastSeq is a redelivery and is skipped
// (envelopes with Seq 0, not yet stored, are always applied). Envelopes of
// other sessions, of types the view does not use (tool calls, gate, reload
// events), of unknown types and with undecodable data are skipped and
// counted (see [ToolView.Counts]).
func (v *ToolView) Apply(env events.Envelope) { v.ApplyDecoded(env, nil) }

// ApplyDecoded is [ToolView.Apply] with env's decoding at hand, shared
// with other projections (see journal.SharedDecoding); nil means decode
// env here. The event is kept, not modified.
func (v *ToolView) ApplyDecoded(env events.Envelope, decode func() (events.Event, error)) {
	if env.Seq != 0 {
		if env.Seq <= v.lastSeq {
			v.counts.Stale++
			return
		}
		v.lastSeq = env.Seq
	}
	if sessionOf(env) != v.session {
		v.counts.Ignored++
		return
	}
	if !toolViewUses(env.Type) {
		v.counts.skip(env)
		return
	}
	ev, ok := v.counts.decode(env, decode)
	if !ok {
		return
	}
	v.counts.Applied++
	v.applyEvent(env.Time, ev)
}

// ViewTypes are the event types a [ToolView] folds in: a watcher of a
// session's view needs to look at these only.
var ViewTypes = []string{
	events.TypeSessionClosed, events.TypeDiscoveryFailed, events.TypeServerDiscovered,
	events.TypeServerInvalid, events.TypeConnectStarted, events.TypeServerConnected,
	events.TypeConnectFailed, events.TypeToolsListed, events.TypeToolsListFailed,
	events.TypeCachedToolsServed, events.TypeDisconnected, events.TypeToolsActivated,
	events.TypeReconnectScheduled, events.TypeReconnectGaveUp, events.TypeAuthRequired,
	events.TypeResourcesListed, events.TypePromptsListed,
}

// toolViewUses reports whether the view folds in events of type t.
func toolViewUses(t string) bool { return slices.Contains(ViewTypes, t) }

// applyEvent folds one decoded event of the view's session, recorded at t.
func (v *ToolView) applyEvent(t time.Time, ev events.Event) {
	v.changed = false
	switch e := ev.(type) {
	case *events.ServerDiscovered:
		s := v.server(e.Server)
		if s.state.Source != e.Source && len(s.state.Tools) > 0 {
			// Each exposed tool carries its server's source.
			v.changed = true
			v.toolsValid = false
		}
		s.state.Source = e.Source
		s.state.Transport = e.Transport
		s.state.ConfigHash = e.ConfigHash
		filtersChanged := !slices.Equal(s.state.Config.EnabledTools, e.Config.EnabledTools) ||
			!slices.Equal(s.state.Config.DisabledTools, e.Config.DisabledTools)
		s.state.Config = e.Config
		s.state.Config.Name = e.Server
		if filtersChanged && len(s.raw) > 0 {
			v.expose(s)
			v.unloadMissing(s)
		}
	case *events.ServerInvalid:
		s := v.server(e.Server)
		s.state.Source = e.Source
		s.state.Error = e.Error
		v.end(s, StatusDisconnected)
	case *events.ConnectStarted:
		s := v.server(e.Server)
		v.setStatus(s, StatusConnecting)
		s.state.Error = ""
		s.state.DisconnectReason = ""
		if e.Transport != "" {
			s.state.Transport = e.Transport
		}
		s.state.SharedInstance, s.state.NotShared = "", false
		s.state.Attempt = e.Attempt
		s.state.ConnectStartedAt = t
		s.state.ConnectedAt = time.Time{}
		s.state.ToolsListedAt = time.Time{}
	case *events.ServerConnected:
		s := v.server(e.Server)
		s.reconnecting = false
		v.setStatus(s, StatusConnected)
		s.state.ConnectedAt = t
		s.state.Pid = e.Pid
		if e.Transport != "" { // set only for a server asked to share
			s.state.Transport = e.Transport
			s.state.SharedInstance = e.SharedInstance
			s.state.NotShared = e.Transport != events.TransportShared
		}
		s.state.Instructions = e.Instructions
		s.state.PeerName = e.PeerName
		s.state.PeerVersion = e.PeerVersion
		s.state.ProtocolVersion = e.ProtocolVersion
	case *events.ConnectFailed:
		s := v.server(e.Server)
		s.state.Error = e.Error
		if s.reconnecting {
			v.setStatus(s, StatusReconnecting) // the next attempt or ReconnectGaveUp follows
			break
		}
		v.end(s, StatusDisconnected)
	case *events.ToolsListed:
		s, ok := v.servers[e.Server]
		if !ok || !s.live() {
			break
		}
		if s.state.ConfigHash == "" {
			s.state.ConfigHash = e.ConfigHash
		}
		s.state.Error = ""
		if s.state.ToolsListedAt.IsZero() {
			s.state.ToolsListedAt = t
		}
		v.setTools(s, e.Tools, false, 0)
		s.hasLive = true
		v.unloadMissing(s)
	case *events.ResourcesListed:
		// A deferred server's cached lists (cause cache) are shown while
		// it connects, until it lists its own.
		if s, ok := v.servers[e.Server]; ok && !v.lean && v.takesSurface(s, e.Cause, &s.liveResources) {
			s.state.Resources, s.state.Templates = e.Resources, e.Templates
			v.changed = true
		}
	case *events.PromptsListed:
		if s, ok := v.servers[e.Server]; ok && !v.lean && v.takesSurface(s, e.Cause, &s.livePrompts) {
			s.state.Prompts = e.Prompts
			v.changed = true
		}
	case *events.ToolsListFailed:
		s := v.server(e.Server)
		s.state.Error = e.Error
	case *events.CachedToolsServed:
		s, ok := v.servers[e.Server]
		// The server may have finished initialize while its first
		// tools/list is still pending: connected, but without live tools.
		if ok && s.live() && !s.hasLive {
			v.setTools(s, e.Tools, true, e.CacheAge)
			v.unloadMissing(s)
		}
	case *events.Disconnected:
		s := v.server(e.Server)
		s.state.DisconnectReason = e.Reason
		if e.Error != "" {
			s.state.Error = e.Error
		}
		if e.Reconnecting {
			// The tools stay, deferred: a call waits for the reconnect.
			s.reconnecting = true
			v.setStatus(s, StatusReconnecting)
			v.setTools(s, s.raw, true, 0)
			break
		}
		v.end(s, StatusDisconnected)
	case *events.ReconnectScheduled:
		s := v.server(e.Server)
		v.setStatus(s, StatusReconnecting)
	case *events.ReconnectGaveUp:
		s := v.server(e.Server)
		s.state.Error = e.LastError
		v.end(s, StatusFailed)
	case *events.AuthRequired:
		v.end(v.server(e.Server), StatusNeedsAuth)
	case *events.SessionClosed:
		for _, s := range v.servers {
			v.end(s, StatusDisconnected)
		}
	case *events.DiscoveryFailed:
		v.discovery = append(v.discovery, *e)
	case *events.ToolsActivated:
		for _, name := range e.Tools {
			if ref, ok := v.Resolve(name); ok {
				if v.loaded == nil {
					v.loaded = make(map[ToolRef]bool)
				}
				v.loaded[ref] = true
				if !v.lean {
					v.order.load(ref)
				}
			}
		}
	}
	if v.changed {
		v.version++
	}
}

// end records that s has no connection and none is coming (status is
// disconnected or failed): its tools, resources and prompts go.
func (v *ToolView) end(s *serverEntry, status Status) {
	s.reconnecting = false
	v.setStatus(s, status)
	v.setTools(s, nil, false, 0)
	if s.state.Resources != nil || s.state.Templates != nil || s.state.Prompts != nil {
		v.changed = true
	}
	s.state.Resources, s.state.Templates, s.state.Prompts = nil, nil, nil
	s.liveResources, s.livePrompts = false, false
}

// takesSurface reports whether a resource or prompt list of cause applies
// to s, whose own list of that kind arrived when *listed is set: a live
// list while s is connected, and marks it; one served from the cache
// while s is connecting or connected without a live list of its own.
func (v *ToolView) takesSurface(s *serverEntry, cause events.ListCause, listed *bool) bool {
	if cause == events.CauseCache {
		return s.live() && !*listed
	}
	if s.state.Status != StatusConnected {
		return false
	}
	*listed = true
	return true
}

// live reports whether s is connecting or connected: a list arriving for
// it may be applied. One that arrives after its connection ended (or
// before any connect, or while it reconnects) must not bring tools back.
func (s *serverEntry) live() bool {
	return s.state.Status == StatusConnecting || s.state.Status == StatusConnected
}

// unloadMissing unloads the loaded tools of s that its exposed list no
// longer holds: the server dropped them, or a filter now hides them.
func (v *ToolView) unloadMissing(s *serverEntry) {
	for ref := range v.loaded {
		if ref.Server == s.state.Name && !slices.ContainsFunc(s.state.Tools, func(t events.ToolDef) bool { return t.Name == ref.Tool }) {
			delete(v.loaded, ref)
		}
	}
}

// server returns the entry of name, creating a disconnected one.
func (v *ToolView) server(name string) *serverEntry {
	s, ok := v.servers[name]
	if !ok {
		s = &serverEntry{state: ServerState{Name: name, Status: StatusDisconnected}}
		v.servers[name] = s
		v.changed = true
	}
	return s
}

func (v *ToolView) setStatus(s *serverEntry, status Status) {
	if s.state.Status != status {
		s.state.Status = status
		v.changed = true
	}
}

// setTools replaces s's tool list; cacheAge is the age of a deferred list.
// An unchanged list (same definitions, same deferred flag) changes nothing,
// so Version does not move.
func (v *ToolView) setTools(s *serverEntry, tools []events.ToolDef, deferred bool, cacheAge time.Duration) {
	s.hasLive = false
	deferred = deferred && len(tools) > 0
	if !deferred {
		cacheAge = 0
	}
	s.state.CacheAge = cacheAge
	if len(tools) == 0 && len(s.raw) == 0 {
		s.state.Deferred = false
		return
	}
	if v.lean {
		lean := make([]events.ToolDef, len(tools))
		for i, t := range tools {
			lean[i] = events.ToolDef{Name: t.Name}
		}
		tools = lean
	}
	if deferred == s.state.Deferred && slices.EqualFunc(tools, s.raw, toolDefEqual) {
		return
	}
	s.raw = tools
	s.state.Deferred = deferred
	v.expose(s)
}

// expose recomputes s's exposed tools from its raw list and filters, and
// names the tools exposed for the first time.
func (v *ToolView) expose(s *serverEntry) {
	v.visible -= len(s.state.Tools)
	s.state.Tools, s.state.Hidden = filterTools(s.raw, s.state.Config.EnabledTools, s.state.Config.DisabledTools)
	v.visible += len(s.state.Tools)
	v.changed = true
	v.toolsValid = false
	if !v.lean {
		v.claimNames(s)
		v.order.list(s.state.Name, s.state.Tools)
	}
}

// MaxNameClaims bounds the names a session's view keeps for tools that
// are no longer exposed. When a server's new tools make the session hold
// more names than this (and more than twice the tools it exposes), that
// server's tools it no longer lists lose their names, which may then go
// to other tools; the names of exposed tools, and of other servers'
// tools, are kept.
const MaxNameClaims = 100_000

// claimNames gives the exposed tools of s that have no name yet theirs:
// a name, once given, keeps meaning its tool for the rest of the session,
// so a server that lists a colliding tool later gets the hash-suffixed
// name, however the servers' names sort. Because it runs as the events
// are folded, a replay gives every tool the name it had live.
func (v *ToolView) claimNames(s *serverEntry) {
	var fresh []ToolRef
	for _, t := range s.state.Tools {
		ref := ToolRef{Server: s.state.Name, Tool: t.Name}
		if _, ok := v.names.Name(ref); !ok {
			fresh = append(fresh, ref)
		}
	}
	if len(fresh) == 0 {
		return
	}
	v.names.Claim(fresh)
	if n := v.names.Len(); n > MaxNameClaims && n > 2*v.visible {
		// Only s's own names are forgotten: a server renaming its tools
		// forever evicts its own old names, never the name of another
		// server's tool while that server is away.
		exposed := make(map[string]bool, len(s.state.Tools))
		for _, t := range s.state.Tools {
			exposed[t.Name] = true
		}
		v.names.Forget(func(r ToolRef) bool { return r.Server != s.state.Name || exposed[r.Tool] })
		v.order.forget(func(r ToolRef) bool { return r.Server != s.state.Name || exposed[r.Tool] })
	}
}

func toolDefEqual(a, b events.ToolDef) bool {
	return a.Name == b.Name && a.Title == b.Title && a.Description == b.Description &&
		bytes.Equal(a.InputSchema, b.InputSchema) && bytes.Equal(a.OutputSchema, b.OutputSchema) &&
		bytes.Equal(a.Annotations, b.Annotations) && bytes.Equal(a.Icons, b.Icons)
}

// filterTools applies a server's tool filters: a tool is hidden when its
// original name matches a DisabledTools pattern, or when EnabledTools is
// not empty and it matches none of them. Patterns use [path.Match]; a
// malformed pattern matches nothing. A name listed twice is exposed once.
func filterTools(raw []events.ToolDef, enabled, disabled []string) (exposed []events.ToolDef, hidden []string) {
	exposed = make([]events.ToolDef, 0, len(raw))
	seen := make(map[string]bool, len(raw))
	for _, t := range raw {
		if seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		if matchAny(disabled, t.Name) || (len(enabled) > 0 && !matchAny(enabled, t.Name)) {
			hidden = append(hidden, t.Name)
			continue
		}
		exposed = append(exposed, t)
	}
	slices.Sort(hidden)
	return exposed, hidden
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, err := path.Match(p, name); err == nil && ok {
			return true
		}
	}
	return false
}

// Servers returns every server the session has seen, sorted by name.
func (v *ToolView) Servers() []ServerState {
	out := make([]ServerState, 0, len(v.servers))
	for _, name := range slices.Sorted(maps.Keys(v.servers)) {
		out = append(out, v.servers[name].state.clone())
	}
	return out
}

// Server returns the state of the named server.
func (v *ToolView) Server(name string) (ServerState, bool) {
	s, ok := v.servers[name]
	if !ok {
		return ServerState{}, false
	}
	return s.state.clone(), true
}

// Status returns the status of the named server; an unknown server is
// disconnected.
func (v *ToolView) Status(name string) Status {
	if s, ok := v.servers[name]; ok {
		return s.state.Status
	}
	return StatusDisconnected
}

// DiscoveryErrors returns the session's DiscoveryFailed events, in order.
func (v *ToolView) DiscoveryErrors() []events.DiscoveryFailed {
	return slices.Clone(v.discovery)
}

// ToolCount returns the number of exposed tools.
func (v *ToolView) ToolCount() int { return v.visible }

// Tools returns the exposed tools of every server, sorted by exposed name
// (byte order).
//
// A tool's name is given when it is first exposed (listed live or served
// from the cache) and kept for the rest of the session ([NameClaims]):
// while its server reconnects, after it disconnected and when it comes
// back, the name means that tool and no other. Tools exposed by one event
// are named as one set by the rule of [AssignNames], with every name
// given out earlier counted as taken; so a newcomer whose [ToolName] is
// taken gets the hash-suffixed name. With no earlier claim, the same pair
// gets the same name in every session. The sorted list is cached until
// the next change, so calling Tools without changes costs one copy.
func (v *ToolView) Tools() []Tool {
	v.buildTools()
	return slices.Clone(v.tools)
}

// IsLoaded reports whether the tool exposed under name was loaded by a
// ToolsActivated event and is still in the view.
func (v *ToolView) IsLoaded(name string) bool {
	ref, ok := v.Resolve(name)
	return ok && v.loaded[ref]
}

// LoadedTools returns the view's tools that ToolsActivated events loaded,
// sorted by exposed name.
//
// The loaded set is a fold: ToolsActivated adds the tools it names, each
// resolved by the view as it stands at that event (a name the view does
// not hold adds nothing). A tool stays loaded while its server is away
// (disconnected, reconnecting, reloading): it is simply not in the view
// then, and comes back loaded when its server lists it again. A list of
// its server without it (ToolsListed, CachedToolsServed, or a filter
// change in ServerDiscovered) unloads it; a later list that holds it again
// does not load it again.
func (v *ToolView) LoadedTools() []Tool {
	if len(v.loaded) == 0 {
		return []Tool{}
	}
	v.buildTools()
	out := make([]Tool, 0, len(v.loaded))
	for _, t := range v.tools {
		if v.loaded[ToolRef{Server: t.Server, Tool: t.Original}] {
			out = append(out, t)
		}
	}
	return out
}

// Collisions returns the name collisions of the current tools: each
// exposed tool whose name is not its [ToolName], because another tool
// held that name first; Kept is that tool (even when it is not exposed
// now). Sorted by (Name, Ref).
func (v *ToolView) Collisions() []Collision {
	v.buildTools()
	return slices.Clone(v.collisions)
}

// Resolve maps an exposed tool name back to its server and original tool
// name (a binary search of the tools, which are sorted by name).
func (v *ToolView) Resolve(name string) (ToolRef, bool) {
	v.buildTools()
	i, ok := slices.BinarySearchFunc(v.tools, name, func(t Tool, name string) int { return strings.Compare(t.Name, name) })
	if !ok {
		return ToolRef{}, false
	}
	return ToolRef{Server: v.tools[i].Server, Tool: v.tools[i].Original}, true
}

// buildTools rebuilds the cached tool list when a change invalidated it.
// Every exposed tool was named when it was exposed (claimNames).
func (v *ToolView) buildTools() {
	if v.toolsValid {
		return
	}
	tools := make([]Tool, 0, v.visible)
	var collisions []Collision
	for _, s := range v.servers {
		for _, t := range s.state.Tools {
			ref := ToolRef{Server: s.state.Name, Tool: t.Name}
			name, ok := v.names.Name(ref)
			if !ok {
				name = ToolName(ref.Server, ref.Tool) // a lean view names nothing
			}
			if c, ok := v.names.Collision(ref); ok {
				collisions = append(collisions, c)
			}
			tools = append(tools, Tool{
				Name:     name,
				Server:   s.state.Name,
				Original: t.Name,
				Def:      t,
				Deferred: s.state.Deferred,
				Source:   s.state.Source,
			})
		}
	}
	slices.SortFunc(tools, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	sortCollisions(collisions)
	v.tools, v.collisions = tools, collisions
	v.toolsValid = true
}

// Clone returns an independent copy of the view: applying events to one
// does not change the other.
func (v *ToolView) Clone() *ToolView {
	c := *v
	c.servers = make(map[string]*serverEntry, len(v.servers))
	for name, s := range v.servers {
		cs := *s
		cs.state = s.state.clone()
		c.servers[name] = &cs
	}
	c.discovery = slices.Clone(v.discovery)
	c.loaded = maps.Clone(v.loaded)
	c.names = v.names.Clone()
	c.order = v.order.clone()
	// The cached tool list is never modified in place, only replaced, so
	// the copy may share it.
	return &c
}
