package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/splice"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager/internal/transport"
	"github.com/mcplife/mcplife/oauth"
	"github.com/mcplife/mcplife/projector"
)

// Defaults.
const (
	// DefaultGate is how long ConnectServers waits for every server to
	// connect and list its tools before it returns with whatever is ready.
	DefaultGate = 250 * time.Millisecond
	// defaultRelistInterval is the shortest time between two re-lists of
	// one server caused by notifications/tools/list_changed.
	defaultRelistInterval = time.Second
	// defaultTimeout bounds connect + initialize, and separately each
	// tools/list, of a server whose config sets no timeout.
	defaultTimeout = 30 * time.Second
	// defaultPackageRunnerTimeout replaces defaultTimeout for servers
	// started through a package runner (npx, uvx, bunx, pipx), whose
	// first start downloads the package.
	defaultPackageRunnerTimeout = 60 * time.Second
	// defaultToolTimeout bounds each tool call of a server whose config
	// sets no toolTimeoutMs.
	defaultToolTimeout = 60 * time.Second
	// DefaultProtocolVersion is the MCP protocol version offered to
	// servers: the current revision, 2026-07-28 (stateless: server/discover
	// instead of initialize). A server that knows only the initialize
	// handshake is probed once, recorded as legacy (ServerEraDetected) and
	// connected at 2025-11-25 from then on with no probe; an sse server is
	// always legacy. A config's protocolVersion pins another version per
	// server, and its era (auto, modern, legacy) fixes the handshake.
	DefaultProtocolVersion = modernProtocol
	// maxInstructions is the length, in characters, at which a server's
	// instructions are cut when exposed.
	maxInstructions = 4000
)

// defaultProtocol is the version Options.ProtocolVersion defaults to:
// DefaultProtocolVersion, except in this package's own lifecycle tests
// (see TestMain).
var defaultProtocol = DefaultProtocolVersion

