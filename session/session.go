package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/proc"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/projector"
)

// MCPPrefix starts the name of every tool that comes from an MCP server;
// it is the tool naming's [projector.ToolNamePrefix].
const MCPPrefix = projector.ToolNamePrefix

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

// Options configure [Start]. The zero value (or nil) means: discover
// servers for the process's working directory, home directory and
// environment, and connect them with the manager's defaults.
//
// The session's working directory and logger are those of the options it
// carries: Loader.Cwd (or Manager.Cwd when only that is set) and
// Manager.Logger.
type Options struct {
	// ID is the session id, which is also its event stream; empty means
	// a new one ([journal.NewSessionID]).
	ID string
	// Loader configures discovery. Its Cwd is the session's working
	// directory: the project directory discovery reads, the directory
	// recorded in SessionStarted, and the manager's working directory when
	// Manager.Cwd is empty (for stdio servers without a cwd, and for the
	// default root). Empty means Manager.Cwd, else the process's working
	// directory; a relative directory is made absolute. Other empty fields
	// take the session's defaults: Home from the process
	// ([os.UserHomeDir]), LookupEnv from the process ([os.LookupEnv]) when
	// Env is nil too, Logger from Manager.Logger. Set
	// Loader.DisableProjectConfig to leave project-level config files
	// (those inside the working directory, which can name commands to run)
	// unopened. The same options build the resolver that substitutes env
	// and header values at every connect ([loader.ResolverFor]), so
	// connecting sees the environment discovery saw. Only Cwd and that
	// resolver are used when Servers is set.
	Loader loader.Options
	// Servers, when not nil, replace discovery: the session connects
	// exactly these configs (each with Name set) and reads no config file.
	// An empty, non-nil list connects nothing. Sources holds the source
	// metadata of each, by name (optional); it gives the tools' display
	// paths ("mcp:<server> via <providerName>").
	Servers []events.ServerConfig
	Sources map[string]events.SourceMeta
	// DisableMCP skips discovery and connecting entirely: the session holds
	// only Tools, and Start needs no journal.
	DisableMCP bool
	// Share, when set and Manager.Share is not, attaches the session's
	// stdio servers to the user's shared host ([ServeShared]) instead of
	// starting them in this process ([manager.ShareOptions]). It is
	// recorded in SessionStarted's options ("share").
	Share *manager.ShareOptions
	// Manager configures the session's manager ([manager.New]); nil means
	// defaults. Its Logger is the session's too: it receives per-server
	// errors and late failures (nil discards). Empty Cwd and Resolver are
	// filled in from the session's.
	Manager *manager.Options
	// Tools are the agent's own, non-MCP tools.
	Tools []Tool
	// ToolBudget bounds, in estimated tokens, what the definitions of the
	// MCP tools exposed to the model may cost: each tool's exposed name,
	// description and input schema, estimated by [EstimateTool]. 0 (the
	// default) means no budget.
	//
	// While every MCP tool of the session fits the budget, nothing
	// changes. Over it, [Session.Tools] holds the agent's own tools, the
	// tools of servers whose config sets alwaysLoad, the tools loaded so
	// far, and one search tool ([SearchToolName]) that ranks every tool of
	// the session, held back or not, and loads its matches, recording
	// ToolsActivated (see [Session.LoadTools] for loading by name). The
	// agent calls a loaded tool in its next turn. A loaded tool stays
	// loaded while its server lists it, across re-lists, drops,
	// reconnects and reloads; a list of its server without it unloads it
	// (see [projector.ToolView.LoadedTools]). The budget is recorded in
	// SessionStarted's options ("toolBudget"), so a replay exposes what the
	// session exposed ([Expose]).
	ToolBudget int
	// WatchConfig keeps the servers in step with the config files while
	// the session runs. After the initial discovery it watches every file
	// discovery read and every path where a new config file would be found
	// ([loader.Discovery.WatchPaths]). On a change it rediscovers as Start
	// did and applies the difference ([manager.Manager.ApplyConfigs]):
	// servers added, removed or whose config changed are connected or
	// disconnected, the others keep their connections and calls in flight,
	// and ConfigChanged is recorded first; a change that changes no server
	// records nothing. A file that was read fine before and now reads
	// empty or fails to parse is read again one debounce period later (a
	// save that truncates first and writes after is one edit). A change
	// that cannot be applied (discovery fails, or such a file is still
	// broken or empty) is recorded as ConfigChanged with its error and
	// leaves every server running; the next change is compared with the
	// configs last applied. The session's tools follow as they follow any other change
	// (see [Session.Changes]). Watching stops when the session closes. It
	// needs discovery: with Servers set, or when the initial discovery
	// failed as a whole, nothing is watched.
	WatchConfig bool
	// ToolMode says how the MCP tools are offered: each as a tool of its
	// own (ToolsDirect, the default), or behind two tools whose
	// definitions never change ([ToolsCallTool]). It is recorded in
	// SessionStarted's options ("toolMode") when set.
	ToolMode ToolMode
	// Watcher configures the config watcher of WatchConfig (nil means
	// defaults; an unset Logger is the session's).
	Watcher *loader.WatcherOptions
	// KeepAbandoned leaves the sessions that killed hosts left open
	// alone: Start neither marks them abandoned nor kills the processes
	// they left running ([ReapAbandoned] still can, when called). false
	// (the default) reaps them at Start. Set it when another process
	// owns that cleanup, or when the store is shared with hosts whose
	// processes this one must never touch.
	KeepAbandoned bool
}

