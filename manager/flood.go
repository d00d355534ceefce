package manager

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
)

// What a server asks of the host (elicitation, sampling, roots) and what
// it tells of its resources is bounded per connection, so a server that
// sends them in a loop can fill neither the host's memory nor the store:
//
//   - at most maxServerRequests requests of each method are in flight; one
//     more is declined at once, without asking the host;
//   - at most serverRequestRate elicitation and sampling requests a second
//     are taken (each is recorded as a pair of events); the rest of that
//     second's are declined at once, so every request the host answered is
//     in the record;
//   - notifications/resources/updated for a URI the session did not
//     subscribe to is dropped; a subscribed resource's updates are
//     recorded (and passed to Options.OnResourceUpdated) at most once per
//     resourceUpdateInterval: the first at once, the others of the
//     interval as one ResourceUpdated at its end (Coalesced).
//
// What was declined or dropped is counted and recorded as one
// ServerMessagesLimited, a second after the first of them, like the drop
// summary of server logs. The goroutine that records these summaries and
// the coalesced updates is started at a connection's first need, so
// servers that never flood cost none; it ends with the server, and what
// it had not recorded then is dropped with the connection.

// Limits of what a server asks of the host and tells it unasked.
const (
	// maxServerRequests is how many requests of one method
	// (elicitation/create, sampling/createMessage, roots/list) one
	// connection may have in flight.
	maxServerRequests = 8
	// serverRequestRate is how many elicitation and sampling requests of
	// one connection are taken per second.
	serverRequestRate = 10
	// resourceUpdateInterval is the shortest time between two recorded
	// updates of one resource.
	resourceUpdateInterval = time.Second
	// maxDeclinedRequests is how many requests of one connection may be
	// declined in a second: a server that sends more is disconnected
	// (and reconnected like a server that dropped). Each request costs
	// the go-sdk a goroutine until its answer is written, and a server
	// that floods requests without reading its answers would otherwise
	// hold them all.
	maxDeclinedRequests = 1000
)

// Methods the limits count.
const (
	methodElicit          = "elicitation/create"
	methodSample          = "sampling/createMessage"
	methodRoots           = "roots/list"
	methodResourceUpdated = "notifications/resources/updated"
)

// errTooManyRequests answers a sampling or roots request declined by the
// limits.
var errTooManyRequests = errors.New("too many requests from this server: declined")

// floodLimiter is the state of one connection's limits. Its fields are
// guarded by the manager's mutex.
type floodLimiter struct {
	inFlight map[string]int // by method
	start    time.Time      // of the current one-second window of elicitation and sampling
	n        int            // requests taken in the window

	dstart time.Time // of the current one-second window of declined requests
	dn     int       // requests declined in it

	declined, ignored map[string]int // by method, since the last summary
	summaryAt         time.Time      // when the pending summary is due; zero: none

	subscribed map[string]bool       // the server's own URIs the session subscribed to
	updates    map[string]*uriUpdate // subscribed URIs with a recent ResourceUpdated

	due     chan struct{} // (cap 1) the loop has something new to record later
	looping bool          // the loop was started
}

// uriUpdate is the recent updates of one resource.
type uriUpdate struct {
	last    time.Time // when the last ResourceUpdated of it was recorded
	pending int       // updates since then, not yet recorded
}

// newFloodLimiter returns the limits of a new connection.
func newFloodLimiter() floodLimiter {
	return floodLimiter{inFlight: map[string]int{}, declined: map[string]int{}, ignored: map[string]int{},
		subscribed: map[string]bool{}, updates: map[string]*uriUpdate{}, due: make(chan struct{}, 1)}
}

