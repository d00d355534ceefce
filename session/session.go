// Package session is the agent-session side of mcplife: a session holds a
// tool registry (the agent's own tools plus the mcp_ tools of its manager),
// keeps it current by subscribing to the manager's tool-view updates, and
// runs the reload flow.
//
// Example:
//
//	s, err := session.Start(ctx, session.Options{Cwd: dir, Home: home, LookupEnv: os.LookupEnv, Journal: j})
//	if err != nil { ... }
//	defer s.Close(ctx)
//	for _, t := range s.Tools() { fmt.Println(t.Name) }
package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/manager"
)

// MCPPrefix starts the name of every tool that comes from an MCP server.
const MCPPrefix = "mcp_"

// Tool is one entry of a session's tool registry.
type Tool struct {
	Name        string
	Description string
	InputSchema json.RawMessage
	// Path says where the tool comes from: "mcp:<server> via <provider>"
	// for MCP tools, or whatever the agent chose for its own tools.
	Path string
	// Call runs the tool.
	Call func(ctx context.Context, args json.RawMessage) (*manager.CallResult, error)
	// MCP is the manager tool behind an mcp_ tool; nil for the agent's own.
	MCP *manager.Tool
}

// Options configure [Start].
type Options struct {
	// ID is the session id, which is also its event stream; empty means a
	// new random id.
	ID string
	// Journal records the session's events (required unless MCP is
	// disabled).
	Journal *journal.Journal
	// Cwd, Home and LookupEnv are the discovery inputs (see
	// [loader.Options]).
	Cwd       string
	Home      string
	LookupEnv loader.EnvLookup
	// ExtraConfigs are further config files (see [loader.Options]).
	ExtraConfigs []string
	// EnableMCP nil means true; false skips discovery entirely.
	EnableMCP *bool
	// EnableProjectConfig nil means true (see [loader.Options]).
	EnableProjectConfig *bool
	// Gate is the startup gate (default [manager.DefaultGate]).
	Gate time.Duration
	// Tools are the agent's own, non-MCP tools.
	Tools []Tool
	// Logger receives per-server errors and late failures; nil discards.
	Logger *slog.Logger
	// Manager, when set, is used instead of creating one (its session id
	// wins over ID). The session then does not close it.
	Manager *manager.Manager
	// ManagerOptions are passed to [manager.New] when the session creates
	// the manager; Cwd, Gate, Logger and Resolver are filled in when empty.
	ManagerOptions *manager.Options
}

// Session is one agent session. All methods are safe for concurrent use.
type Session struct {
	id      string
	opts    Options
	log     *slog.Logger
	mgr     *manager.Manager
	ownsMgr bool
	load    *loader.LoadResult
	loadOpt loader.Options

	cancel context.CancelFunc
	done   chan struct{}

	// refreshMu serialises RefreshMCPTools, so an older view never
	// replaces a newer one.
	refreshMu sync.Mutex

	mu        sync.Mutex
	own       []Tool
	mcp       []Tool
	active    map[string]bool // nil: every tool is active
	changes   chan struct{}
	closed    bool
	subagents []*Session
}

