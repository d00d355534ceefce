package manager

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/manager/internal/conn"
)

// Reconnect defaults.
const (
	defaultReconnectInitial  = 500 * time.Millisecond
	defaultReconnectMax      = 30 * time.Second
	defaultReconnectJitter   = 0.2
	defaultBreakerAttempts   = 5
	defaultBreakerWindow     = 60 * time.Second
	defaultReconnectStableAt = 10 * time.Second
)

// ReconnectPolicy says how a server that dropped comes back. The zero
// value is the default policy: reconnect every transport, first retry
// after about 0.5 s, doubling up to 30 s, ±20 % jitter; after 5 failed
// attempts within 60 s give up (ReconnectGaveUp) until an explicit
// connect, a reload or a config change.
type ReconnectPolicy struct {
	// Disabled turns reconnecting off: a drop ends the server, as a
	// requested disconnect does.
	Disabled bool
	// Initial is the delay before the first retry, doubled for each
	// failed one (default 500ms); Max caps it (default 30s).
	Initial, Max time.Duration
	// Jitter spreads each delay by up to ± this fraction (default 0.2);
	// NoJitter makes delays exact, for tests
	// and golden streams.
	Jitter   float64
	NoJitter bool
	// BreakerAttempts failed attempts within BreakerWindow stop the
	// reconnects (defaults 5 and 60s). A connection that drops within
	// StableAfter of its connect counts as a failed attempt (default 10s).
	BreakerAttempts int
	BreakerWindow   time.Duration
	StableAfter     time.Duration
}

// withDefaults fills the zero fields of p.
func (p ReconnectPolicy) withDefaults() ReconnectPolicy {
	if p.Initial <= 0 {
		p.Initial = defaultReconnectInitial
	}
	if p.Max <= 0 {
		p.Max = defaultReconnectMax
	}
	if p.Jitter <= 0 {
		p.Jitter = defaultReconnectJitter
	}
	if p.NoJitter {
		p.Jitter = 0
	}
	if p.BreakerAttempts <= 0 {
		p.BreakerAttempts = defaultBreakerAttempts
	}
	if p.BreakerWindow <= 0 {
		p.BreakerWindow = defaultBreakerWindow
	}
	if p.StableAfter <= 0 {
		p.StableAfter = defaultReconnectStableAt
	}
	return p
}

// delay returns the wait before retry n (1 for the first retry after a
// drop): Initial doubled n-1 times, capped at Max, with jitter.
func (p ReconnectPolicy) delay(n int) time.Duration {
	d := p.Initial
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	if p.Jitter > 0 {
		d = time.Duration(float64(d) * (1 + p.Jitter*(2*rand.Float64()-1)))
	}
	return d
}

// retry is the pending reconnect of a server record, set when the server
// dropped: its owner goroutine waits out delay before the next attempt.
type retry struct {
	delay time.Duration
	// n counts the retries since the server was last stable; it sets the
	// next delay.
	n int
	// now cuts the delay short ([Manager.ReconnectNow]).
	now conn.Kick
}

func newRetry(delay time.Duration, n int) *retry {
	return &retry{delay: delay, n: n, now: conn.NewKick()}
}

// ReconnectNow makes a reconnecting server's next attempt start at once
// instead of after its backoff delay, as a host's "retry now" does. When
// the attempt is already under way it is left to finish. A server that is
// not reconnecting (connected, never dropped, or given up: connect it
// again instead) fails with [ErrNotReconnecting]; an unknown one with
// [ErrUnknownServer].
func (m *Manager) ReconnectNow(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.servers[name]
	switch {
	case s == nil:
		return &ServerError{Server: name, Op: OpConnect, Err: fmt.Errorf("%w: %s", ErrUnknownServer, name)}
	case s.retry == nil || s.ending() || s.conn != nil:
		return &ServerError{Server: name, Op: OpConnect, Err: fmt.Errorf("%w: %s", ErrNotReconnecting, name)}
	}
	s.retry.now.Send()
	return nil
}

