package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mcplife/mcplife/events"
)

// round is one ConnectServers call that started connections, with its
// startup gate.
//
// The gate takes a snapshot of which servers have settled; it must not
// see a server half-way through recording its outcome. Servers hold
// emitMu for reading while they record an event and mark themselves
// settled; the gate holds it for writing while it takes the snapshot.
// After the snapshot, servers served from the cache (deferred) record
// nothing until the gate's own events are recorded, so a late tool list
// always follows the cached one it replaces.
type round struct {
	id      int64
	servers map[string]*server

	emitMu  sync.RWMutex
	snap    bool              // (emitMu) the gate took its snapshot
	outcome map[string]string // (emitMu) gate outcome per unsettled server

	mu      sync.Mutex
	results map[string]error // (mu) settled servers; nil error = ready

	settled chan string   // one name per server when it settled
	emitted chan struct{} // closed once StartupGateElapsed was recorded
}

func newRound(id int64, servers []*server) *round {
	r := &round{
		id:      id,
		servers: make(map[string]*server, len(servers)),
		results: make(map[string]error, len(servers)),
		settled: make(chan string, len(servers)),
		emitted: make(chan struct{}),
	}
	for _, s := range servers {
		r.servers[s.name] = s
	}
	return r
}

// enter waits until name may record an event and read-locks emitMu; leave
// unlocks it. late reports whether the event comes after the gate's
// result (a deferred server, or any server once the gate was recorded).
func (r *round) enter(name string) (late bool) {
	for {
		r.emitMu.RLock()
		if !r.snap {
			return false
		}
		select {
		case <-r.emitted:
			return true
		default:
		}
		if r.outcome[name] != events.OutcomeDeferred {
			return false // awaited: part of the gate's result
		}
		r.emitMu.RUnlock()
		<-r.emitted
	}
}

func (r *round) leave() { r.emitMu.RUnlock() }

// settle records name's outcome once and tells the gate. Requires
// r.emitMu held for reading when called between enter and leave.
func (r *round) settle(name string, err error) {
	r.mu.Lock()
	_, done := r.results[name]
	if !done {
		r.results[name] = err
	}
	r.mu.Unlock()
	if !done {
		r.settled <- name // buffered: one slot per server
	}
}

func (r *round) result(name string) (err error, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	err, ok = r.results[name]
	return err, ok
}

// ConnectServers connects the given servers in parallel (SPEC §2 steps
// 2–3) and returns at the startup gate: when every connect and first
// tools/list settled, or when the gate elapsed. Servers still pending then
// are served from the tool cache (deferred tools) when it holds a list for
// their server and config; the others are awaited. Pending servers keep
// connecting in the background; their tools replace the deferred ones
// when they arrive, and failures after the gate are logged once.
//
// sources carries each server's source metadata (kept even before a
// connection completes). Servers already connected or connecting are not
// connected again; their tools stay. An invalid config yields a
// validation error for that server only. ConnectServers returns an error
// only when the manager is closed, the journal refuses the round's first
// events, or ctx ends before the gate (then with the partial result).
func (m *Manager) ConnectServers(ctx context.Context, configs []events.ServerConfig, sources map[string]events.SourceMeta) (*ConnectResult, error) {
	start := m.now()
	res := &ConnectResult{Errors: map[string]error{}}
	cfgs := sortedConfigs(configs)

	// Wait for earlier teardowns of these names, so a reconnect follows
	// the Disconnected of the previous connection.
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, ErrClosed
		}
		var wait []chan struct{}
		for _, c := range cfgs {
			if s := m.servers[c.Name]; s != nil && s.closing {
				wait = append(wait, s.done)
			}
		}
		if len(wait) == 0 {
			break // m.mu stays locked
		}
		m.mu.Unlock()
		m.yield("connect.wait", "")
		for _, w := range wait {
			select {
			case <-w:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}

	var (
		evs      []events.Event
		starting []*server
		inCall   []string
		found    = map[string]discovery{}
	)
	for _, cfg := range cfgs {
		name := cfg.Name
		if src, ok := sources[name]; ok {
			m.sources[name] = src
		}
		if m.servers[name] != nil {
			inCall = append(inCall, name) // connected or pending: no second spawn
			continue
		}
		if err := validateConfig(name, cfg); err != nil {
			res.Errors[name] = err
			evs = append(evs, &events.ServerInvalid{Server: name, Error: err.Error(), Source: m.sources[name]})
			continue
		}
		inCall = append(inCall, name)
		hash := cfg.Hash()
		// A changed source is recorded too: the view (and each tool's
		// display path) takes the source from ServerDiscovered, and a
		// server may come back from another config file after a
		// disconnect.
		if d := (discovery{hash, m.sources[name]}); m.discovered[name] != d {
			evs = append(evs, &events.ServerDiscovered{
				Server: name, Source: d.source, Transport: cfg.Transport(),
				ConfigHash: hash, Config: cfg.Redact(),
			})
			found[name] = d
		}
		s := &server{
			name:      name,
			cfg:       cfg.Clone(),
			hash:      hash,
			timeout:   timeoutOf(cfg),
			connected: make(chan struct{}),
			taskDone:  make(chan struct{}),
			watchDone: make(chan struct{}),
			done:      make(chan struct{}),
		}
		s.ctx, s.cancel = context.WithCancel(m.ctx)
		starting = append(starting, s)
	}
	var r *round
	if len(starting) > 0 {
		m.round++
		r = newRound(m.round, starting)
		for _, s := range starting {
			s.round = r
			evs = append(evs, &events.ConnectStarted{
				Server: s.name, Transport: s.cfg.Transport(), Attempt: m.attempts[s.name] + 1, Round: r.id,
			})
		}
	}
	// The round's first events are recorded under m.mu, so no teardown of
	// these servers can record its Disconnected before their
	// ConnectStarted.
	if len(evs) > 0 {
		if err := m.emit(evs...); err != nil {
			m.round -= int64(min(len(starting), 1))
			m.mu.Unlock()
			for _, s := range starting {
				s.cancel()
			}
			return nil, err
		}
	}
	for name, d := range found {
		m.discovered[name] = d
	}
	for _, s := range starting {
		m.attempts[s.name]++
		m.servers[s.name] = s
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.run(s)
		}()
	}
	m.mu.Unlock()
	m.yield("connect.started", "")

	var ctxErr error
	if r != nil {
		res.Gate, ctxErr = m.gate(ctx, r, start)
		for _, s := range starting {
			if err, ok := r.result(s.name); ok && err != nil {
				res.Errors[s.name] = err
			}
		}
	}
	m.mu.Lock()
	for _, name := range inCall {
		if s := m.servers[name]; s != nil && s.conn != nil && !s.closing {
			res.Connected = append(res.Connected, name)
		}
	}
	m.mu.Unlock()
	res.Tools = m.Tools()
	return res, ctxErr
}