// Options configure a [Manager]. Nil or zero fields mean defaults.
type Options struct {
	// Cwd is the session's working directory: stdio servers without a cwd
	// start there (a relative config cwd is resolved against it), and it
	// is the default root. Default: the process's working directory.
	Cwd string
	// Roots are the directories roots/list answers every server with, as
	// file:// URIs of absolute paths (a relative one is resolved against
	// Cwd). A server's config may name its own (events.ServerConfig.Roots),
	// which replace these for that server. Roots tell a server which
	// folders the user means it to work in; some take them as the only
	// folders they may touch: server-filesystem replaces the directories
	// on its command line with the client's roots. Default: Cwd alone.
	Roots []string
	// Gate is the startup gate (default [DefaultGate]).
	Gate time.Duration
	// EagerCache ends the startup gate as soon as every server still
	// connecting has a cached tool list for its config: those servers are
	// served deferred at once instead of after the gate, so a warm start
	// has all its tools within milliseconds. Off by default, which keeps
	// the reference gate: a server that connects within Gate is awaited
	// live even when its list is cached.
	EagerCache bool
	// Resolver substitutes env and header values at every connect.
	// Default: none (values are used as the config has them).
	Resolver Resolver
	// Logger receives late failures and best-effort problems (default:
	// discard).
	Logger *slog.Logger
	// ToolCache serves deferred tools. It must already be attached to the
	// journal. Nil: the manager creates one and attaches it.
	ToolCache *projector.ToolCache
	// ProtocolVersion offered to servers (default [DefaultProtocolVersion]);
	// a server config's ProtocolVersion wins.
	ProtocolVersion string
	// CaptureArguments records tool-call arguments, redacted, in
	// ToolCallStarted. Off by default.
	CaptureArguments bool
	// Client is the client identity servers see.
	Client ClientOptions
	// RelistInterval is the shortest time between two re-lists of one
	// server caused by notifications/tools/list_changed (default
	// 1s). Notifications that arrive sooner are
	// coalesced into the next re-list, so a server that sends them in a
	// loop costs one tools/list per interval.
	RelistInterval time.Duration
	// MaxMessageSize is the longest message a stdio server may send, in
	// bytes: one line of its stdout (default 16 MiB). A longer line is discarded as it is read; when it answers
	// a call, that call fails with an error naming the limit and the
	// server stays connected.
	MaxMessageSize int
	// MaxListPages, MaxListTools and MaxSessionTools bound what tool
	// lists may hold, whatever the timeout: the pages of one list
	// (default 1000), the tools of one server's list
	// (default 10000) and the tools of every server's
	// latest list together (default 50000). A list over
	// a bound is not taken: it fails with an error naming the server and
	// the bound ([ErrListTooLong]), recorded as ToolsListFailed, and the
	// server stays connected with the tools it had. The first two bound
	// each list of resources, resource templates and prompts too.
	MaxListPages, MaxListTools, MaxSessionTools int
	// Health says how connected servers are checked.
	Health HealthOptions
	// Sleep says how a host that slept (a laptop lid closed) is noticed.
	Sleep SleepOptions
	// Elicit answers servers' requests for user input (elicitation); nil
	// means the elicitation capability is not advertised.
	// DeclineElicitation and AcceptElicitationDefaults are ready-made.
	Elicit ElicitFunc
	// Sample answers servers' requests for a model completion (sampling);
	// nil means the sampling capability is not advertised.
	Sample SampleFunc
	// OnResourceUpdated, when set, is called for each ResourceUpdated
	// recorded: the changes a server reports of a resource the session
	// subscribed to, at most one per second (changes in
	// between are coalesced into one at its end). It must not block.
	OnResourceUpdated func(server, uri string)
	// Auth says how remote servers that require OAuth are authorized.
	Auth AuthOptions
	// Reconnect says how a server that dropped comes back (the zero value
	// is the default policy; see [ReconnectPolicy]).
	Reconnect ReconnectPolicy
	// ServerLogLevel is the lowest level of the log messages servers are
	// asked for and that are recorded as ServerLog (default info;
	// [ServerLogsOff]: none). What is recorded is bounded: 4 KiB of text
	// per message, 20 messages a second per connection (the rest are
	// counted in one ServerLog with Dropped set).
	ServerLogLevel events.LogLevel
	// OutputDir holds the whole results that a server's output budget
	// (its config's MaxOutputBytes, default 256 KiB) cut,
	// one 0600 file each, named in the cut result's marker. Default:
	// $XDG_STATE_HOME/mcplife/outputs, else ~/.local/state/mcplife/outputs.
	// The manager never deletes them.
	OutputDir string
	// Dial, when set, opens the transport of every server instead of the
	// built-in ones (a child process for stdio, streamable HTTP, legacy
	// SSE): it is given the server's config with its env and header
	// values substituted, and a context that ends when the server is torn
	// down (initialize, after Dial, is bounded by the server's timeout).
	// Hosts use it to run go-sdk servers in process
	// (mcp.NewInMemoryTransports) in their tests and examples. The rest
	// of the lifecycle (initialize, lists, health, reconnects, recording)
	// is the same as over a built-in transport.
	Dial func(ctx context.Context, cfg events.ServerConfig) (mcp.Transport, error)
	// OnGate, when set, is called once per connect round when the startup
	// gate has decided every server's outcome (ready, failed, deferred or
	// awaited), before ConnectServers waits for the awaited ones and before
	// StartupGateElapsed is recorded. Its Elapsed is zero (the gate has
	// not finished); Outcomes is the caller's to keep. It is called from
	// the goroutine of the ConnectServers (or Reload) call that started
	// the round, so it must not block and must not call the manager.
	OnGate func(GateOutcome)
	// Transcript keeps every server's transcript (every JSON-RPC message
	// in and out, scrubbed and capped) beside the events, as a server's
	// config record "transcript" does for that server. Off by default; a
	// store without transcripts (store.TranscriptStore) keeps none.
	Transcript bool
	// CallMeta, when set, is called with the context of each tools/call
	// request and its keys are added to the request's params._meta, as a
	// tracer puts its traceparent and tracestate there. A key the manager
	// sets itself (progressToken, the log level) is never replaced. It is
	// called on the caller's goroutine, so it must return quickly and
	// must not call the manager; its values must be safe to record, since
	// a transcript keeps the request as sent.
	CallMeta func(ctx context.Context) map[string]any
	// Share, when set, attaches stdio servers to the user's shared host
	// instead of starting them here (see [ShareOptions]). Off by default;
	// ignored with Dial.
	Share *ShareOptions

	// splice, set by the shared host (through package splice), is where
	// the connections of the servers are published for its hosts' calls.
	splice *splice.Registry
}