// Session is one agent session. All methods are safe for concurrent use.
type Session struct {
	id      string
	log     *slog.Logger
	mgr     *manager.Manager
	ownsMgr bool
	load    *LoadResult
	// discover rediscovers for Reload.
	discover manager.DiscoverFunc
	// watch applies config edits (Options.WatchConfig); nil when off.
	watch *configWatch
	// budget is nil when Options.ToolBudget is 0; a subagent shares its
	// parent's, and parent is the session it was made from.
	budget *budget
	parent *Session

	cancel context.CancelFunc
	done   chan struct{}
	// closeJournal closes the journal and store Start opened for a nil
	// journal (idempotent); nil when the journal is the caller's.
	closeJournal func() error

	// refreshMu serialises RefreshMCPTools, so an older view never
	// replaces a newer one.
	refreshMu sync.Mutex

	mu  sync.Mutex
	own []Tool
	// mcp holds the exposed MCP tools in the order of ExposedTools, after
	// the search tool when the budget applies; mcpIndex finds them by
	// name.
	mcp      []Tool
	mcpIndex map[string]int
	// mode is Options.ToolMode; meta holds the tools of ToolsCallTool
	// (see metaTools).
	mode      ToolMode
	meta      []Tool
	exposure  Exposure
	active    map[string]bool // nil: every tool is active
	changes   chan struct{}
	closed    bool
	subagents []*Session
}