// gate waits for the round's servers or the gate, decides each pending
// server's outcome, waits for the awaited ones, and records the cached
// tools served and StartupGateElapsed.
func (m *Manager) gate(ctx context.Context, r *round, start time.Time) (GateOutcome, error) {
	defer close(r.emitted)
	names := make([]string, 0, len(r.servers))
	for name := range r.servers {
		names = append(names, name)
	}
	slices.Sort(names)

	timer := time.NewTimer(m.opts.Gate)
	defer timer.Stop()
	var ctxErr error
	for n := 0; n < len(names); n++ {
		select {
		case <-r.settled:
			continue
		case <-timer.C:
		case <-ctx.Done():
			ctxErr = ctx.Err()
		}
		break
	}

	outcomes := make(map[string]string, len(names))
	awaited := map[string]bool{}
	var served []events.Event
	var deferred []*server
	m.yield("gate.snapshot", "")
	r.emitMu.Lock()
	r.snap = true
	for _, name := range names {
		if err, ok := r.result(name); ok {
			outcomes[name] = events.OutcomeReady
			if err != nil {
				outcomes[name] = events.OutcomeFailed
			}
			continue
		}
		s := r.servers[name]
		if tools, age, ok := m.cache.Lookup(name, s.hash, m.now()); ok {
			outcomes[name] = events.OutcomeDeferred
			served = append(served, &events.CachedToolsServed{Server: name, ConfigHash: s.hash, Tools: tools, Count: len(tools), CacheAge: age})
			deferred = append(deferred, s)
			continue
		}
		outcomes[name] = events.OutcomeAwaited
		awaited[name] = true
	}
	r.outcome = maps.Clone(outcomes)
	r.emitMu.Unlock()
	if m.opts.OnGate != nil {
		m.opts.OnGate(GateOutcome{Round: r.id, Gate: m.opts.Gate, Outcomes: maps.Clone(outcomes)})
	}

	for len(awaited) > 0 && ctxErr == nil {
		select {
		case name := <-r.settled:
			delete(awaited, name)
		case <-ctx.Done():
			ctxErr = ctx.Err()
		}
	}
	// An awaited server that settled failed is reported as failed.
	for _, name := range names {
		if outcomes[name] == events.OutcomeAwaited {
			if err, ok := r.result(name); ok && err != nil {
				outcomes[name] = events.OutcomeFailed
			}
		}
	}
	g := GateOutcome{Round: r.id, Gate: m.opts.Gate, Elapsed: m.now().Sub(start), Outcomes: outcomes}
	// Mark deferred servers before recording, so a call that sees the
	// deferred tools may record its start.
	m.yield("gate.emit", "")
	m.mu.Lock()
	for _, s := range deferred {
		s.deferred = true
	}
	m.mu.Unlock()
	m.emit(append(served, &events.StartupGateElapsed{Round: r.id, Gate: g.Gate, Elapsed: g.Elapsed, Outcomes: outcomes})...)
	return g, ctxErr
}

