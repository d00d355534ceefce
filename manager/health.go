package manager

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/proc"
)

// Health defaults.
const (
	// defaultHealthInterval is how often a connected server is pinged.
	defaultHealthInterval = 30 * time.Second
	// defaultHealthTimeout is how long a ping may take before the server
	// counts as unresponsive.
	defaultHealthTimeout = 10 * time.Second
	// defaultClockCheck is how often the manager compares the wall clock
	// with the monotonic clock to notice that the host slept.
	defaultClockCheck = 5 * time.Second
	// defaultSleepThreshold is how far the wall clock must run ahead of
	// the monotonic clock between two checks to count as a sleep.
	defaultSleepThreshold = 10 * time.Second
)

// checkHealth pings a connected server (see serve for when). A server
// that fails a ping (no answer within Options.Health.Timeout, or a transport error;
// a server that does not know ping passes) is unresponsive: its
// connection is closed, and the server's goroutine records Disconnected with
// reason unresponsive, which a reconnect follows. It reports false then.
func (m *Manager) checkHealth(s *server, lc *liveConn) bool {
	if m.ping(s, lc) {
		return true
	}
	m.mu.Lock()
	lc.unresponsive = !s.ending()
	m.mu.Unlock()
	m.log.Warn("MCP server did not answer a health check", "server", s.name)
	lc.cs.Close() // serve notices the end and the drop is recorded
	return false
}

// ping reports whether the server answered a ping in time.
func (m *Manager) ping(s *server, lc *liveConn) bool {
	ctx, cancel := context.WithTimeout(lc.ctx, m.opts.Health.Timeout)
	defer cancel()
	err := lc.cs.Ping(ctx, nil)
	if err == nil || s.ctx.Err() != nil {
		return true
	}
	if e, ok := errors.AsType[*jsonrpc.Error](err); ok && e.Code == jsonrpc.CodeMethodNotFound {
		return true // answers, just not to ping
	}
	return false
}

// scanDescendants asks for a scan of a stdio server's descendants; the
// answer comes on the channel (nil for other servers: never).
func (m *Manager) scanDescendants(lc *liveConn) <-chan []proc.Identity {
	if lc.proc == nil {
		return nil
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
		select {
		case s.conn.checkNow <- struct{}{}:
		default: // a check is due already
		}
	}
}

// procScanner answers descendants queries of many servers with one pass
// over /proc: a query waits up to scanBatch for others to join it, so a
// start of 200 servers reads /proc once or twice, not 200 times.
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
// channel with the next pass.
func (ps *procScanner) query(pid int) <-chan []proc.Identity {
	ch := make(chan []proc.Identity, 1)
	ps.mu.Lock()
	if ps.pending == nil {
		ps.pending = map[int][]chan []proc.Identity{}
		time.AfterFunc(scanBatch, ps.scan)
	}
	ps.pending[pid] = append(ps.pending[pid], ch)
	ps.mu.Unlock()
	return ch
}

// scan answers every pending query with one pass over /proc.
func (ps *procScanner) scan() {
	ps.mu.Lock()
	pending := ps.pending
	ps.pending = nil
	ps.mu.Unlock()
	found := proc.DescendantsOf(slices.Collect(maps.Keys(pending)))
	for pid, chs := range pending {
		for _, ch := range chs {
			ch <- found[pid]
		}
	}
}