// Start starts a session that records to j. With MCP disabled it only
// holds opts.Tools. Otherwise it creates the session's manager, records
// SessionStarted with this process as its host, reaps the sessions that
// killed hosts left open ([ReapAbandoned], at best effort: a failure is
// logged; not with Options.KeepAbandoned), discovers servers (or takes
// opts.Servers), records what it found and connects the servers,
// returning at the startup gate; each per-server error is logged and kept
// in [Session.LoadResult]. It subscribes to the manager's updates, so
// later connects, drops and list changes refresh its tools.
//
// A nil j records into the default event store, the one `mcp-audit`
// reads when given no --db, so `mcp-audit sessions` lists the session:
// $MCP_AUDIT_DB when set, else $XDG_STATE_HOME/mcplife/events.db, else
// ~/.local/state/mcplife/events.db, a SQLite file created (with its
// directory) when missing. The session opens that store and a journal on
// it (with no bus; host id $MCPLIFE_HOST when set; events the store cannot
// take yet spooled beside the file, as `mcp-audit run` does), and
// [Session.Close] closes both after recording SessionClosed. A journal
// passed in stays the caller's: the session never closes it.
//
// A discovery that fails as a whole still starts the session, without MCP
// tools (see [DiscoverAndLoad]). Start returns an error when the default
// store cannot be opened ($MCP_AUDIT_DB naming a PostgreSQL store is one:
// open it with store/postgres and pass a journal), when the manager cannot
// be created or refuses to connect, or when ctx ends before the gate.
func Start(ctx context.Context, j *journal.Journal, opts *Options) (*Session, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	log := slog.New(slog.DiscardHandler)
	if o.Manager != nil && o.Manager.Logger != nil {
		log = o.Manager.Logger
	}
	s := &Session{id: o.ID, log: log, own: slices.Clone(o.Tools), changes: make(chan struct{}, 1), done: make(chan struct{})}
	if s.id == "" {
		s.id = journal.NewSessionID()
	}
	if o.ToolBudget < 0 {
		return nil, fmt.Errorf("session: ToolBudget %d is negative (0 means no budget)", o.ToolBudget)
	}
	if o.ToolBudget > 0 {
		s.budget = newBudget(o.ToolBudget)
	}
	switch o.ToolMode {
	case ToolsDirect:
	case ToolsCallTool:
		if o.ToolBudget > 0 {
			return nil, fmt.Errorf("session: ToolMode %q and ToolBudget both set: choose one (the call tool's list, or the budget's search tool)", o.ToolMode)
		}
	default:
		return nil, fmt.Errorf("session: unknown ToolMode %q (want %q or empty)", o.ToolMode, ToolsCallTool)
	}
	s.mode = o.ToolMode
	var wopts loader.WatcherOptions
	if o.Watcher != nil {
		wopts = *o.Watcher
	}
	if wopts.Debounce < 0 || wopts.PollInterval < 0 {
		return nil, fmt.Errorf("session: Watcher: negative Debounce (%v) or PollInterval (%v)", wopts.Debounce, wopts.PollInterval)
	}
	if o.DisableMCP {
		close(s.done)
		s.cancel = func() {}
		return s, nil
	}
	cwd := o.Loader.Cwd
	if cwd == "" && o.Manager != nil {
		cwd = o.Manager.Cwd
	}
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("session: working directory: %w", err)
		}
		cwd = wd
	}
	cwd, err := filepath.Abs(cwd)
	if err != nil {
		return nil, fmt.Errorf("session: working directory: %w", err)
	}
	if j == nil {
		dj, err := openDefaultJournal(log)
		if err != nil {
			return nil, err
		}
		j, s.closeJournal = dj.j, dj.close
	}
	if err := s.start(ctx, j, &o, cwd, wopts); err != nil {
		if s.closeJournal != nil {
			err = errors.Join(err, s.closeJournal())
		}
		return nil, err
	}
	return s, nil
}