// admit takes a request of method from s on lc, or counts it declined. A
// taken request must be ended with [Manager.endRequest].
func (m *Manager) admit(s *server, lc *liveConn, method string) bool {
	now := time.Now()
	m.mu.Lock()
	f := &lc.flood
	ok := !s.ending() && f.inFlight[method] < maxServerRequests
	if ok && method != methodRoots {
		if f.start.IsZero() || now.Sub(f.start) >= time.Second {
			f.start, f.n = now, 0
		}
		if ok = f.n < m.requestRate; ok {
			f.n++
		}
	}
	if ok {
		f.inFlight[method]++
		m.mu.Unlock()
		return true
	}
	start, drop := false, false
	if !s.ending() {
		f.declined[method]++
		start = m.floodDueLocked(f, now)
		if f.dstart.IsZero() || now.Sub(f.dstart) >= time.Second {
			f.dstart, f.dn = now, 0
		}
		if f.dn++; f.dn > maxDeclinedRequests && !lc.flooded {
			lc.flooded, drop = true, true
			// The connection ends before the summary is due, and its
			// loop with it: record what was declined now.
			if summary := f.takeSummary(s.name); summary != nil {
				m.emitDeferred("", summary)
			}
		}
	}
	m.mu.Unlock()
	if start {
		m.goOwned(func() { m.floodLoop(s, lc) })
	}
	if drop {
		m.goOwned(func() {
			m.log.Warn("MCP server floods requests; disconnecting it", "server", s.name, "limit", maxDeclinedRequests)
			// Ending the process ends the answers it does not read; the
			// server's goroutine records the end.
			if lc.proc != nil {
				lc.proc.Terminate()
			} else {
				lc.cs.Close()
			}
		})
	}
	return false
}

// endRequest ends a request that admit took.
func (m *Manager) endRequest(lc *liveConn, method string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	lc.flood.inFlight[method]--
}

// floodDueLocked notes that f has something to record later: the summary
// is due a second after its first count. It reports whether the caller
// must start the loop. Requires m.mu.
func (m *Manager) floodDueLocked(f *floodLimiter, now time.Time) (start bool) {
	if f.summaryAt.IsZero() && (len(f.declined) > 0 || len(f.ignored) > 0) {
		f.summaryAt = now.Add(time.Second)
	}
	select {
	case f.due <- struct{}{}:
	default:
	}
	start = !f.looping
	f.looping = true
	return start
}

// rootsLimit is the client middleware that declines roots/list requests
// over maxServerRequests in flight; the go-sdk answers the others itself.
func (m *Manager) rootsLimit(s *server, lc *liveConn) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != methodRoots {
				return next(ctx, method, req)
			}
			if !m.admit(s, lc, methodRoots) {
				return nil, errTooManyRequests
			}
			defer m.endRequest(lc, methodRoots)
			return next(ctx, method, req)
		}
	}
}

// resourceUpdated records a server's notifications/resources/updated of a
// subscribed resource, coalesced (see above), and tells the host
// (Options.OnResourceUpdated). It runs on the connection's reading
// goroutine, so it never waits for the store.
func (m *Manager) resourceUpdated(s *server, lc *liveConn) func(context.Context, *mcp.ResourceUpdatedNotificationRequest) {
	return func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		if req.Params == nil {
			return
		}
		uri := req.Params.URI
		now := time.Now()
		if s.ending() {
			return // on its way out: not worth m.mu
		}
		m.mu.Lock()
		if s.ending() {
			m.mu.Unlock()
			return
		}
		f := &lc.flood
		start := false
		var ev *events.ResourceUpdated
		if !f.subscribed[uri] {
			f.ignored[methodResourceUpdated]++
			start = m.floodDueLocked(f, now)
		} else if u := f.updates[uri]; u == nil || now.Sub(u.last) >= resourceUpdateInterval {
			ev = &events.ResourceUpdated{Server: s.name, URI: lc.res.ScrubListedURL(uri)}
			if u != nil {
				ev.Coalesced = u.pending
			}
			f.updates[uri] = &uriUpdate{last: now}
			m.emitDeferred("", ev)
		} else {
			u.pending++
			start = m.floodDueLocked(f, now)
		}
		m.mu.Unlock()
		if start {
			m.goOwned(func() { m.floodLoop(s, lc) })
		}
		if ev != nil && m.opts.OnResourceUpdated != nil {
			m.opts.OnResourceUpdated(s.name, ev.URI)
		}
	}
}