// breaker holds the failed attempts of one server within the breaker's
// window. Requires m.mu.
type breaker struct {
	failures []time.Time
}

// fail records a failed attempt at now and reports how many fell within
// window.
func (b *breaker) fail(now time.Time, window time.Duration) int {
	kept := b.failures[:0]
	for _, t := range b.failures {
		if now.Sub(t) < window {
			kept = append(kept, t)
		}
	}
	b.failures = append(kept, now)
	return len(b.failures)
}

// rearm forgets the failed attempts of name: an explicit connect, a
// reload or a config change gives it a fresh start. Requires m.mu.
func (m *Manager) rearm(name string) { delete(m.breakers, name) }

// noteFailure records a failed attempt of name (a failed reconnect or a
// connection that dropped before it was stable) and reports whether the
// breaker tripped. Requires m.mu.
func (m *Manager) noteFailure(name string) (tripped bool, count int) {
	b := m.breakers[name]
	if b == nil {
		b = &breaker{}
		m.breakers[name] = b
	}
	count = b.fail(m.now(), m.reconnect.BreakerWindow)
	return count >= m.reconnect.BreakerAttempts, count
}

// gatelessRound returns a round without a startup gate for a server that
// connects on its own (a reconnect): its events are never held for a gate.
// Requires m.mu (it becomes s.round).
func gatelessRound(s *server) *round {
	r := newRound(0, []*server{s})
	r.snap = true
	close(r.emitted)
	return r
}

// waitRetry waits out s's reconnect delay and records the attempt's
// ConnectStarted. It reports false when s was torn down meanwhile.
func (m *Manager) waitRetry(s *server) bool {
	t := time.NewTimer(s.retry.delay)
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return false
	case <-t.C:
	case <-s.retry.now:
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.ending() {
		return false
	}
	m.attempts[s.name]++
	m.setState(s, stDialing, conn.Attempt(m.attempts[s.name]))
	m.emitDeferred("", &events.ConnectStarted{Server: s.name, Transport: s.cfg.Transport(), Attempt: m.attempts[s.name]})
	return true
}

// retryAfterFailure decides what follows a failed reconnect attempt of s:
// another attempt (ConnectFailed, ReconnectScheduled; it returns true and
// s.retry is set for it) or giving up (ConnectFailed, ReconnectGaveUp;
// false).
func (m *Manager) retryAfterFailure(s *server, err error, took time.Duration, timedOut bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	failed := &events.ConnectFailed{Server: s.name, Error: err.Error(), Duration: took, TimedOut: timedOut}
	if s.ending() {
		return false
	}
	tripped, count := m.noteFailure(s.name)
	if tripped {
		m.emitDeferred("", failed, &events.ReconnectGaveUp{Server: s.name, Attempts: count, LastError: err.Error()})
		m.log.Warn("MCP server keeps failing; reconnecting stopped", "server", s.name, "attempts", count, "err", err)
		return false
	}
	n := s.retry.n + 1
	s.retry = newRetry(m.reconnect.delay(n), n)
	m.setState(s, stBackoff, conn.Retry(s.retry.delay, m.now()), conn.Failed(failed.Error))
	m.emitDeferred("", failed, &events.ReconnectScheduled{
		Server: s.name, Attempt: m.attempts[s.name] + 1, DelayMs: s.retry.delay.Milliseconds(), Cause: err.Error(),
	})
	return true
}

// awaitReconnect waits until the manager is done with s's connection lc,
// which cut off a call, and reports whether s is reconnecting then (a
// call made now waits for the reconnect), not ending.
func (m *Manager) awaitReconnect(ctx context.Context, s *server, lc *liveConn) bool {
	select {
	case <-lc.gone:
	case <-ctx.Done():
		return false
	}
	return !s.ending()
}
