package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/proc"
	"github.com/mcplife/mcplife/internal/shared"
	"github.com/mcplife/mcplife/manager/internal/conn"
	"github.com/mcplife/mcplife/manager/internal/transport"
	"github.com/mcplife/mcplife/projector"
)

// ConnectServers connects the given servers in parallel (for each:
// validate, resolve substitutions, dial, initialize under the server's
// timeout, first tools/list) and returns at the startup gate
// ([Options.Gate]): when every connect and first tools/list settled, or
// when the gate elapsed. Servers still pending then are served from the
// tool cache (deferred tools) when it holds a list for their server and
// config; the others are awaited. Pending servers keep connecting in the
// background; their tools replace the deferred ones when they arrive, and
// failures after the gate are logged once.
//
// sources carries each server's source metadata (kept even before a
// connection completes). Servers already connected or connecting are not
// connected again; their tools stay. An invalid config yields a
// validation error for that server only. ConnectServers returns an error
// only when the manager is closed or ctx ends before the gate (then with
// the partial result). Events the store refuses are logged at Error, as
// every failed append is.
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
			switch s := m.servers[c.Name]; {
			case s == nil:
			case s.mach.State() == stDropped && !s.stops.Asked(): // reconnecting, or about to end
				wait = append(wait, s.decided)
			case s.ending(): // asked to disconnect, or leaving
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
		m.rearm(name) // an explicit connect gives the breaker a fresh start
		m.forgetNeedsAuth(name)
		starting = append(starting, m.newServer(cfg, hash))
	}
	var r *round
	if len(starting) > 0 {
		m.round++
		r = newRound(m.round, starting)
		for _, s := range starting {
			s.round = r
			evs = append(evs, &events.ConnectStarted{
				Server: s.name, Transport: m.connectTransport(s.cfg), Attempt: m.attempts[s.name] + 1, Round: r.id,
			})
		}
	}
	// The round's first events are queued under m.mu, so no teardown of
	// these servers can record its Disconnected before their
	// ConnectStarted. They do not wait for the store: the gate's
	// StartupGateElapsed, queued after them, does. Servers that start
	// quickly settle before roundLinger ends, and the gate's commit then
	// stores these events too: no commit of the writer competes with the
	// servers' processes as they start.
	switch {
	case r != nil:
		m.emitLingering(roundLinger, evs...)
	case len(evs) > 0:
		m.emitDeferred("", evs...)
	}
	for name, d := range found {
		m.discovered[name] = d
	}
	for _, s := range starting {
		m.attempts[s.name]++
		m.noteState(s, conn.Attempt(m.attempts[s.name]))
		m.servers[s.name] = s
		m.wg.Go(func() { m.run(s) })
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
		if s := m.servers[name]; s != nil && s.conn != nil && !s.ending() {
			res.Connected = append(res.Connected, name)
		}
	}
	m.mu.Unlock()
	res.Tools = m.Tools()
	return res, ctxErr
}

// roundLinger is how long the journal may hold a connect round's first
// events for the gate's commit (see ConnectServers).
const roundLinger = 25 * time.Millisecond

// newServer returns the record of a server about to connect.
func (m *Manager) newServer(cfg events.ServerConfig, hash string) *server {
	s := &server{
		mach:      conn.New(m.now()),
		name:      cfg.Name,
		cfg:       cfg.Clone(),
		hash:      hash,
		timeout:   timeoutOf(cfg),
		connected: make(chan struct{}),
		calls:     &callGroup{},
		subs:      newResourceSubs(),
		stops:     conn.NewInbox[*stopCmd](m.ctx),
		done:      make(chan struct{}),
	}
	s.ctx = s.stops.Context()
	// Only a remote server may use OAuth: any other's context is none.
	if t := cfg.Transport(); m.auth.a == nil || (t != events.TransportHTTP && t != events.TransportSSE) {
		s.authKnown = true
	}
	return s
}