// ClientOptions are the client identity sent in initialize (and in OAuth
// client registration).
type ClientOptions struct {
	// Name is the client's name. Default: "mcplife".
	Name string
	// Version is the client's version. Default: "0.1.0".
	Version string
}

// HealthOptions say how connected servers are checked. A server that
// fails a ping (no answer within Timeout, or a transport error; a server
// that does not know ping passes) is dropped (Disconnected, reason
// unresponsive) and reconnected.
type HealthOptions struct {
	// Interval is how often each connected server is checked: pinged,
	// or sent server/discover under protocol 2026-07-28 and later, which
	// have no ping. A server that answered another request within the
	// interval is not checked. Default: 30s; negative: never.
	Interval time.Duration
	// Timeout bounds each check. Default (also for a negative value): 10s.
	Timeout time.Duration
}

// SleepOptions say how a host that slept is noticed: a wall clock that
// ran ahead of the monotonic clock by Threshold or more between two
// checks means the host slept, so HostResumed is recorded and every
// remote server is health-checked at once.
type SleepOptions struct {
	// ClockCheck is how often the two clocks are compared. Default: 5s;
	// negative: never.
	ClockCheck time.Duration
	// Threshold is how far the wall clock must run ahead to count as a
	// sleep. Default (also for a negative value): 10s.
	Threshold time.Duration
}

// AuthOptions say how remote servers that require OAuth are authorized.
type AuthOptions struct {
	// OAuth authorizes them (tokens, refresh, client credentials).
	// Default (nil): an authorizer on the default token store
	// ($XDG_CONFIG_HOME/mcplife/oauth.json). Connecting never opens a
	// browser: a server that needs a login gets status needs-auth until
	// [Manager.Login].
	OAuth *oauth.Authorizer
	// Interactive lets a call that meets 403 insufficient_scope run the
	// browser login for the extra scopes (a step-up), and a call that
	// meets a 401 on a connection that is up (a server that let the
	// connect through without a token) run the login, instead of failing
	// with the login command. A connect, or its first tools/list, that
	// meets a 401 still ends as needs-auth, for [Manager.Login]. Default:
	// false.
	Interactive bool
}

// ConnectResult is what [Manager.ConnectServers] returns at the gate.
type ConnectResult struct {
	// Tools is the manager's whole tool view after the gate, sorted by
	// name: live tools, deferred tools of pending servers with a cached
	// list, and the tools of servers connected earlier (an incremental
	// call keeps them).
	Tools []*Tool
	// Errors holds a [*ServerError] per server of this call that failed
	// validation, connect or tools/list by the time the gate returned.
	Errors map[string]error
	// Connected lists the servers of this call that are connected, sorted.
	Connected []string
	// Gate describes the round's startup gate. Round is 0 when the call
	// started no connection.
	Gate GateOutcome
}