// Start starts a session. With MCP disabled it only holds opts.Tools.
// Otherwise it records SessionStarted, runs [loader.DiscoverAndLoad]
// (logging each per-server error), and subscribes to the manager's updates
// so later connects, drops and list changes refresh its tools.
func Start(ctx context.Context, opts Options) (*Session, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Session{id: opts.ID, opts: opts, log: log, own: slices.Clone(opts.Tools), changes: make(chan struct{}, 1), done: make(chan struct{})}
	if s.id == "" {
		s.id = NewID()
	}
	if opts.EnableMCP != nil && !*opts.EnableMCP {
		close(s.done)
		s.cancel = func() {}
		return s, nil
	}
	s.loadOpt = loader.Options{
		Cwd: opts.Cwd, Home: opts.Home, LookupEnv: opts.LookupEnv,
		ExtraConfigs: opts.ExtraConfigs, EnableProjectConfig: opts.EnableProjectConfig, Logger: log,
	}
	if opts.Manager != nil {
		s.mgr = opts.Manager
		s.id = opts.Manager.Session()
	} else {
		if opts.Journal == nil {
			return nil, errors.New("session: Options.Journal is required when MCP is enabled")
		}
		mo := manager.Options{}
		if opts.ManagerOptions != nil {
			mo = *opts.ManagerOptions
		}
		if mo.Cwd == "" {
			mo.Cwd = opts.Cwd
		}
		if mo.Gate == 0 {
			mo.Gate = opts.Gate
		}
		if mo.Logger == nil {
			mo.Logger = log
		}
		if mo.Resolver == nil {
			mo.Resolver = loader.NewResolver(opts.LookupEnv, &loader.ResolverOptions{Dir: opts.Cwd, Logger: log})
		}
		m, err := manager.New(opts.Journal, s.id, &mo)
		if err != nil {
			return nil, fmt.Errorf("session: %w", err)
		}
		s.mgr, s.ownsMgr = m, true
		gate := mo.Gate
		if gate == 0 {
			gate = manager.DefaultGate
		}
		if err := m.Record(ctx, &events.SessionStarted{Cwd: opts.Cwd, Gate: gate, Options: map[string]string{
			"enableProjectConfig": strconv.FormatBool(opts.EnableProjectConfig == nil || *opts.EnableProjectConfig),
			"extraConfigs":        strconv.Itoa(len(opts.ExtraConfigs)),
		}}); err != nil {
			m.Close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("session: %w", err)
		}
	}
	// Subscribe before loading, so no update is missed.
	wctx, cancel := context.WithCancel(context.Background())
	updates, err := s.mgr.Watch(wctx)
	if err != nil {
		cancel()
		s.closeOwned(ctx)
		return nil, fmt.Errorf("session: watch manager: %w", err)
	}
	s.cancel = cancel
	go s.follow(updates)

	if opts.Manager == nil {
		res, err := loader.DiscoverAndLoad(ctx, s.mgr, s.loadOpt)
		if err != nil {
			s.Close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("session: load MCP tools: %w", err)
		}
		s.load = res
		for _, e := range res.Errors {
			log.Error("MCP tool load failed", "path", e.Path, "error", e.Error)
		}
	}
	s.RefreshMCPTools()
	return s, nil
}

// follow refreshes the session on every manager update until the watch
// ends. Owned by the session: Close cancels and waits for it.
func (s *Session) follow(updates <-chan manager.Update) {
	defer close(s.done)
	for range updates {
		s.RefreshMCPTools()
	}
}

// ID returns the session id (its event stream).
func (s *Session) ID() string { return s.id }

// Manager returns the session's manager (nil when MCP is disabled).
func (s *Session) Manager() *manager.Manager { return s.mgr }

// LoadResult returns the result of the initial discovery and load (nil
// when MCP is disabled or the manager was given).
func (s *Session) LoadResult() *loader.LoadResult { return s.load }

// RefreshMCPTools replaces every mcp_ tool of the registry with the
// manager's latest view. The selection of active tools is kept: tools that
// were active stay active; new tools become active only when every tool
// was active (no explicit selection).
func (s *Session) RefreshMCPTools() {
	if s.mgr == nil {
		return
	}
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	var fresh []Tool
	for _, lt := range loader.LoadedTools(s.mgr.Tools()) {
		t := lt.Tool
		fresh = append(fresh, Tool{
			Name: lt.Name, Description: t.Description, InputSchema: t.InputSchema, Path: lt.Path, MCP: t,
			Call: func(ctx context.Context, args json.RawMessage) (*manager.CallResult, error) { return t.Call(ctx, args) },
		})
	}
	s.mu.Lock()
	changed := !sameNames(s.mcp, fresh) || deferredChanged(s.mcp, fresh)
	s.mcp = fresh
	s.mu.Unlock()
	if changed {
		select {
		case s.changes <- struct{}{}:
		default:
		}
	}
}

func sameNames(a, b []Tool) bool {
	return slices.EqualFunc(a, b, func(x, y Tool) bool { return x.Name == y.Name })
}

func deferredChanged(a, b []Tool) bool {
	for i := range min(len(a), len(b)) {
		if a[i].MCP.Deferred != b[i].MCP.Deferred {
			return true
		}
	}
	return false
}