// sortedConfigs returns configs sorted by name, first occurrence of each
// name only.
func sortedConfigs(configs []events.ServerConfig) []events.ServerConfig {
	out := make([]events.ServerConfig, 0, len(configs))
	seen := map[string]bool{}
	for _, c := range configs {
		if seen[c.Name] {
			continue
		}
		seen[c.Name] = true
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b events.ServerConfig) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// timeoutOf returns the connect (and list) timeout of cfg; 0 means none.
func timeoutOf(cfg events.ServerConfig) time.Duration {
	if cfg.TimeoutMs == nil {
		if cfg.Transport() == events.TransportStdio && packageRunner(cfg.Command) {
			return defaultPackageRunnerTimeout
		}
		return defaultTimeout
	}
	if *cfg.TimeoutMs <= 0 {
		return 0
	}
	return time.Duration(*cfg.TimeoutMs) * time.Millisecond
}

// packageRunner reports whether command runs a package that its first run
// downloads: npx, uvx, bunx or pipx, by path or name, with or without a
// Windows extension.
func packageRunner(command string) bool {
	base := strings.ToLower(command)
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	base = strings.TrimSuffix(strings.TrimSuffix(base, ".cmd"), ".exe")
	switch base {
	case "npx", "uvx", "bunx", "pipx":
		return true
	}
	return false
}

// run is the goroutine that owns one server record, the only one that
// changes its state: it connects, lists the tools, serves the connection
// (serve) and, when the connection ends on its own, records the drop and
// connects again after the reconnect policy's delay, until it is asked
// to disconnect (it tears the server down itself: tearDown), fails for
// good or its reconnects give up. Its events do not wait for the store: the journal
// stores them in the order they are recorded, and the gate's
// StartupGateElapsed, recorded after them and waited for, is stored only
// once they are, so ConnectServers returns with them stored and in the
// view.
func (m *Manager) run(s *server) {
	s.mach.Own()
	first := s.round
	defer first.settle(s.name, &ServerError{Server: s.name, Op: OpConnect, Err: fmt.Errorf("%w: %s", ErrDisconnected, s.name)})
	for {
		lc, last, cut, ok := m.establish(s)
		if !ok {
			return
		}
		if !cut && !m.serve(s, lc, last) {
			m.tearDown(s) // asked to disconnect
			return
		}
		if !m.drop(s, lc) {
			return
		}
	}
}

// establish runs one connect of s: the reconnect delay first when s
// dropped before, then dial and initialize (again after each failed
// attempt of a reconnect, until the breaker trips), the first tools/list,
// and the start of resource and prompt lists. It returns the connection
// and the hash of the tool list recorded, and ok false when the record
// ended (the connect failed for good, or it was asked to disconnect and
// tore the server down). A connection that ended on its own during the first list
// comes back with cut set: the caller records the drop.
func (m *Manager) establish(s *server) (lc *liveConn, last string, cut, ok bool) {
	m.mu.Lock()
	r, reconnect := s.round, s.retry != nil
	m.mu.Unlock()
	var (
		begin time.Time
		err   error
	)
	// A reconnecting record waits out its delay before each attempt, and
	// a failed attempt schedules the next one until the breaker trips.
	for {
		if reconnect && !m.waitRetry(s) {
			m.settleConnect(s, notConnected(s.name))
			m.tearDown(s)
			return nil, "", false, false
		}
		begin = m.now()
		lc, err = m.connect(s)
		if _, auth := needsAuthOf(err); err == nil || !reconnect || s.ctx.Err() != nil || auth {
			break // a server that needs a login waits for it, not for a retry
		}
		if !m.retryAfterFailure(s, err, m.now().Sub(begin), errors.Is(err, ErrTimeout)) {
			m.setState(s, stClosing)
			m.settleConnect(s, err)
			m.endRecord(s)
			return nil, "", false, false
		}
	}
	if err != nil {
		if s.ctx.Err() != nil { // asked to disconnect: the connect was cancelled
			m.settleConnect(s, err)
			m.tearDown(s)
			return nil, "", false, false
		}
		to := stClosing
		if _, auth := needsAuthOf(err); auth {
			to = stNeedsAuth
		}
		m.setState(s, to)
		late := r.enter(s.name)
		m.emitDeferred("", &events.ConnectFailed{Server: s.name, Error: err.Error(), Duration: m.now().Sub(begin), TimedOut: errors.Is(err, ErrTimeout)})
		if ne, ok := needsAuthOf(err); ok {
			m.markNeedsAuth(s, ne)
		}
		// The record goes before the gate settles, so a caller that sees
		// the failure no longer finds the server running (a config edit
		// right after would otherwise count it as removed).
		m.settleConnect(s, err)
		m.endRecord(s)
		r.settle(s.name, err)
		r.leave()
		if late {
			m.log.Warn("MCP server failed to connect", "server", s.name, "err", err)
		}
		return nil, "", false, false
	}

	init := lc.cs.InitializeResult()
	end := m.now()
	if lc.first != nil {
		end = lc.first.start
	}
	connected := &events.ServerConnected{Server: s.name, Duration: end.Sub(begin)}
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
	lc.res.ScrubConnected(connected)
	m.sharedConnected(connected)
	if lc.proc != nil {
		id := lc.proc.Identity()
		connected.Pid, connected.Pgid, connected.StartTime = id.Pid, id.Pgid, id.StartTime
	}
	r.enter(s.name)
	if lc.era != nil {
		m.emitDeferred("", lc.era, connected)
	} else {
		m.emitDeferred("", connected)
	}
	r.leave()
	m.publishSplice(s, lc, connected.ProtocolVersion)
	m.setState(s, stListing)
	m.mu.Lock()
	s.conn = lc
	s.connectedAt = m.now()
	s.deferred = false
	close(s.connected)
	m.mu.Unlock()
	// The end of the connection cancels lc.ctx, which the owner's select
	// and every request on the connection watch: the session's Wait
	// returning (this goroutine), or the process exiting.
	c := lc // the goroutines' own: lc is a result, set again by each return
	m.wg.Go(func() {
		c.waitErr = c.cs.Wait()
		close(c.ended)
		c.cancel()
	})
	if c.proc != nil {
		c.proc.AfterExit(c.cancel)
	}
	if c.setLevel {
		m.wg.Go(func() { m.setServerLogLevel(s, c) }) // beside the first tools/list, not before it
	}

	// A list still fresh in the cache stands for the first tools/list of
	// a connection whose protocol has cache hints; a list_changed on the
	// connection re-lists as ever.
	listStart := m.now()
	var (
		defs      []events.ToolDef
		hints     events.CacheHints
		cached    projector.Cached[[]events.ToolDef]
		fromCache bool
	)
	if f := lc.first; f != nil { // listed by the connect (era.go)
		listStart, defs, hints, err = f.start, f.defs, f.hints, f.err
	} else if cached, fromCache = m.freshTools(s, lc); fromCache {
		defs, hints, err = cached.List, cached.Hints, m.takeList(s, len(cached.List))
	} else {
		defs, hints, err = m.listTools(lc.ctx, s, lc)
	}
	// An attach answer stands for the first list at most: a later one
	// follows a change.
	lc.attach = nil
	if s.ctx.Err() != nil {
		// Asked to disconnect (the command cancelled the list, and a
		// list that succeeded meanwhile is dropped too): the teardown
		// records Disconnected.
		m.tearDown(s)
		return nil, "", false, false
	}
	if lc.ctx.Err() != nil {
		// The connection ended during the list: a drop, recorded by the
		// caller; the round settles as for a connection that failed.
		r.settle(s.name, &ServerError{Server: s.name, Op: OpConnect, Err: fmt.Errorf("%w: %s", ErrDisconnected, s.name)})
		return lc, "", true, true
	}
	m.yield("run.listed", s.name)
	late := r.enter(s.name)
	if ne, auth := needsAuthOf(err); auth && m.listNeedsAuth(s, lc, r, late, m.now().Sub(listStart), err, ne) {
		return nil, "", false, false
	}
	if err != nil {
		m.emitDeferred("", &events.ToolsListFailed{Server: s.name, Error: err.Error(), Duration: m.now().Sub(listStart)})
	} else {
		cause := events.CauseInitial
		switch {
		case reconnect:
			cause = events.CauseReconnect
		case late:
			cause = events.CauseLate
		}
		listed := m.listed(s, lc, defs, m.now().Sub(listStart), cause)
		listed.CacheHints = hints
		if fromCache {
			listed.Cause, listed.CacheAge, listed.Duration = events.CauseCache, cached.Age, 0
		}
		last = listed.ToolsHash
		m.emitDeferred("", listed)
	}
	m.setState(s, stReady)
	r.settle(s.name, err)
	r.leave()
	if late && err != nil {
		m.log.Warn("MCP tool load failed", "server", s.name, "err", err)
	}
	m.wg.Go(func() { m.surfaceLists(s, c, reconnect) })
	return lc, last, false, true
}

// settleConnect settles the connect of s that did not connect: waiters
// see err.
func (m *Manager) settleConnect(s *server, err error) {
	if err != nil {
		m.noteState(s, conn.Failed(err.Error()))
	}
	m.mu.Lock()
	s.connErr = err
	close(s.connected)
	m.mu.Unlock()
}

// connect resolves substitutions, builds the transport and runs initialize
// (or server/discover) under the server's timeout. The transport is closed
// when initialization fails. Errors are scrubbed of resolved secrets. A
// server that contradicts its recorded era is connected once more, with
// the probe on the wire (era.go).
func (m *Manager) connect(s *server) (*liveConn, error) {
	lc, err := m.connectEra(s, false)
	if errors.Is(err, errEraContradicted) {
		lc, err = m.connectEra(s, true)
	}
	return lc, err
}

// connectEra is one connect of s; probe set, it ignores the era recorded
// for the server.
func (m *Manager) connectEra(s *server, probe bool) (*liveConn, error) {
	ctx := s.ctx
	res := transport.Resolve(ctx, s.name, s.cfg, m.opts.Resolver, m.log)
	var t mcp.Transport
	var err error
	if tr := res.Cfg.Transport(); tr == events.TransportHTTP || tr == events.TransportSSE {
		err = events.CheckURL(res.Cfg.URL) // its references are expanded only now
	}
	if err == nil {
		res.OAuth = m.oauthHandler(s, res.Cfg)
		if res.OAuth != nil {
			m.knownAuthContext(s, m.authContext(ctx, res.Cfg.URL))
		}
		if m.opts.Dial != nil {
			t, err = m.dialHost(ctx, s, res)
		} else if m.sharing(res.Cfg) {
			t, err = m.dialShared(ctx, s, res)
		} else {
			t, err = m.dial(s.name, res.Cfg, res, m.opts.Cwd)
		}
	}
	if err != nil {
		return nil, m.connectError(s, res, nil, err)
	}
	lc := &liveConn{relist: make(chan struct{}, 1), checkNow: conn.NewKick(), ended: make(chan struct{}), gone: make(chan struct{}), res: res,
		resourcesChanged: make(chan struct{}, 1), promptsChanged: make(chan struct{}, 1), surfaceReady: make(chan struct{})}
	lc.ctx, lc.cancel = context.WithCancel(s.ctx)
	signal := func(ch chan struct{}) {
		select {
		case ch <- struct{}{}:
		default: // a re-list is already due
		}
	}
	lc.logs.due = make(chan struct{}, 1)
	lc.flood = newFloodLimiter()
	copts := &mcp.ClientOptions{
		Logger:                      m.log,
		ProgressNotificationHandler: lc.progress.notify,
		LoggingMessageHandler:       m.serverLogHandler(s, lc),
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { signal(lc.relist) },
		ResourceListChangedHandler:  func(context.Context, *mcp.ResourceListChangedRequest) { signal(lc.resourcesChanged) },
		PromptListChangedHandler:    func(context.Context, *mcp.PromptListChangedRequest) { signal(lc.promptsChanged) },
		ResourceUpdatedHandler:      m.resourceUpdated(s, lc),
	}
	// A capability is advertised only when the host answers it.
	if m.opts.Elicit != nil {
		copts.ElicitationHandler = m.elicitHandler(s, lc)
	}
	if m.opts.Sample != nil {
		copts.CreateMessageHandler = m.sampleHandler(s, lc)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: m.opts.Client.Name, Version: m.opts.Client.Version}, copts)
	client.AddSendingMiddleware(lc.wire.inner) // first: the innermost, nearest the wire
	if mw := shared.Answering(t); mw != nil {
		// A shared server's attach answered server/discover already: the
		// era takes the answer as the wire's.
		client.AddSendingMiddleware(mw)
		lc.attach = t
	}
	transport.OnListenEnd(t, func(err error) { m.listenEnded(s, lc, err) })
	client.AddReceivingMiddleware(m.rootsLimit(s, lc), lc.listenAcked)
	client.AddRoots(m.rootsFor(s.cfg)...)
	pv := m.offeredVersion(s.cfg)
	ec := m.planEra(s, pv, probe)
	if ec != nil {
		client.AddSendingMiddleware(ec.middleware)
		pv = ec.version(pv)
	}
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if s.timeout > 0 {
		cctx, cancel = context.WithTimeout(ctx, s.timeout)
	}
	client.AddSendingMiddleware(lc.wire.outer) // last: health checks pass every other middleware
	ct, tapped := m.tapWrites(res.Cfg, m.transcribe(s, res, m.spliceable(lc, t)))
	lc.writesTapped = tapped
	cs, err := client.Connect(cctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: pv})
	timedOut := err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded)
	cancel()
	err = withNeedsAuthSeen(res.OAuth, err)
	p := transport.Process(t)
	lc.pool = transport.Pool(t)
	if err != nil {
		lc.cancel()
		if p != nil {
			p.Terminate() // normally done by the go-sdk already
		}
		lc.closeIdle()
		if ec.legacyContradicted() {
			return nil, errEraContradicted
		}
		if timedOut {
			err = &scrubbedError{msg: fmt.Sprintf("Connection to MCP server %q timed out after %dms", s.name, s.timeout.Milliseconds()), cause: ErrTimeout}
		}
		return nil, m.connectError(s, res, p, err)
	}
	lc.cs, lc.proc = cs, p
	if res.OAuth != nil && carriesHints(cs) {
		// The connect may have obtained or refreshed the token; a
		// connection without cache hints lists nothing private.
		lc.authContext = m.authContext(ctx, res.Cfg.URL)
		m.knownAuthContext(s, lc.authContext)
	}
	lc.setLevel, lc.logsPerRequest = m.askForLogs(cs)
	lc.era = ec.detected(s, res, cs.InitializeResult())
	if _, fresh := m.freshTools(s, lc); ec.answeredLocally() && !fresh {
		// The record stood in for server/discover: the first tools/list
		// checks it before the connection is reported. (With a fresh
		// tool list too, the connect makes no request, and the first
		// one made later checks it: see the late path below.)
		f := &firstList{start: m.now()}
		f.defs, f.hints, f.err = m.listTools(lc.ctx, s, lc)
		if ec.localContradicted() {
			lc.cancel()
			cs.Close()
			if p != nil {
				p.Terminate()
			}
			lc.closeIdle()
			return nil, errEraContradicted
		}
		lc.first = f
	}
	if ec.answeredLocally() {
		// A contradiction found later ends the connection; its
		// reconnect probes.
		ec.armLate(func() {
			s.eraProbe.Store(true)
			m.log.Warn("MCP server contradicted its recorded era; reconnecting with a probe", "server", s.name)
			lc.cs.Close()
		})
	}
	return lc, nil
}

