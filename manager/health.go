package manager

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/proc"
)

// Health defaults.
const (
	// defaultHealthInterval is how often a connected server is checked.
	defaultHealthInterval = 30 * time.Second
	// defaultHealthTimeout is how long a health check may take before the
	// server counts as unresponsive.
	defaultHealthTimeout = 10 * time.Second
	// defaultClockCheck is how often the manager compares the wall clock
	// with the monotonic clock to notice that the host slept.
	defaultClockCheck = 5 * time.Second
	// defaultSleepThreshold is how far the wall clock must run ahead of
	// the monotonic clock between two checks to count as a sleep.
	defaultSleepThreshold = 10 * time.Second
)

// checkHealth checks that a connected server still answers (see serve
// for when): a ping under the protocols that have one, server/discover
// under 2026-07-28 and later, which dropped ping (see probe). A server
// that does not answer in time (Options.Health.Timeout), or whose
// transport fails, is unresponsive: its connection is closed, and the
// server's goroutine records Disconnected with reason unresponsive, which
// a reconnect follows. A server/discover answered with an error of
// another era (the method unknown, the version no longer supported) is
// no sign of an unresponsive server but of one that changed: its
// connection is closed too, and the reconnect probes its era again.
// checkHealth reports false when it closed the connection.
func (m *Manager) checkHealth(s *server, lc *liveConn) bool {
	h := m.probe(s, lc)
	if h == healthOK {
		return true
	}
	m.mu.Lock()
	if h == healthOtherEra {
		lc.eraChanged = !s.ending()
	} else {
		lc.unresponsive = !s.ending()
	}
	m.mu.Unlock()
	if h == healthOtherEra {
		s.eraProbe.Store(true) // the reconnect probes, whatever era is recorded
		m.log.Warn("MCP server answered a health check as a server of another protocol era; connecting again", "server", s.name)
	} else {
		m.log.Warn("MCP server did not answer a health check", "server", s.name)
	}
	lc.cs.Close() // serve notices the end and the drop is recorded
	return false
}

// health is the outcome of one health check.
type health int

const (
	healthOK       health = iota
	healthNoAnswer        // no answer in time, or the transport failed
	healthOtherEra        // server/discover answered with an error of another era
)

// probe runs one health check of lc. A legacy server is pinged; one that
// does not know ping passes. A modern one is sent server/discover on its
// own connection, straight to the wire (see wireTap): a stateless POST
// over streamable HTTP, with the connection's headers, origin rule, OAuth
// token and the request _meta of its protocol, or a request on the pipe
// of a stdio server. Its result passes, as does any other answer (a JSON-RPC error, a request refused
// for authorization), except an error that says the server no longer
// speaks the connection's protocol, or a result whose supported versions
// no longer include it. Only no answer at all counts as unresponsive.
func (m *Manager) probe(s *server, lc *liveConn) health {
	ctx, cancel := context.WithTimeout(probing(lc.ctx), m.opts.Health.Timeout)
	defer cancel()
	var version string
	if init := lc.cs.InitializeResult(); init != nil {
		version = init.ProtocolVersion
	}
	if !modernEra(version) {
		err := lc.cs.Ping(ctx, nil)
		if err == nil || lc.ctx.Err() != nil {
			return healthOK // the end of the connection is serve's to notice
		}
		if e, ok := errors.AsType[*jsonrpc.Error](err); ok && e.Code == jsonrpc.CodeMethodNotFound {
			return healthOK // answers, just not to ping
		}
		return healthNoAnswer
	}
	res, err := mcp.CallCustomMethod[*mcp.DiscoverParams, *mcp.DiscoverResult](ctx, lc.cs, methodDiscover, &mcp.DiscoverParams{})
	switch {
	case lc.ctx.Err() != nil:
		return healthOK
	case err == nil:
		if !slices.Contains(res.SupportedVersions, version) {
			return healthOtherEra
		}
		return healthOK
	}
	if e, ok := errors.AsType[*jsonrpc.Error](err); ok {
		if e.Code == jsonrpc.CodeMethodNotFound || e.Code == mcp.CodeUnsupportedProtocolVersion {
			return healthOtherEra
		}
		return healthOK // an answer, if not a result
	}
	if _, auth := needsAuthOf(err); auth {
		return healthOK // an answer about authorization, for the next call to follow
	}
	return healthNoAnswer
}

// wireTap is the connection's place in the client's sending middleware
// nearest the wire. It keeps when the server last answered a request
// other than a health check with a result (a connection in use needs no
// check), and it lets a health check go straight to the wire, past the
// middleware added after it: a check answered on the way (from a result
// kept of the server's discover) would check nothing.
type wireTap struct {
	send mcp.MethodHandler // the chain below: set when the tap is added

	mu sync.Mutex
	at time.Time // (mu) the last answer; zero: none
}

// inner is the client's first (innermost) sending middleware. It notes
// the answers of the requests sent through it; results that never left
// the client (the go-sdk's cache of lists, an answer made up on the way)
// do not reach it. A listen request is not counted: the go-sdk does not
// wait for its answer.
func (w *wireTap) inner(next mcp.MethodHandler) mcp.MethodHandler {
	w.send = next
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		switch {
		case err != nil, method == "ping", method == methodDiscover, method == methodListen,
			strings.HasPrefix(method, "notifications/"):
		default:
			now := time.Now()
			w.mu.Lock()
			w.at = now
			w.mu.Unlock()
		}
		return res, err
	}
}

// outer is the client's last (outermost) sending middleware: a health
// check (see probing) goes from it to the wire at once.
func (w *wireTap) outer(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ctx.Value(probingKey{}) != nil {
			return w.send(ctx, method, req)
		}
		return next(ctx, method, req)
	}
}