// Manager runs the MCP server lifecycle of one session: it connects servers
// in parallel, exposes their tools, calls them, notices drops and tool-list
// changes, and tears servers down, recording every step in the journal.
//
// Its server statuses and tool view are a projection of the session's
// events ([projector.ToolView]), applied inside each append, so they can
// never disagree with a replay. Beside the projection it keeps only what
// cannot be replayed: live go-sdk sessions, connects in flight, processes.
//
// All methods are safe for concurrent use, and one Manager may serve
// several agent sessions (and subagents): they share its connections and
// see its later changes through [Manager.Watch]. Nothing is torn down
// implicitly: call [Manager.Close] (or DisconnectAll) when done.
type Manager struct {
	j        *journal.Journal
	session  string
	opts     Options
	log      *slog.Logger
	cache    *projector.ToolCache
	ownCache bool // cache was attached by New (Options.ToolCache unset)
	dial     dialer
	now      func() time.Time
	// sched is the test seam at the scheduling points; nil outside tests
	// (see yield, which lists the points).
	sched func(point, server string)
	// requestRate is serverRequestRate; tests of the in-flight bound
	// raise it so that only that bound applies.
	requestRate int

	// out is the queue of events to record (outbox.go).
	out *outbox

	// ctx is cancelled by Close; wg holds the goroutines it stops.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	viewMu sync.Mutex
	view   *projector.ToolView
	// viewProj keeps view current; Close detaches it from the journal.
	viewProj *viewProjection
	lookup   toolIndex // (viewMu) the view's tools for Tool; see lookup.go

	// reloadMu serialises Reload.
	reloadMu sync.Mutex

	callSeq   atomic.Uint64
	reloadSeq atomic.Uint64

	mu         sync.Mutex
	closed     bool                         // no new connects
	stopping   bool                         // Close waits for the goroutines; none may start
	servers    map[string]*server           // pending, connected or being torn down
	sources    map[string]events.SourceMeta // known before a connect completes
	discovered map[string]discovery         // server → its latest ServerDiscovered
	attempts   map[string]int
	breakers   map[string]*breaker // failed attempts per server, for the crash-loop breaker
	round      int64
	listSizes  map[string]int // tools in each server's latest list taken, for Options.MaxSessionTools

	reconnect ReconnectPolicy // opts.Reconnect with defaults
	scanner   procScanner     // descendants of stdio servers, one /proc pass for many

	auth authState // OAuth: the authorizer and the servers waiting for a login

	share shareState // Options.Share: the control stream to the shared host
}

