package manager

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

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
// set, so the next connection tries it again; the reconnect goes on.
//
// Under 2026-07-28 the go-sdk opens a URI's subscriptions/listen stream
// without waiting for its answer, so a subscribe waits for the server's
// notifications/subscriptions/acknowledged naming the URI, which the
// server sends once the subscription is in effect: a subscribe returns
// when the server's updates of the URI will come, and a stream the server
// refused (it answers with an error, never acknowledged) fails, after the
// server's timeout, like a refused resources/subscribe. An explicit disconnect, a reload or a config change
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

// errNotAcknowledged: the server did not acknowledge a subscriptions/listen
// stream within its timeout (it refused it, or does not say).
var errNotAcknowledged = errors.New("the server did not acknowledge the subscription")

// methodListenAcked is the server's acknowledgement of a
// subscriptions/listen stream, naming what it subscribed the stream to.
const methodListenAcked = "notifications/subscriptions/acknowledged"

// listenAcks are the subscribes of one connection waiting for the
// server's acknowledgement, by the server's own URI.
type listenAcks struct {
	mu      sync.Mutex
	waiting map[string][]chan struct{}
}

// wait returns a channel closed when the server acknowledges a
// subscription to uri.
func (a *listenAcks) wait(uri string) chan struct{} {
	ch := make(chan struct{})
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.waiting == nil {
		a.waiting = map[string][]chan struct{}{}
	}
	a.waiting[uri] = append(a.waiting[uri], ch)
	return ch
}

// forget drops the wait ch for uri.
func (a *listenAcks) forget(uri string, ch chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.waiting[uri] = slices.DeleteFunc(a.waiting[uri], func(c chan struct{}) bool { return c == ch })
	if len(a.waiting[uri]) == 0 {
		delete(a.waiting, uri)
	}
}

// acked ends the waits for uris.
func (a *listenAcks) acked(uris []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, uri := range uris {
		for _, ch := range a.waiting[uri] {
			close(ch)
		}
		delete(a.waiting, uri)
	}
}

// listenAcked is the client's receiving middleware of lc that ends the
// waits of the resource subscriptions the server acknowledged.
func (lc *liveConn) listenAcked(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == methodListenAcked {
			if p, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok && p != nil {
				lc.acks.acked(p.Notifications.ResourceSubscriptions)
			}
		}
		return next(ctx, method, req)
	}
}

// subscribeOn subscribes lc to the server's own uri: a resources/subscribe
// answered, or under 2026-07-28 a subscriptions/listen stream the server
// acknowledged within its timeout (one it did not is closed again).
func (m *Manager) subscribeOn(ctx context.Context, s *server, lc *liveConn, uri string) error {
	var acked chan struct{}
	if carriesHints(lc.cs) {
		acked = lc.acks.wait(uri)
	}
	if err := lc.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		if acked != nil {
			lc.acks.forget(uri, acked)
		}
		return err
	}
	if acked == nil {
		return nil
	}
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if s.timeout > 0 {
		wctx, cancel = context.WithTimeout(ctx, s.timeout)
	}
	defer cancel()
	select {
	case <-acked:
		return nil
	case <-lc.ctx.Done():
	case <-wctx.Done():
	}
	lc.acks.forget(uri, acked)
	// The go-sdk keeps the stream as the URI's subscription: closing it
	// lets a later subscribe open another.
	lc.cs.Unsubscribe(context.WithoutCancel(ctx), &mcp.UnsubscribeParams{URI: uri})
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case lc.ctx.Err() != nil:
		return mcp.ErrConnectionClosed
	}
	return fmt.Errorf("%w within %dms", errNotAcknowledged, s.timeout.Milliseconds())
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

// subscriptionConn finds the named server, takes its subscriptions'
// lock and waits for its live connection; release gives the lock back.
func (m *Manager) subscriptionConn(ctx context.Context, server string) (s *server, lc *liveConn, release func(), err error) {
	if s, err = m.subscriptionsOf(server); err != nil {
		return nil, nil, nil, err
	}
	if err = s.subs.acquire(ctx); err != nil {
		return nil, nil, nil, err
	}
	if lc, err = m.liveConnOf(ctx, s); err != nil {
		s.subs.release()
		return nil, nil, nil, err
	}
	return s, lc, s.subs.release, nil
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
// A URI subscribed to twice is subscribed to once: the second subscribe
// asks the server nothing.
func (m *Manager) SubscribeResource(ctx context.Context, server, uri string) error {
	s, lc, release, err := m.subscriptionConn(ctx, server)
	if err != nil {
		return err
	}
	defer release()
	if s.subs.on[uri] == lc {
		return nil // subscribed on this connection already
	}
	own := m.liveName(lc, resourceNames, uri)
	// Noted before the request, so an update that races its answer is
	// recorded; a refused subscription is forgotten again.
	m.subscribed(lc, own, true)
	if err := m.subscribeOn(ctx, s, lc, own); err != nil {
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
	s, lc, release, err := m.subscriptionConn(ctx, server)
	if err != nil {
		return err
	}
	defer release()
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
		err := m.subscribeOn(ctx, s, lc, own)
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