// start is Start from the journal on: a failure leaves the journal to
// Start.
func (s *Session) start(ctx context.Context, j *journal.Journal, opts *Options, cwd string, wopts loader.WatcherOptions) error {
	o, log := *opts, s.log
	lo := o.Loader
	lo.Cwd = cwd
	if lo.Home == "" {
		// Without a home directory discovery fails as a whole, which the
		// load reports.
		lo.Home, _ = os.UserHomeDir()
	}
	if lo.LookupEnv == nil && lo.Env == nil {
		lo.LookupEnv = os.LookupEnv
	}
	if lo.Logger == nil {
		lo.Logger = log
	}
	var mo manager.Options
	if o.Manager != nil {
		mo = *o.Manager
	}
	if mo.Cwd == "" {
		mo.Cwd = cwd
	}
	if mo.Share == nil {
		mo.Share = o.Share
	}
	if mo.Logger == nil {
		mo.Logger = log
	}
	if mo.Resolver == nil {
		mo.Resolver = loader.ResolverFor(lo, &loader.ResolverOptions{Logger: log})
	}
	m, err := manager.New(j, s.id, &mo)
	if err != nil {
		return fmt.Errorf("session: %w", err)
	}
	s.mgr, s.ownsMgr = m, true
	gate := mo.Gate
	if gate == 0 {
		gate = manager.DefaultGate
	}
	started := &events.SessionStarted{Cwd: cwd, Gate: gate}
	if host, ok := proc.IdentityOf(os.Getpid()); ok {
		started.Host = &events.ProcessRef{Pid: host.Pid, StartTime: host.StartTime}
		started.PidNamespace = events.PidNamespace()
	}
	hostServers := o.Servers != nil
	configs, sources := slices.Clone(o.Servers), maps.Clone(o.Sources)
	if hostServers {
		s.discover = func(context.Context) ([]events.ServerConfig, map[string]events.SourceMeta, error) {
			return configs, sources, nil
		}
		started.Options = map[string]string{"servers": strconv.Itoa(len(configs))}
	} else {
		s.discover = Discoverer(m, lo)
		started.Options = map[string]string{
			"enableProjectConfig": strconv.FormatBool(!lo.DisableProjectConfig),
			"extraConfigs":        strconv.Itoa(len(lo.ExtraConfigs)),
		}
	}
	if o.ToolBudget > 0 {
		started.Options[ToolBudgetOption] = strconv.Itoa(o.ToolBudget)
	}
	if o.ToolMode != ToolsDirect {
		started.Options[ToolModeOption] = string(o.ToolMode)
	}
	if mo.Share != nil {
		started.Options["share"] = "on"
	}
	if len(mo.Roots) > 0 {
		started.Options[RootsOption] = recordedRoots(mo.Roots, mo.Cwd)
	}
	if err := m.RecordSession(ctx, started); err != nil {
		m.Close(context.WithoutCancel(ctx))
		return fmt.Errorf("session: %w", err)
	}
	// Before any server starts: what a killed host left running goes first.
	if !o.KeepAbandoned {
		reapAbandonedAtStart(ctx, j, s.id, log)
	}
	if err := s.follow(); err != nil {
		s.closeOwned(ctx)
		return err
	}
	var res *LoadResult
	var watch *configWatch
	switch {
	case hostServers:
		res, err = loadServers(ctx, m, configs, sources)
	case o.WatchConfig:
		res, err = discoverAndLoad(ctx, m, lo, func(d *loader.Discovery) {
			watch = newConfigWatch(m, log, lo, wopts, d)
		})
	default:
		res, err = DiscoverAndLoad(ctx, m, lo)
	}
	if err != nil {
		if watch != nil {
			watch.stop()
		}
		s.Close(context.WithoutCancel(ctx))
		return fmt.Errorf("session: load MCP tools: %w", err)
	}
	s.load = res
	if watch != nil {
		watch.start(watch.waitReread())
		s.watch = watch
	}
	for _, e := range res.Errors {
		log.Error("MCP tool load failed", "path", e.Path, "error", e.Error)
	}
	s.RefreshMCPTools()
	return nil
}

// ToolBudgetOption is the key of SessionStarted's options that records
// [Options.ToolBudget], when set.
const ToolBudgetOption = "toolBudget"

// RootsOption is the key of SessionStarted's options that records the
// session's roots when the manager's options set them (the default, the
// working directory alone, is not recorded): a JSON array of absolute
// paths.
const RootsOption = "roots"

// recordedRoots is the value of [RootsOption]: roots made absolute as the
// manager makes them, relative ones against cwd.
func recordedRoots(roots []string, cwd string) string {
	abs := make([]string, len(roots))
	for i, r := range roots {
		if !filepath.IsAbs(r) {
			r = filepath.Join(cwd, r)
		}
		abs[i] = filepath.Clean(r)
	}
	b, _ := json.Marshal(abs)
	return string(b)
}

// shared returns a session that uses parent's manager, which it does not
// own, with its own registry of tools plus the manager's tools and
// parent's tool budget; it reloads with parent's discover.
func shared(parent *Session, tools []Tool) (*Session, error) {
	s := &Session{id: parent.mgr.Session(), log: parent.log, mgr: parent.mgr, discover: parent.discover, budget: parent.budget, parent: parent,
		mode: parent.mode, own: slices.Clone(tools), changes: make(chan struct{}, 1), done: make(chan struct{})}
	if err := s.follow(); err != nil {
		return nil, err
	}
	s.RefreshMCPTools()
	return s, nil
}