// subscribed notes that the session subscribed to (or unsubscribed from)
// the server's own uri on lc.
func (m *Manager) subscribed(lc *liveConn, uri string, on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if on {
		lc.flood.subscribed[uri] = true
		return
	}
	delete(lc.flood.subscribed, uri)
	delete(lc.flood.updates, uri)
}

// floodLoop records, when each is due, the summaries of what the limits
// of lc declined or dropped and the coalesced updates of subscribed
// resources, until s is torn down.
func (m *Manager) floodLoop(s *server, lc *liveConn) {
	f := &lc.flood
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-f.due:
		}
		for {
			m.mu.Lock()
			next := f.nextDue()
			m.mu.Unlock()
			if next.IsZero() {
				break
			}
			if wait := time.Until(next); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-s.ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
			m.mu.Lock()
			if s.ending() {
				m.mu.Unlock()
				return
			}
			summary, updates := f.takeDue(s.name, lc, time.Now())
			var evs []events.Event
			if summary != nil {
				evs = append(evs, summary)
			}
			for _, u := range updates {
				evs = append(evs, u)
			}
			if len(evs) > 0 {
				m.emitDeferred("", evs...)
			}
			m.mu.Unlock()
			if summary != nil {
				m.log.Warn("MCP server messages declined or dropped", "server", s.name,
					"declined", summary.Declined, "ignored", summary.Ignored)
			}
			if m.opts.OnResourceUpdated != nil {
				for _, u := range updates {
					m.opts.OnResourceUpdated(s.name, u.URI)
				}
			}
		}
	}
}

// nextDue returns when the loop has to record next: the summary or the
// end of a resource's interval with updates pending; zero when nothing is
// pending. Requires m.mu.
func (f *floodLimiter) nextDue() time.Time {
	next := f.summaryAt
	for _, u := range f.updates {
		if u.pending > 0 {
			if at := u.last.Add(resourceUpdateInterval); next.IsZero() || at.Before(next) {
				next = at
			}
		}
	}
	return next
}

// takeSummary returns the summary of what was declined or ignored since
// the last one (nil when nothing was) and resets the counts. Requires
// m.mu.
func (f *floodLimiter) takeSummary(server string) *events.ServerMessagesLimited {
	f.summaryAt = time.Time{}
	if len(f.declined) == 0 && len(f.ignored) == 0 {
		return nil
	}
	summary := &events.ServerMessagesLimited{Server: server}
	if len(f.declined) > 0 {
		summary.Declined = f.declined
	}
	if len(f.ignored) > 0 {
		summary.Ignored = f.ignored
	}
	f.declined, f.ignored = map[string]int{}, map[string]int{}
	return summary
}

// takeDue returns what is due at now: the summary (nil when not due or
// empty) and the coalesced updates, in URI order, and resets their
// counts. Updates of resources idle for an interval are forgotten.
// Requires m.mu.
func (f *floodLimiter) takeDue(server string, lc *liveConn, now time.Time) (*events.ServerMessagesLimited, []*events.ResourceUpdated) {
	var summary *events.ServerMessagesLimited
	if !f.summaryAt.IsZero() && !now.Before(f.summaryAt) {
		summary = f.takeSummary(server)
	}
	var updates []*events.ResourceUpdated
	for _, uri := range slices.Sorted(maps.Keys(f.updates)) {
		u := f.updates[uri]
		if now.Sub(u.last) < resourceUpdateInterval {
			continue
		}
		if u.pending == 0 {
			delete(f.updates, uri)
			continue
		}
		updates = append(updates, &events.ResourceUpdated{Server: server, URI: lc.res.ScrubListedURL(uri), Coalesced: u.pending - 1})
		u.last, u.pending = now, 0
	}
	return summary, updates
}