// New returns a manager that records session's lifecycle in j. The
// session's earlier events, if any, are folded into the manager's view;
// normally the session is new.
func New(j *journal.Journal, session string, opts *Options) (*Manager, error) {
	if j == nil {
		return nil, errors.New("manager: nil journal")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	var errs []error
	if session == "" {
		errs = append(errs, errors.New("manager: empty session id"))
	}
	if o.Gate < 0 {
		errs = append(errs, fmt.Errorf("manager: negative gate %v", o.Gate))
	}
	if o.MaxMessageSize < 0 {
		errs = append(errs, fmt.Errorf("manager: negative MaxMessageSize %d", o.MaxMessageSize))
	}
	for _, b := range []struct {
		name string
		v    int
	}{{"MaxListPages", o.MaxListPages}, {"MaxListTools", o.MaxListTools}, {"MaxSessionTools", o.MaxSessionTools}} {
		if b.v < 0 {
			errs = append(errs, fmt.Errorf("manager: negative %s %d", b.name, b.v))
		}
	}
	if _, ok := logLevels[o.ServerLogLevel]; !ok && o.ServerLogLevel != "" && o.ServerLogLevel != ServerLogsOff {
		errs = append(errs, fmt.Errorf("manager: unknown ServerLogLevel %q (want an MCP logging level or %q)", o.ServerLogLevel, ServerLogsOff))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if o.MaxMessageSize == 0 {
		o.MaxMessageSize = transport.DefaultMaxMessageSize
	}
	if o.MaxListPages == 0 {
		o.MaxListPages = defaultMaxListPages
	}
	if o.MaxListTools == 0 {
		o.MaxListTools = defaultMaxListTools
	}
	if o.MaxSessionTools == 0 {
		o.MaxSessionTools = defaultMaxSessionTools
	}
	if o.Gate == 0 {
		o.Gate = DefaultGate
	}
	switch {
	case o.Health.Interval == 0:
		o.Health.Interval = defaultHealthInterval
	case o.Health.Interval < 0:
		o.Health.Interval = 0
	}
	if o.Health.Timeout <= 0 {
		o.Health.Timeout = defaultHealthTimeout
	}
	if o.Sleep.ClockCheck == 0 {
		o.Sleep.ClockCheck = defaultClockCheck
	}
	if o.Sleep.Threshold <= 0 {
		o.Sleep.Threshold = defaultSleepThreshold
	}
	if o.RelistInterval <= 0 {
		o.RelistInterval = defaultRelistInterval
	}
	if o.Cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("manager: working directory: %w", err)
		}
		o.Cwd = wd
	}
	if len(o.Roots) == 0 {
		o.Roots = []string{o.Cwd}
	}
	roots, err := absRoots("manager: Roots", o.Roots, o.Cwd)
	if err != nil {
		return nil, err
	}
	o.Roots = roots
	if o.Resolver == nil {
		o.Resolver = transport.NoResolver{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ProtocolVersion == "" {
		o.ProtocolVersion = defaultProtocol
	}
	if o.ServerLogLevel == "" {
		o.ServerLogLevel = events.LogInfo
	}
	if o.OutputDir == "" {
		o.OutputDir = defaultOutputDir()
	}
	if o.Client.Name == "" {
		o.Client.Name = "mcplife"
	}
	if o.Client.Version == "" {
		o.Client.Version = "0.1.0"
	}
	m := &Manager{
		j:          j,
		session:    session,
		opts:       o,
		log:        o.Logger,
		cache:      o.ToolCache,
		now:        j.Now,
		view:       projector.NewToolView(session),
		servers:    map[string]*server{},
		sources:    map[string]events.SourceMeta{},
		discovered: map[string]discovery{},
		attempts:   map[string]int{},
		breakers:   map[string]*breaker{},
		listSizes:  map[string]int{},
		reconnect:  o.Reconnect.withDefaults(),
	}
	m.dial = m.newTransport
	m.requestRate = serverRequestRate
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.out = newOutbox()
	go m.pump()
	m.setUpAuth()
	ctx := context.Background()
	if m.cache == nil {
		m.cache, m.ownCache = projector.NewToolCache(), true
		if err := j.Attach(ctx, m.cache); err != nil {
			return nil, fmt.Errorf("manager: attach tool cache: %w", err)
		}
	}
	if err := m.attachView(ctx); err != nil {
		return nil, err
	}
	if o.Sleep.ClockCheck > 0 {
		m.wg.Go(m.clockWatch)
	}
	return m, nil
}

// discovery is what a server's latest ServerDiscovered recorded of it.
type discovery struct {
	hash   string
	source events.SourceMeta
}

// viewProjection keeps the manager's view current inside each append. It
// folds in only the manager's session.
type viewProjection struct {
	m *Manager
	// floor is where catching up starts: the session's own history was
	// replayed from its stream already, and the rest of the store holds
	// nothing for the view.
	floor uint64
	// off is set by a Close that could not detach the view at once.
	off atomic.Bool
}

func (p *viewProjection) Apply(env events.Envelope) { p.ApplyDecoded(env, nil) }

// ApplyDecoded takes the journal's shared decoding (journal.SharedDecoding).
func (p *viewProjection) ApplyDecoded(env events.Envelope, decode func() (events.Event, error)) {
	if p.off.Load() || env.SessionID != p.m.session && (env.SessionID != "" || env.Stream != p.m.session) {
		return
	}
	p.m.viewMu.Lock()
	p.m.view.ApplyDecoded(env, decode)
	p.m.viewMu.Unlock()
}

func (p *viewProjection) LastSeq() uint64 {
	p.m.viewMu.Lock()
	defer p.m.viewMu.Unlock()
	return max(p.m.view.LastSeq(), p.floor)
}

// attachView replays the session's stream into the view and attaches it,
// without reading other sessions' history (startup cost must not grow with
// the size of the store).
func (m *Manager) attachView(ctx context.Context) error {
	st := m.j.Store()
	floor, err := st.LastSeq(ctx)
	if err != nil {
		return fmt.Errorf("manager: read store: %w", err)
	}
	for env, err := range st.ReadStream(ctx, m.session, 1) {
		if err != nil {
			return fmt.Errorf("manager: replay session %q: %w", m.session, err)
		}
		m.view.Apply(env)
	}
	m.viewProj = &viewProjection{m: m, floor: floor}
	if err := m.j.Attach(ctx, m.viewProj); err != nil {
		return fmt.Errorf("manager: attach view: %w", err)
	}
	return nil
}

// yield is a test seam: it calls m.sched, when a test set it, at a
// scheduling point, a place where another goroutine's step may come in
// between; the test varies or holds the interleaving there. Unset, it is
// an inlined nil check with constant arguments: no call, no allocation.
// Where the server's owner decides an interleaving alone (a failed
// connect ending its record, a connection published while a disconnect
// is on its way, a record removed after its Disconnected) no point is
// needed: only the owner changes the state, and it takes a disconnect at
// its next wait. The points, by name, with the server they concern (""
// for none):
//
//	connect.wait       ConnectServers waits for earlier teardowns of its servers
//	connect.started    ConnectServers started the round's servers, before its gate
//	gate.snapshot      the gate is about to take its snapshot of settled servers
//	gate.emit          the gate decided, before it marks deferred servers and records
//	run.listed         (server) the first tools/list returned, before it is recorded
//	watch.ended        (server) the server's goroutine saw its connection end on its own and marked it dropped
//	call.wait          (server) a tool call waits for the decision of the server's drop
//	disconnect.sent    (server) a disconnect was sent to the server's owner
//	finish.emit        (server) the owner's teardown is about to record Disconnected
//	reload.discover    Reload tore everything down and is about to rediscover
func (m *Manager) yield(point, server string) {
	if m.sched != nil {
		m.sched(point, server)
	}
}

// goOwned runs fn in a goroutine the manager waits for on Close, and
// reports false (without running fn) once Close has started waiting.
func (m *Manager) goOwned(fn func()) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopping {
		return false
	}
	m.wg.Go(fn)
	return true
}

// Session returns the session id the manager records to.
func (m *Manager) Session() string { return m.session }

// describeEvents returns the distinct types and servers of evs, each
// joined with ",", in order of appearance.
func describeEvents(evs []events.Event) (types, servers string) {
	var ts, ss []string
	for _, ev := range evs {
		if t := ev.Type(); !slices.Contains(ts, t) {
			ts = append(ts, t)
		}
		if se, ok := ev.(events.ServerEvent); ok {
			if s := se.ServerName(); s != "" && !slices.Contains(ss, s) {
				ss = append(ss, s)
			}
		}
	}
	return strings.Join(ts, ","), strings.Join(ss, ",")
}

// Status returns the status of the named server, one of
// projector.StatusConnected, StatusConnecting or StatusDisconnected, as the
// session's view records it.
func (m *Manager) Status(name string) projector.Status {
	m.viewMu.Lock()
	defer m.viewMu.Unlock()
	return m.view.Status(name)
}

// View returns a copy of the session's view, for callers that need server
// details (errors, timings, hidden tools, collisions).
func (m *Manager) View() *projector.ToolView {
	m.viewMu.Lock()
	defer m.viewMu.Unlock()
	return m.view.Clone()
}

// Resolve maps an exposed tool name back to its server and the tool's
// original name.
func (m *Manager) Resolve(toolName string) (server, original string, ok bool) {
	m.viewMu.Lock()
	defer m.viewMu.Unlock()
	ref, ok := m.view.Resolve(toolName)
	return ref.Server, ref.Tool, ok
}

// Instructions returns the named server's initialize instructions, cut to
// 4000 characters.
func (m *Manager) Instructions(name string) string {
	m.viewMu.Lock()
	st, _ := m.view.Server(name)
	m.viewMu.Unlock()
	s := st.Instructions
	if n := 0; len(s) > maxInstructions {
		for i := range s {
			if n == maxInstructions {
				return s[:i]
			}
			n++
		}
	}
	return s
}

// sourceMetas returns the source metadata of every server passed to
// ConnectServers and not disconnected since.
func (m *Manager) sourceMetas() map[string]events.SourceMeta {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.sources)
}