// connectError wraps a connect failure as a [*ServerError] whose message
// names the server, carries the exit status and the stderr tail of a
// stdio server, and holds no secret.
func (m *Manager) connectError(s *server, res transport.Resolved, p *proc.Process, err error) error {
	if ne, ok := needsAuthOf(err); ok {
		return needsAuthError(s.name, ne, err)
	}
	if errors.Is(err, ErrTimeout) {
		if p != nil {
			if tail := p.StderrTail(); tail != "" {
				err = &scrubbedError{msg: err.Error() + "; stderr: " + stderrExcerpt(res, tail), cause: err}
			}
		}
		return &ServerError{Server: s.name, Op: OpConnect, Err: err}
	}
	msg := fmt.Sprintf("MCP server %q: connect: %s", s.name, res.ScrubText(err.Error()))
	if p != nil {
		if st := p.ExitStatus(); st != nil {
			msg += fmt.Sprintf(" (process exited with status %d)", *st)
		}
		if tail := p.StderrTail(); tail != "" {
			msg += "; stderr: " + stderrExcerpt(res, tail)
		}
	}
	return &ServerError{Server: s.name, Op: OpConnect, Err: &scrubbedError{msg: msg, cause: err}}
}

// errStderrLimit is how much of a server's stderr an error message quotes.
const errStderrLimit = 4 << 10

