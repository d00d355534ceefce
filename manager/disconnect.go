package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/proc"
)

// DisconnectServer tears the named server down: it stops a
// connect in flight, fails in-flight calls, closes the transport (a stdio
// server's whole process group), forgets the source metadata, and records
// Disconnected, which removes the server's tools from the view. It is
// idempotent: an unknown or already disconnected server is not an error.
// When ctx ends first it returns ctx.Err() and the teardown completes in
// the background.
func (m *Manager) DisconnectServer(ctx context.Context, name string) error {
	return m.DisconnectServerBecause(ctx, name, events.ReasonRequested)
}

// DisconnectServerBecause is [Manager.DisconnectServer] whose Disconnected
// carries reason instead of "requested": for an owner that ends a server
// for a reason of its own, such as a shared host stopping an instance
// whose idle period ended ([events.ReasonIdle]). The reason must be one
// the session chooses ([events.DisconnectReason.Chosen]); any other (a
// drop's, which a reconnect follows) is an error and nothing is torn down.
func (m *Manager) DisconnectServerBecause(ctx context.Context, name string, reason events.DisconnectReason) error {
	if !reason.Chosen() {
		return fmt.Errorf("manager: disconnect %q: reason %q is not one a session chooses", name, reason)
	}
	m.mu.Lock()
	delete(m.sources, name)
	m.mu.Unlock()
	return m.disconnect(ctx, []string{name}, reason, "")
}

// DisconnectAll tears every server down concurrently (a failure of one does
// not stop the others), clears every registry and the tool view. Servers
// whose connect starts after DisconnectAll took its list are not affected.
// Errors of individual teardowns are joined.
func (m *Manager) DisconnectAll(ctx context.Context) error {
	return m.disconnectAll(ctx, events.ReasonRequested, "")
}

func (m *Manager) disconnectAll(ctx context.Context, reason events.DisconnectReason, correlation string) error {
	m.mu.Lock()
	clear(m.sources)
	names := make([]string, 0, len(m.servers))
	for name := range m.servers {
		names = append(names, name)
	}
	m.mu.Unlock()
	return m.disconnect(ctx, names, reason, correlation)
}

// A disconnect is a command to each server's owner (stopCmd, through
// the record's conn.Inbox): the caller sends it and waits for the reply
// within its context; the owner, wherever it was (a connect in flight, a
// list, a backoff delay, its select), moves to closing, tears the server
// down, records Disconnected, moves to done and removes the record. The
// servers of one disconnect are torn down in parallel, each by its own
// owner, and their Disconnected events are recorded together, in name
// order, as one append (stopBatch).

// stopCmd asks a server's owner to tear it down.
type stopCmd struct {
	reason events.DisconnectReason
	batch  *stopBatch
	slot   int        // the server's place in batch
	reply  chan error // (cap 1) the teardown's error, once the record ended
}

// answer replies to c after the record ended without c's teardown (it
// ended on its own, or another disconnect tore it down): c's place in
// its batch stays empty.
func (c *stopCmd) answer() {
	c.batch.add(c.slot, nil)
	c.reply <- nil
}

// stopBatch gathers the Disconnected events of one disconnect of several
// servers: each owner hands over its own (or withdraws), and once every
// place is filled they are recorded together, in order, as one append
// under the disconnect's correlation.
type stopBatch struct {
	m           *Manager
	correlation string

	mu   sync.Mutex
	evs  []events.Event // (mu) by place; nil: withdrawn or not yet in
	left int            // (mu) places not yet filled

	recorded chan struct{} // closed once the events were recorded (or failed)
}

func newStopBatch(m *Manager, correlation string, n int) *stopBatch {
	b := &stopBatch{m: m, correlation: correlation, evs: make([]events.Event, n), left: n, recorded: make(chan struct{})}
	if n == 0 {
		close(b.recorded)
	}
	return b
}

// add fills place i with ev (nil withdraws it). The last one in records
// the batch, waiting for the store.
func (b *stopBatch) add(i int, ev events.Event) {
	b.mu.Lock()
	b.evs[i] = ev
	b.left--
	last := b.left == 0
	b.mu.Unlock()
	if !last {
		return
	}
	evs := slices.DeleteFunc(b.evs, func(ev events.Event) bool { return ev == nil })
	b.m.emitCorrelated(b.correlation, evs...)
	close(b.recorded)
}