// Changes returns a channel that receives (coalesced) after the session's
// tool list changed.
func (s *Session) Changes() <-chan struct{} { return s.changes }

// Tools returns every tool of the registry, sorted by name: the agent's own
// and the mcp_ tools.
func (s *Session) Tools() []Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append(slices.Clone(s.own), s.mcp...)
	slices.SortStableFunc(out, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ActiveTools returns the active tools, sorted by name.
func (s *Session) ActiveTools() []Tool {
	all := s.Tools()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active == nil {
		return all
	}
	return slices.DeleteFunc(all, func(t Tool) bool { return !s.active[t.Name] })
}

// SetActive selects the active tools by name; nil makes every tool active
// again. Names not in the registry are kept, so a tool of a server that is
// reconnecting becomes active again when it returns.
func (s *Session) SetActive(names []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if names == nil {
		s.active = nil
		return
	}
	s.active = make(map[string]bool, len(names))
	for _, n := range names {
		s.active[n] = true
	}
}

// Tool returns the named tool.
func (s *Session) Tool(name string) (Tool, bool) {
	for _, t := range s.Tools() {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// Reload disconnects every server, rediscovers, reconnects and refreshes
// the registry. The manager records ReloadRequested and ReloadCompleted.
func (s *Session) Reload(ctx context.Context) (*manager.ConnectResult, error) {
	if s.mgr == nil {
		return nil, errors.New("session: MCP is disabled")
	}
	res, err := s.mgr.Reload(ctx, loader.Discoverer(s.mgr, s.loadOpt))
	s.RefreshMCPTools()
	if res != nil {
		for name, e := range res.Errors {
			s.log.Error("MCP tool load failed", "path", "mcp:"+name, "error", e)
		}
	}
	return res, err
}

// Subagent returns a session that shares this session's manager and
// connections (no second spawn) and follows its later changes too. It has
// its own registry holding tools plus the mcp_ tools. Closing it does not
// disconnect anything.
func (s *Session) Subagent(tools []Tool) (*Session, error) {
	if s.mgr == nil {
		return Start(context.Background(), Options{EnableMCP: new(bool), Tools: tools, Logger: s.log})
	}
	sub, err := Start(context.Background(), Options{Manager: s.mgr, Tools: tools, Logger: s.log})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.subagents = append(s.subagents, sub)
	s.mu.Unlock()
	return sub, nil
}

// Close stops following the manager; a session that created its manager
// also closes it (disconnecting every server), closes its subagents, and
// records SessionClosed. Idempotent.
func (s *Session) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	subs := s.subagents
	s.mu.Unlock()
	for _, sub := range subs {
		sub.Close(ctx)
	}
	s.cancel()
	<-s.done
	return s.closeOwned(ctx)
}

func (s *Session) closeOwned(ctx context.Context) error {
	if !s.ownsMgr {
		return nil
	}
	err := s.mgr.Close(ctx)
	if rerr := s.mgr.Record(context.WithoutCancel(ctx), &events.SessionClosed{Reason: "closed"}); rerr != nil {
		err = errors.Join(err, rerr)
	}
	return err
}

// DiscoverServers discovers and loads MCP tools without an agent session:
// it creates a manager on j (a new session id unless id is set) and returns
// the loader's result; the caller owns result.Manager and closes it.
func DiscoverServers(ctx context.Context, j *journal.Journal, id string, opts loader.Options, mo *manager.Options) (*loader.LoadResult, error) {
	if id == "" {
		id = NewID()
	}
	o := manager.Options{}
	if mo != nil {
		o = *mo
	}
	if o.Cwd == "" {
		o.Cwd = opts.Cwd
	}
	if o.Resolver == nil {
		o.Resolver = loader.NewResolver(opts.LookupEnv, &loader.ResolverOptions{Dir: opts.Cwd, Logger: opts.Logger})
	}
	m, err := manager.New(j, id, &o)
	if err != nil {
		return nil, err
	}
	res, err := loader.DiscoverAndLoad(ctx, m, opts)
	if err != nil {
		m.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return res, nil
}

// NewID returns a new session id: the UTC time (so ids sort by start) and
// random hex.
func NewID() string {
	var b [4]byte
	rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}