// stderrExcerpt returns the end of a server's kept stderr that an error
// quotes: the whole text is scrubbed of res's secrets first and cut to its
// last errStderrLimit bytes after, so a secret that the cut would split is
// redacted whole rather than quoted from its middle on.
func stderrExcerpt(res transport.Resolved, stderr string) string {
	return tailOf(res.ScrubText(stderr), errStderrLimit)
}

// tailOf returns the last n bytes of s, "…" first when it cut, without
// splitting a UTF-8 sequence.
func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return "…" + s[i:]
}

// listed builds the ToolsListed event of a finished list on lc: the
// definitions are scrubbed of the connection's secrets for the record, and
// lc keeps the server's own name of each tool whose recorded name changed.
func (m *Manager) listed(s *server, lc *liveConn, defs []events.ToolDef, d time.Duration, cause events.ListCause) *events.ToolsListed {
	if defs == nil {
		defs = []events.ToolDef{}
	}
	defs, live := lc.res.ScrubTools(defs)
	var annotations map[string]json.RawMessage
	if lc.splice != nil {
		// What the rule for calls cut off by a drop reads of a spliced
		// call's tool, by the server's own name: the record of the tools
		// is gone by the time the call is made again.
		annotations = map[string]json.RawMessage{}
		for _, d := range defs {
			if len(d.Annotations) > 0 {
				annotations[own(live, d.Name)] = d.Annotations
			}
		}
	}
	m.mu.Lock()
	lc.names.tools = live
	lc.annotations = annotations
	m.mu.Unlock()
	return &events.ToolsListed{
		Server: s.name, ConfigHash: s.hash, Tools: defs, ToolsHash: events.HashTools(defs),
		Count: len(defs), Duration: d, Cause: cause,
	}
}

// toolDef converts a go-sdk tool to the recorded definition.
func toolDef(t *mcp.Tool) events.ToolDef {
	d := events.ToolDef{Name: t.Name, Title: t.Title, Description: t.Description}
	d.InputSchema = rawJSON(t.InputSchema)
	d.OutputSchema = rawJSON(t.OutputSchema)
	if t.Annotations != nil {
		d.Annotations = rawJSON(t.Annotations)
	}
	if len(t.Icons) > 0 {
		d.Icons = rawJSON(t.Icons)
	}
	return d
}

// rawJSON marshals v, or returns nil for nil values.
func rawJSON(v any) json.RawMessage {
	switch v := v.(type) {
	case nil:
		return nil
	case json.RawMessage:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return nil
	}
	return b
}