// follow subscribes to the manager's updates (before anything is loaded,
// so no update is missed) and starts the goroutine that refreshes the
// session on each; Close cancels and waits for it.
func (s *Session) follow() error {
	wctx, cancel := context.WithCancel(context.Background())
	updates, err := s.mgr.Watch(wctx)
	if err != nil {
		cancel()
		close(s.done)
		s.cancel = func() {}
		return fmt.Errorf("session: watch manager: %w", err)
	}
	s.cancel = cancel
	go func() {
		defer close(s.done)
		for range updates {
			s.RefreshMCPTools()
		}
	}()
	return nil
}

// ID returns the session id (its event stream).
func (s *Session) ID() string { return s.id }

// Manager returns the session's manager (nil when MCP is disabled).
func (s *Session) Manager() *manager.Manager { return s.mgr }

// LoadResult returns the result of the initial discovery (or connect of
// [Options.Servers]) and load; nil when MCP is disabled and for a
// subagent.
func (s *Session) LoadResult() *LoadResult { return s.load }

// RefreshMCPTools replaces every mcp_ tool of the registry with the
// manager's latest view, as the tool budget exposes it (see
// [Options.ToolBudget]), in the order of [ExposedTools]. The selection of
// active tools is kept: tools that were active stay active; new tools
// become active only when every tool was active (no explicit selection).
func (s *Session) RefreshMCPTools() {
	if s.mgr == nil {
		return
	}
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	// The view first: a tool listed after it is held back (under a
	// budget) or placed last, until the next refresh, which its own
	// update brings.
	view := s.mgr.View()
	var exp Exposure
	if s.budget != nil {
		exp = s.budget.update(view)
	}
	live := s.mgr.Tools()
	byName := make(map[string]*manager.Tool, len(live))
	for _, t := range live {
		byName[t.Name] = t
	}
	fresh := make([]Tool, 0, len(live)+1)
	if exp.Applied {
		fresh = append(fresh, s.searchTool())
	}
	for _, vt := range ExposedTools(view, exp) {
		if t, ok := byName[vt.Name]; ok {
			fresh = append(fresh, mcpTool(t))
			delete(byName, vt.Name)
		}
	}
	if !exp.Applied {
		for _, t := range live { // newer than the view: last, by name
			if _, ok := byName[t.Name]; ok {
				fresh = append(fresh, mcpTool(t))
			}
		}
	}
	index := make(map[string]int, len(fresh))
	for i, t := range fresh {
		index[t.Name] = i
	}
	s.mu.Lock()
	changed := !sameNames(s.mcp, fresh) || deferredChanged(s.mcp, fresh)
	s.mcp, s.mcpIndex = fresh, index
	s.exposure = exp
	s.mu.Unlock()
	if changed {
		select {
		case s.changes <- struct{}{}:
		default:
		}
	}
}

// mcpTool is the registry entry of the manager's tool t.
func mcpTool(t *manager.Tool) Tool {
	return Tool{
		Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, Path: t.Path(), MCP: t,
		Call: func(ctx context.Context, args json.RawMessage) (*manager.CallResult, error) { return t.Call(ctx, args) },
	}
}

func sameNames(a, b []Tool) bool {
	return slices.EqualFunc(a, b, func(x, y Tool) bool { return x.Name == y.Name })
}

func deferredChanged(a, b []Tool) bool {
	for i := range min(len(a), len(b)) {
		if (a[i].MCP != nil && a[i].MCP.Deferred) != (b[i].MCP != nil && b[i].MCP.Deferred) {
			return true
		}
	}
	return false
}

// Changes returns a channel that receives (coalesced) after the session's
// tool list changed. With [ToolsCallTool] the list offered stays the same;
// the channel then tells of changes to the tools the call tool reaches.
func (s *Session) Changes() <-chan struct{} { return s.changes }

// Tools returns every tool of the registry, in an order that only ever
// grows at its end, so the definitions stay a stable prefix of a model's
// prompt (and of its provider's prompt cache): first the agent's own
// tools, in the order given; then the mcp_ tools in the order they were
// first exposed in the session ([ExposedTools]): a late server's tools, a
// re-list's new tools and tools a search loaded come last, and a tool that
// goes leaves the others in place. Over the tool budget the mcp_ tools are
// the search tool, first, and the exposed ones ([Options.ToolBudget]);
// with [ToolsCallTool], the list tool and the call tool alone.
func (s *Session) Tools() []Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append(slices.Clone(s.own), s.listed()...)
}