// disconnect asks the owners of the named servers to tear them down and
// waits for their replies within ctx. Each owner tears its own server
// down, so they go in parallel; their Disconnected events are recorded
// together, in name order. A server being torn down already, or whose
// record ends on its own meanwhile, is waited for. When ctx ends first
// it returns ctx.Err(); the teardowns complete in the background.
func (m *Manager) disconnect(ctx context.Context, names []string, reason events.DisconnectReason, correlation string) error {
	slices.Sort(names)
	m.mu.Lock()
	var targets []*server
	for _, name := range names {
		if s := m.servers[name]; s != nil {
			targets = append(targets, s)
		}
	}
	// The processes of the connected stdio servers look for the
	// descendants that left their groups together: one pass over /proc
	// for all of them before their stdin closes and one once they exited,
	// rather than a few for each.
	var procs []*proc.Process
	for _, s := range targets {
		if s.conn != nil && s.conn.proc != nil {
			procs = append(procs, s.conn.proc)
		}
	}
	if len(procs) > 1 {
		defer proc.Together(procs)()
	}
	b := newStopBatch(m, correlation, len(targets))
	replies := make([]chan error, len(targets))
	for i, s := range targets {
		c := &stopCmd{reason: reason, batch: b, slot: i, reply: make(chan error, 1)}
		replies[i] = c.reply
		// A record in m.servers has its inbox open: its owner closes it
		// under m.mu as it removes the record.
		if !s.stops.Send(c) {
			m.stateBug(s, errors.New("a registered record refused a disconnect"))
			c.answer()
		}
	}
	m.mu.Unlock()
	for _, s := range targets {
		m.yield("disconnect.sent", s.name)
	}
	var errs []error
	for _, reply := range replies {
		select {
		case err := <-reply:
			errs = append(errs, err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.Join(errs...)
}

// tearDown ends s on its owner's goroutine, after a disconnect (or the
// manager's end) interrupted what the owner was doing: it moves s to
// closing, stops everything of it (the connection and process group,
// in-flight calls), records Disconnected with the first disconnect's
// reason (together with the other servers of its batch), moves s to done,
// removes the record and replies. The connect of s must have settled
// (s.connected closed).
func (m *Manager) tearDown(s *server) {
	cmds := s.stops.Take()
	var c *stopCmd
	if len(cmds) > 0 {
		c = cmds[0]
	}
	reason := events.ReasonRequested // without a command: the manager ended
	if c != nil {
		reason = c.reason
	}
	m.setState(s, stClosing)
	m.mu.Lock()
	lc, calls, r := s.conn, s.calls, s.round
	m.mu.Unlock()
	// The gate of s's round waits for it to settle, and s's Disconnected
	// waits for the gate's events (a deferred server's cached tools are
	// recorded by the gate; the Disconnected must follow them).
	r.settle(s.name, &ServerError{Server: s.name, Op: OpConnect, Err: fmt.Errorf("%w: %s", ErrDisconnected, s.name)})
	d := &events.Disconnected{Server: s.name, Reason: reason}
	var err error
	if lc != nil {
		err = m.closeConn(s, lc, d)
	}
	m.waitCalls(calls)
	// Later disconnects leave their batches once the server is down (the
	// last one out records a batch, which may wait for the store); their
	// callers are answered when the record ends.
	for _, other := range cmds[min(1, len(cmds)):] {
		other.batch.add(other.slot, nil)
		defer func() { other.reply <- nil }()
	}
	<-r.emitted
	m.yield("finish.emit", s.name)
	if c != nil {
		c.batch.add(c.slot, d)
		<-c.batch.recorded
	} else {
		m.emitCorrelated("", d)
	}
	m.endRecord(s)
	if c != nil {
		c.reply <- err
	}
}

// endRecord ends s's record, on its owner's goroutine: s moves to done
// and is removed, its inbox closes, and the disconnects left in it are
// answered (the record ended without them).
func (m *Manager) endRecord(s *server) {
	m.mu.Lock()
	left := s.stops.Close()
	if m.servers[s.name] == s {
		delete(m.servers, s.name)
	}
	if s.conn != nil {
		s.conn.release()
	}
	m.setState(s, stDone)
	close(s.done)
	m.mu.Unlock()
	for _, c := range left {
		c.answer()
	}
}