// probingKey marks the context of a health check's request.
type probingKey struct{}

// probing returns ctx marked as a health check's.
func probing(ctx context.Context) context.Context { return context.WithValue(ctx, probingKey{}, true) }

// answeredWithin reports whether the server answered a request within d.
func (w *wireTap) answeredWithin(d time.Duration) bool {
	w.mu.Lock()
	at := w.at
	w.mu.Unlock()
	return !at.IsZero() && time.Since(at) < d
}

// listenEnded is called by the transport when the subscriptions/listen
// stream of lc ended without its final response: the server restarted or
// the stream was cut, and the notifications it carried stopped coming.
// The connection is ended (lc.ctx), so serve records the drop and the
// reconnect subscribes again.
func (m *Manager) listenEnded(s *server, lc *liveConn, err error) {
	m.mu.Lock()
	lc.listenCut = lc.ctx.Err() == nil && !s.ending()
	cut := lc.listenCut
	m.mu.Unlock()
	if !cut {
		return
	}
	m.log.Warn("MCP server's subscriptions/listen stream ended without its final response", "server", s.name, "err", lc.res.ScrubText(err.Error()))
	lc.cancel()
}

// scanDescendants asks for a scan of a stdio server's descendants; the
// answer comes on the channel (nil for other servers: never). forget
// withdraws the question, when its asker no longer waits for the answer.
func (m *Manager) scanDescendants(lc *liveConn) (answer <-chan []proc.Identity, forget func()) {
	if lc.proc == nil {
		return nil, func() {}
	}
	return m.scanner.query(lc.proc.Pid())
}

// recordDescendants records the stdio server's descendants in ids that
// were not seen before, so a later process can reap them if this host
// dies.
func (m *Manager) recordDescendants(s *server, lc *liveConn, seen map[proc.Identity]bool, ids []proc.Identity) {
	var fresh []events.ProcessRef
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			fresh = append(fresh, events.ProcessRef{Pid: id.Pid, StartTime: id.StartTime})
		}
	}
	if len(fresh) == 0 {
		return
	}
	slices.SortFunc(fresh, func(a, b events.ProcessRef) int { return a.Pid - b.Pid })
	m.mu.Lock()
	defer m.mu.Unlock()
	if !s.ending() && s.conn == lc {
		m.emitDeferred("", &events.ProcessesSeen{Server: s.name, Pids: fresh})
	}
}

// clockWatch notices that the host slept: the wall clock (the journal's
// clock, without its monotonic reading) ran ahead of the monotonic clock.
// It records HostResumed and health-checks every remote server at once,
// since their connections may have died while the host was away.
func (m *Manager) clockWatch() {
	t := time.NewTicker(m.opts.Sleep.ClockCheck)
	defer t.Stop()
	mono, wall := time.Now(), m.now().Round(0)
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		}
		mono2, wall2 := time.Now(), m.now().Round(0)
		slept := wall2.Sub(wall) - mono2.Sub(mono)
		mono, wall = mono2, wall2
		if slept < m.opts.Sleep.Threshold {
			continue
		}
		m.hostResumed(slept)
	}
}

// hostResumed records HostResumed and asks every connected remote server
// for a health check now.
func (m *Manager) hostResumed(slept time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.emitDeferred("", &events.HostResumed{SleptMs: slept.Milliseconds()})
	for _, s := range m.servers {
		if s.conn == nil || s.ending() || s.cfg.Transport() == events.TransportStdio {
			continue
		}
		s.conn.checkNow.Send() // unless a check is due already
	}
}

// procScanner answers descendants queries of many servers with one pass
// over /proc: a query waits up to scanBatch for others to join it, so a
// start of 200 servers reads /proc once or twice, not 200 times. A query
// withdrawn before the pass (its connection ended) is not answered, and a
// pass with no query left reads nothing.
type procScanner struct {
	mu      sync.Mutex
	pending map[int][]chan []proc.Identity // (mu) queries of the next pass, by root pid
}

// scanBatch is how long a descendants query waits for others to join it:
// long enough that a burst of connects shares one pass, that a server
// started through a package runner has started its real process, and that
// the pass stays off the startup path it follows.
const scanBatch = 500 * time.Millisecond

// query asks for the descendants of pid; they come on the returned
// channel with the next pass, unless forget was called before it.
func (ps *procScanner) query(pid int) (answer <-chan []proc.Identity, forget func()) {
	ch := make(chan []proc.Identity, 1)
	ps.mu.Lock()
	if ps.pending == nil {
		ps.pending = map[int][]chan []proc.Identity{}
		time.AfterFunc(scanBatch, ps.scan)
	}
	ps.pending[pid] = append(ps.pending[pid], ch)
	ps.mu.Unlock()
	return ch, func() { ps.forget(pid, ch) }
}

// forget withdraws the query of pid answered on ch, if the pass has not
// taken it yet.
func (ps *procScanner) forget(pid int, ch chan []proc.Identity) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	chs := slices.DeleteFunc(ps.pending[pid], func(c chan []proc.Identity) bool { return c == ch })
	if len(chs) == 0 {
		delete(ps.pending, pid)
	} else {
		ps.pending[pid] = chs
	}
}

// scan answers every pending query with one pass over /proc; with none
// pending it reads nothing.
func (ps *procScanner) scan() {
	ps.mu.Lock()
	pending := ps.pending
	ps.pending = nil
	ps.mu.Unlock()
	if len(pending) == 0 {
		return // every query was withdrawn: their connections ended
	}
	found := proc.DescendantsOf(slices.Collect(maps.Keys(pending)))
	for pid, chs := range pending {
		for _, ch := range chs {
			ch <- found[pid]
		}
	}
}