// run is the goroutine of one server: connect, first tools/list, then
// re-lists on tools/list_changed until the server is torn down.
func (m *Manager) run(s *server) {
	defer close(s.taskDone)
	r := s.round
	defer r.settle(s.name, &ServerError{Server: s.name, Op: OpConnect, Err: fmt.Errorf("%w: %s", ErrDisconnected, s.name)})
	begin := m.now()

	lc, err := m.connect(s)
	m.yield("run.connected", s.name)
	if err != nil {
		m.mu.Lock()
		tornDown := s.closing
		s.closing = true // this goroutine finishes the failed record itself
		m.mu.Unlock()
		m.yield("run.failed", s.name)
		if !tornDown {
			late := r.enter(s.name)
			m.emit(&events.ConnectFailed{Server: s.name, Error: err.Error(), Duration: m.now().Sub(begin), TimedOut: errors.Is(err, ErrTimeout)})
			r.settle(s.name, err)
			r.leave()
			if late {
				m.log.Warn("MCP server failed to connect", "server", s.name, "err", err)
			}
		}
		m.mu.Lock()
		s.connErr = err
		close(s.connected)
		if !tornDown {
			if m.servers[s.name] == s {
				delete(m.servers, s.name)
			}
			close(s.done)
		}
		close(s.watchDone) // no watcher was started
		m.mu.Unlock()
		return
	}

	init := lc.cs.InitializeResult()
	connected := &events.ServerConnected{Server: s.name, Duration: m.now().Sub(begin)}
	if init != nil {
		connected.ProtocolVersion = init.ProtocolVersion
		connected.Instructions = init.Instructions
		if init.ServerInfo != nil {
			connected.PeerName, connected.PeerVersion = init.ServerInfo.Name, init.ServerInfo.Version
		}
		if init.Capabilities != nil {
			connected.Capabilities, _ = json.Marshal(init.Capabilities)
		}
	}
	r.enter(s.name)
	m.emit(connected)
	r.leave()
	m.yield("run.conn", s.name)
	m.mu.Lock()
	s.conn = lc
	close(s.connected)
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.watch(s, lc)
	}()

	listStart := m.now()
	defs, err := m.listTools(s.ctx, s, lc)
	if s.ctx.Err() != nil {
		return // torn down; the teardown records Disconnected
	}
	m.yield("run.listed", s.name)
	late := r.enter(s.name)
	var last string // hash of the last list recorded
	if err != nil {
		m.emit(&events.ToolsListFailed{Server: s.name, Error: err.Error(), Duration: m.now().Sub(listStart)})
	} else {
		cause := events.CauseInitial
		if late {
			cause = events.CauseLate
		}
		listed := m.listed(s, defs, m.now().Sub(listStart), cause)
		last = listed.ToolsHash
		m.emit(listed)
	}
	r.settle(s.name, err)
	r.leave()
	if late && err != nil {
		m.log.Warn("MCP tool load failed", "server", s.name, "err", err)
	}
	m.relistLoop(s, lc, last)
}

// listed builds the ToolsListed event of a finished list.
func (m *Manager) listed(s *server, defs []events.ToolDef, d time.Duration, cause string) *events.ToolsListed {
	if defs == nil {
		defs = []events.ToolDef{}
	}
	return &events.ToolsListed{
		Server: s.name, ConfigHash: s.hash, Tools: defs, ToolsHash: events.HashTools(defs),
		Count: len(defs), Duration: d, Cause: cause,
	}
}

// relistLoop re-lists the server's tools on each (coalesced)
// notifications/tools/list_changed until the server is torn down.
//
// A server may send the notification in a loop, with or without a change:
// re-lists are at least Options.RelistInterval apart (notifications in
// between are coalesced into one ToolListChanged and one re-list), and a
// list is recorded only when it differs from the last one recorded, so
// the store grows by one small event per interval at most.
func (m *Manager) relistLoop(s *server, lc *liveConn, last string) {
	var prev time.Time
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-lc.relist:
		}
		if !prev.IsZero() {
			if wait := m.opts.RelistInterval - time.Since(prev); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-s.ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
				select {
				case <-lc.relist: // covered by this re-list
				default:
				}
			}
		}
		prev = time.Now()
		m.emit(&events.ToolListChanged{Server: s.name})
		start := m.now()
		defs, err := m.listTools(s.ctx, s, lc)
		if s.ctx.Err() != nil {
			return
		}
		if err != nil {
			m.emit(&events.ToolsListFailed{Server: s.name, Error: err.Error(), Duration: m.now().Sub(start)})
			m.log.Warn("MCP tool re-list failed", "server", s.name, "err", err)
			last = "" // whatever comes next is news
			continue
		}
		listed := m.listed(s, defs, m.now().Sub(start), events.CauseListChanged)
		if listed.ToolsHash == last {
			continue
		}
		last = listed.ToolsHash
		m.emit(listed)
	}
}
