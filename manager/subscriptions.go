package manager

import (
	"context"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resource subscriptions belong to the server record, not to one of its
// connections: a connection that replaces a dropped one (a reconnect, or
// the restart of a stdio server that exited) has none of the old one's,
// so the manager subscribes it again to every URI the session is still
// subscribed to. This happens once the new connection's first resource
// list is in (it maps the recorded URIs back to the server's own), before
// the connection's lists count as ready (WaitReady), so a caller that
// waited for the server sees its updates again. Under protocol 2026-07-28
// each subscription is a subscriptions/listen stream of its own, opened on
// the new connection like the first one.
//
// Subscribing is a set, as the go-sdk's is: a URI subscribed twice is
// subscribed once, and one UnsubscribeResource ends it. Neither a
// subscribe nor an unsubscribe is recorded as an event, so subscribing
// again after a reconnect is not either; only ResourceUpdated is. A URI
// the server refuses to be subscribed to again is logged and stays in the
// set, so the next connection tries it again; the reconnect goes on. (The
// go-sdk opens a subscriptions/listen stream without waiting for its
// answer, so under 2026-07-28 a refusal goes unseen, as it does for the
// first subscribe.) An explicit disconnect, a reload or a config change
// of the server ends its record, and the session's subscriptions with it.

// resourceSubs are the resource subscriptions of a server record.
type resourceSubs struct {
	// lock (a semaphore, so a wait for it ends with its context) is held
	// across a change of on and the request to the server it needs, so
	// the server's subscriptions follow on in order, a reconnect's
	// included.
	lock chan struct{}
	// on holds the URIs the session is subscribed to, as the session gave
	// them, each with the connection it was last subscribed on: nil when
	// the latest connection refused it. (lock)
	on map[string]*liveConn
}

func newResourceSubs() resourceSubs {
	return resourceSubs{lock: make(chan struct{}, 1), on: map[string]*liveConn{}}
}

func (rs *resourceSubs) acquire(ctx context.Context) error {
	select {
	case rs.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (rs *resourceSubs) release() { <-rs.lock }

// subscriptionsOf returns the record of the named server.
func (m *Manager) subscriptionsOf(name string) (*server, error) {
	m.mu.Lock()
	s := m.servers[name]
	m.mu.Unlock()
	if s == nil {
		return nil, notConnected(name)
	}
	return s, nil
}

// liveConnOf returns the live connection of s, waiting for its connect or
// reconnect like a call.
func (m *Manager) liveConnOf(ctx context.Context, s *server) (*liveConn, error) {
	if err := m.awaitConnect(ctx, s); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.ending() || s.conn == nil {
		return nil, notConnected(s.name)
	}
	return s.conn, nil
}

// SubscribeResource asks the named server to tell of changes to a
// resource; they become ResourceUpdated events and calls of
// Options.OnResourceUpdated, at most one per second
// (updates in between are coalesced). Updates of resources the session
// did not subscribe to are dropped and counted. The subscription lasts
// across the server's reconnects (the manager subscribes each new
// connection again) until UnsubscribeResource or the server's disconnect.
// A URI subscribed to twice is subscribed to once.
func (m *Manager) SubscribeResource(ctx context.Context, server, uri string) error {
	s, err := m.subscriptionsOf(server)
	if err != nil {
		return err
	}
	if err := s.subs.acquire(ctx); err != nil {
		return err
	}
	defer s.subs.release()
	lc, err := m.liveConnOf(ctx, s)
	if err != nil {
		return err
	}
	own := m.liveName(lc, resourceNames, uri)
	// Noted before the request, so an update that races its answer is
	// recorded; a refused subscription is forgotten again.
	m.subscribed(lc, own, true)
	if err := lc.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: own}); err != nil {
		m.subscribed(lc, own, false)
		delete(s.subs.on, uri)
		return surfaceError(server, "resources/subscribe", lc, err)
	}
	s.subs.on[uri] = lc
	return nil
}

// UnsubscribeResource ends a subscription made with SubscribeResource.
// A subscription the server's current connection does not have (it
// refused it after a reconnect) ends without a request.
func (m *Manager) UnsubscribeResource(ctx context.Context, server, uri string) error {
	s, err := m.subscriptionsOf(server)
	if err != nil {
		return err
	}
	if err := s.subs.acquire(ctx); err != nil {
		return err
	}
	defer s.subs.release()
	lc, err := m.liveConnOf(ctx, s)
	if err != nil {
		return err
	}
	own := m.liveName(lc, resourceNames, uri)
	if on, ok := s.subs.on[uri]; !ok || on == lc {
		if err := lc.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: own}); err != nil {
			return surfaceError(server, "resources/unsubscribe", lc, err)
		}
	}
	m.subscribed(lc, own, false)
	delete(s.subs.on, uri)
	return nil
}

// resubscribe subscribes lc, a new connection of s, to the URIs the
// session is subscribed to that lc is not yet subscribed to (none, on a
// server's first connection), in URI order. A refusal is logged and the
// URI kept for the next connection; the end of lc ends the round, which
// the next connection makes again.
func (m *Manager) resubscribe(s *server, lc *liveConn) {
	if s.subs.acquire(lc.ctx) != nil {
		return
	}
	defer s.subs.release()
	for _, uri := range slices.Sorted(maps.Keys(s.subs.on)) {
		if s.subs.on[uri] == lc {
			continue // subscribed on lc by a caller that came first
		}
		s.subs.on[uri] = nil
		own := m.liveName(lc, resourceNames, uri)
		m.subscribed(lc, own, true)
		ctx, cancel := m.listContext(s, lc)
		err := lc.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: own})
		cancel()
		if err != nil {
			m.subscribed(lc, own, false)
			if lc.ctx.Err() != nil {
				return
			}
			m.log.Warn("MCP server refused a resource subscription after its reconnect; the next connection asks again",
				"server", s.name, "uri", lc.res.ScrubListedURL(own), "err", lc.res.ScrubText(err.Error()))
			continue
		}
		s.subs.on[uri] = lc
	}
}