// listed returns the mcp_ part of Tools. Requires s.mu.
func (s *Session) listed() []Tool {
	if s.mode == ToolsCallTool && s.mgr != nil {
		return s.metaTools()
	}
	return s.mcp
}

// ActiveTools returns the active tools, in the order of [Session.Tools].
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

// Tool returns the named tool of the registry, as [Session.Tools] would
// list it, without building the list; with [ToolsCallTool] also the MCP
// tools the call tool reaches. An agent's own tool wins over an mcp_ tool
// of the same name.
func (s *Session) Tool(name string) (Tool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.IndexFunc(s.own, func(t Tool) bool { return t.Name == name }); i >= 0 {
		return s.own[i], true
	}
	if s.mode == ToolsCallTool {
		if i := slices.IndexFunc(s.metaTools(), func(t Tool) bool { return t.Name == name }); i >= 0 {
			return s.metaTools()[i], true
		}
	}
	if i, ok := s.mcpIndex[name]; ok {
		return s.mcp[i], true
	}
	return Tool{}, false
}

// WaitReady waits until every MCP server of the session has settled:
// connected with its first tool list, or failed (see
// [manager.Manager.WaitReady]), and then refreshes the registry, so
// [Session.Tools] holds every tool that arrived. It returns nil at once
// when MCP is disabled, ctx.Err() when ctx ends first, and
// [manager.ErrClosed] when the manager was closed.
func (s *Session) WaitReady(ctx context.Context) error {
	if s.mgr == nil {
		return nil
	}
	err := s.mgr.WaitReady(ctx)
	s.RefreshMCPTools()
	return err
}

// Reload disconnects every server, rediscovers, reconnects and refreshes
// the registry. The manager records ReloadRequested and ReloadCompleted.
func (s *Session) Reload(ctx context.Context) (*manager.ConnectResult, error) {
	if s.mgr == nil {
		return nil, errors.New("session: MCP is disabled")
	}
	res, err := s.mgr.Reload(ctx, s.discover)
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
// its own registry holding tools plus the mcp_ tools, under this session's
// tool budget: they share the manager's event stream, so a tool loaded by
// either is loaded for both. Closing it does not disconnect anything.
func (s *Session) Subagent(tools []Tool) (*Session, error) {
	if s.mgr == nil {
		return Start(context.Background(), nil, &Options{DisableMCP: true, Tools: tools, Manager: &manager.Options{Logger: s.log}})
	}
	sub, err := shared(s, tools)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.subagents = append(s.subagents, sub)
	s.mu.Unlock()
	return sub, nil
}

// Close stops watching the config files (see [Options.WatchConfig]) and
// following the manager; a session that created its manager also closes
// it (disconnecting every server), closes its subagents, and records
// SessionClosed. Idempotent.
func (s *Session) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	subs := s.subagents
	s.mu.Unlock()
	if s.watch != nil {
		s.watch.stop()
	}
	for _, sub := range subs {
		sub.Close(ctx)
	}
	s.cancel()
	<-s.done
	return s.closeOwned(ctx)
}

// closeOwned closes the manager the session created and records
// SessionClosed, then closes the journal and store it opened (a nil
// journal given to Start), in that order, so SessionClosed is stored.
func (s *Session) closeOwned(ctx context.Context) error {
	if !s.ownsMgr {
		return nil
	}
	err := s.mgr.Close(ctx)
	// SessionClosed is recorded even when ctx was cancelled, but not past
	// its deadline: a store that stopped answering must not hold Close.
	rctx, cancel := context.WithoutCancel(ctx), context.CancelFunc(func() {})
	if dl, ok := ctx.Deadline(); ok {
		rctx, cancel = context.WithDeadline(rctx, dl)
	}
	defer cancel()
	if rerr := s.mgr.RecordSession(rctx, &events.SessionClosed{Reason: "closed"}); rerr != nil {
		err = errors.Join(err, rerr)
	}
	if s.closeJournal != nil {
		err = errors.Join(err, s.closeJournal())
	}
	return err
}
