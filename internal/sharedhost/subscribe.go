package sharedhost

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A relay relays resource subscriptions when its server offers them: the
// server is subscribed to a URI once, however many of the relay's
// sessions (the attached hosts) subscribed to it, and unsubscribed when
// the last of them unsubscribed or ended; the server's updates of a URI
// (as the manager records them, at most one a second) go to the sessions
// subscribed to it, which the go-sdk server keeps track of. After the
// server reconnected in the shared host, the shared host's manager
// subscribes its new connection again to what it was subscribed to, so
// the relay's count of a URI's sessions stays the server's.

// unsubscribeTimeout bounds an unsubscribe from the server that no
// request of a host waits for (its session ended, or its listen was
// cancelled).
const unsubscribeTimeout = 30 * time.Second

// subscriptions are a relay's resource subscriptions.
type subscriptions struct {
	// lock (a semaphore, so a wait for it ends with its context) is held
	// across a change of by and the request to the server it needs, so
	// the server's subscriptions follow by in order.
	lock chan struct{}
	by   map[string]map[*mcp.ServerSession]bool // uri → subscribed sessions; (lock)

	qmu sync.Mutex
	// queue holds the URIs updated and not yet told, in the order the
	// server updated them, each once.
	queue    []string
	draining bool // a goroutine is telling the queue's updates
}

func newSubscriptions() *subscriptions {
	return &subscriptions{lock: make(chan struct{}, 1), by: map[string]map[*mcp.ServerSession]bool{}}
}

func (s *subscriptions) acquire(ctx context.Context) error {
	select {
	case s.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *subscriptions) release() { <-s.lock }

// subscribe is the relay's resources/subscribe: the first session to
// subscribe to a URI subscribes the server; a failure of that is the
// session's answer.
func (r *Relay) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri, ss := req.Params.URI, req.Session
	if err := r.subs.acquire(ctx); err != nil {
		return err
	}
	defer r.subs.release()
	r.pruneLocked(ctx)
	set := r.subs.by[uri]
	if set[ss] {
		return nil
	}
	if len(set) == 0 {
		if err := r.mgr.SubscribeResource(ctx, r.server, uri); err != nil {
			return err
		}
		set = map[*mcp.ServerSession]bool{}
		r.subs.by[uri] = set
	}
	set[ss] = true
	return nil
}

// unsubscribe is the relay's resources/unsubscribe (under protocol
// 2026-07-28, the end of the session's subscriptions/listen, whose
// context has ended then): the last session to leave a URI unsubscribes
// the server. The session is no longer subscribed whatever the server
// answers, so a failure of that is not the session's.
func (r *Relay) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unsubscribeTimeout)
	defer cancel()
	if err := r.subs.acquire(ctx); err != nil {
		return nil
	}
	defer r.subs.release()
	r.leaveLocked(ctx, req.Params.URI, req.Session)
	r.pruneLocked(ctx)
	return nil
}

// SessionEnded forgets the subscriptions of a relay session that ended,
// unsubscribing the server from the URIs no other session is subscribed
// to.
func (r *Relay) SessionEnded(ss *mcp.ServerSession) {
	ctx, cancel := context.WithTimeout(context.Background(), unsubscribeTimeout)
	defer cancel()
	if r.subs.acquire(ctx) != nil {
		return
	}
	defer r.subs.release()
	for uri, set := range r.subs.by {
		if set[ss] {
			r.leaveLocked(ctx, uri, ss)
		}
	}
}

// forgetEnded forgets the subscriptions of the sessions that ended
// without telling the relay (a streamable HTTP session's DELETE).
func (r *Relay) forgetEnded() {
	ctx, cancel := context.WithTimeout(context.Background(), unsubscribeTimeout)
	defer cancel()
	if r.subs.acquire(ctx) != nil {
		return
	}
	defer r.subs.release()
	r.pruneLocked(ctx)
}

// pruneLocked forgets the subscriptions of sessions the relay's server no
// longer has (a streamable HTTP session that ended without telling the
// relay). Requires r.subs.lock.
func (r *Relay) pruneLocked(ctx context.Context) {
	if len(r.subs.by) == 0 {
		return
	}
	live := map[*mcp.ServerSession]bool{}
	for ss := range r.srv.Sessions() {
		live[ss] = true
	}
	for uri, set := range r.subs.by {
		for ss := range set {
			if !live[ss] {
				r.leaveLocked(ctx, uri, ss)
			}
		}
	}
}

// leaveLocked takes ss off uri's subscribers, unsubscribing the server
// when it was the last. Requires r.subs.lock.
func (r *Relay) leaveLocked(ctx context.Context, uri string, ss *mcp.ServerSession) {
	set := r.subs.by[uri]
	if !set[ss] {
		return
	}
	delete(set, ss)
	if len(set) > 0 {
		return
	}
	delete(r.subs.by, uri)
	// A failure leaves the manager subscribed: its updates are then
	// recorded and reach no session, as none is subscribed here.
	r.mgr.UnsubscribeResource(ctx, r.server, uri)
}

// ResourceUpdated tells the relay's sessions subscribed to uri that the
// server reported a change of it (the manager's
// Options.OnResourceUpdated). It does not wait for them: they are told on
// a goroutine (RelayOptions.Go) that tells every update queued meanwhile,
// in the order they came, so a slow session never holds the caller. An
// update of a URI whose earlier update has not been told yet is told with
// it.
func (r *Relay) ResourceUpdated(uri string) {
	q := r.subs
	q.qmu.Lock()
	if !slices.Contains(q.queue, uri) {
		q.queue = append(q.queue, uri)
	}
	start := !q.draining
	q.draining = true
	q.qmu.Unlock()
	if !start {
		return
	}
	if r.opts.Go != nil {
		r.opts.Go(r.drainUpdates)
	} else {
		go r.drainUpdates()
	}
}

// drainUpdates tells the queued updates until the queue is empty.
func (r *Relay) drainUpdates() {
	q := r.subs
	for {
		q.qmu.Lock()
		if len(q.queue) == 0 {
			q.draining = false
			q.qmu.Unlock()
			return
		}
		uri := q.queue[0]
		q.queue = q.queue[1:]
		q.qmu.Unlock()
		// The go-sdk server sends it to the sessions subscribed to uri,
		// waiting for each up to its notification timeout.
		r.srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
	}
}