// Tools returns the session's tools, sorted by name: live tools of
// connected servers and deferred tools of servers still connecting.
func (m *Manager) Tools() []*Tool {
	m.viewMu.Lock()
	vt := m.view.Tools()
	m.viewMu.Unlock()
	out := make([]*Tool, len(vt))
	for i, t := range vt {
		out[i] = m.newTool(t)
	}
	return out
}

// waitForConnection returns nil once the named server is connected. While a
// connect is in flight it waits for it (bounded by ctx and by the connect's
// own timeout) and returns its error; with nothing in flight it returns an
// error wrapping [ErrNotConnected] ("MCP server not connected: <name>").
func (m *Manager) waitForConnection(ctx context.Context, name string) error {
	m.mu.Lock()
	s := m.servers[name]
	if s == nil || s.ending() {
		m.mu.Unlock()
		return notConnected(name)
	}
	if s.conn != nil {
		m.mu.Unlock()
		return nil
	}
	ch := s.connected
	m.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		return ctx.Err()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.connErr != nil {
		return s.connErr
	}
	if s.ending() || s.conn == nil {
		return notConnected(name)
	}
	return nil
}

// Close disconnects every server, stops the manager's goroutines and waits
// for them and for the store to hold every event recorded. Later ConnectServers calls fail with [ErrClosed]. Close is
// idempotent and safe to call concurrently.
func (m *Manager) Close(ctx context.Context) error {
	err := m.DisconnectAll(ctx)
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	// Servers connected by calls racing with Close.
	if err2 := m.DisconnectAll(ctx); err == nil {
		err = err2
	}
	m.mu.Lock()
	m.stopping = true
	m.mu.Unlock()
	m.cancel()
	m.closeShare()
	// Goroutines that wait for a recording stop waiting once ctx ends.
	stopWaits := context.AfterFunc(ctx, m.out.abandonNow)
	m.wg.Wait()
	stopWaits()
	// The calls' events, recorded without waiting, are stored by now,
	// unless the store stopped answering and ctx ended first.
	m.closeOutbox(ctx)
	if ferr := m.j.Flush(ctx); err == nil && !errors.Is(ferr, journal.ErrClosed) {
		err = ferr
	}
	if n := m.out.lostEvents(); n > 0 || ctx.Err() != nil && err != nil {
		m.log.Error("MCP lifecycle events not recorded: the store did not answer before Close's context ended",
			"session", m.session, "events", n+m.j.Backlog())
	}
	// Nothing more is recorded for the session: stop folding the
	// journal's appends into its view (which stays as it is). A cache the
	// manager attached itself goes too.
	detach := func() {
		m.j.Detach(m.viewProj)
		if m.ownCache {
			m.j.Detach(m.cache)
		}
	}
	if ctx.Err() != nil {
		// The journal may be waiting for the store with its lock held:
		// the view stops folding at once, and is detached when it can be.
		m.viewProj.off.Store(true)
		go detach()
	} else {
		detach()
	}
	return err
}
