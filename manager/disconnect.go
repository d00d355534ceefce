package manager

import (
	"context"
	"errors"
	"slices"

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
	m.mu.Lock()
	delete(m.sources, name)
	m.mu.Unlock()
	return m.disconnect(ctx, []string{name}, events.ReasonRequested, "")
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

// disconnect tears the named servers down concurrently and records their
// Disconnected events together, in name order. Servers already being torn
// down are waited for.
func (m *Manager) disconnect(ctx context.Context, names []string, reason events.DisconnectReason, correlation string) error {
	slices.Sort(names)
	m.mu.Lock()
	var mine []*server
	var others []chan struct{}
	for _, name := range names {
		s := m.servers[name]
		switch {
		case s == nil:
		case s.mach.State() == stDropped:
			// Its owner is recording the drop: it ends the record
			// instead of reconnecting.
			s.stopAsked = true
			others = append(others, s.done)
		case s.ending():
			others = append(others, s.done)
		default:
			m.setState(s, stClosing)
			mine = append(mine, s)
		}
	}
	m.mu.Unlock()
	for _, s := range mine {
		m.yield("disconnect.marked", s.name)
	}

	finished := make(chan error, 1)
	if len(mine) > 0 {
		work := func() { finished <- m.teardown(mine, reason, correlation) }
		if !m.goOwned(work) {
			work()
		}
	} else {
		finished <- nil
	}
	var err error
	select {
	case err = <-finished:
	case <-ctx.Done():
		return ctx.Err()
	}
	for _, ch := range others {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

// teardown shuts servers down concurrently, then records one Disconnected
// per server (in the given order) and removes their records. Every server
// must have been marked closing by the caller.
func (m *Manager) teardown(servers []*server, reason events.DisconnectReason, correlation string) error {
	discs := make([]*events.Disconnected, len(servers))
	errs := make([]error, len(servers))
	done := make(chan int, len(servers))
	// The processes of the connected stdio servers look for the
	// descendants that left their groups together: one pass over /proc
	// for all of them before their stdin closes and one once they exited,
	// rather than a few for each.
	var procs []*proc.Process
	m.mu.Lock()
	for _, s := range servers {
		if s.conn != nil && s.conn.proc != nil {
			procs = append(procs, s.conn.proc)
		}
	}
	m.mu.Unlock()
	if len(procs) > 1 {
		defer proc.Together(procs)()
	}
	for i, s := range servers {
		go func() {
			discs[i], errs[i] = m.shutdown(s, &events.Disconnected{Server: s.name, Reason: reason})
			done <- i
		}()
	}
	for range servers {
		<-done
	}
	m.finish(servers, discs, correlation)
	return errors.Join(errs...)
}

// shutdown stops everything of s: the connect or list in flight, the
// owner's loop, in-flight calls, the transport (and process group). It
// returns the Disconnected event to record, completed with the exit
// status of a stdio server.
func (m *Manager) shutdown(s *server, d *events.Disconnected) (*events.Disconnected, error) {
	s.cancel()
	<-s.taskDone
	m.mu.Lock()
	lc, calls, r := s.conn, s.calls, s.round
	m.mu.Unlock()
	var err error
	if lc != nil {
		err = m.closeConn(s, lc, d)
	}
	m.waitCalls(calls)
	// A deferred server's cached tools are recorded by the gate; the
	// Disconnected must follow them.
	<-r.emitted
	return d, err
}

// finish records the Disconnected events of torn-down servers and removes
// their records.
func (m *Manager) finish(servers []*server, discs []*events.Disconnected, correlation string) {
	evs := make([]events.Event, len(discs))
	for i, d := range discs {
		evs[i] = d
	}
	for _, s := range servers {
		m.yield("finish.emit", s.name)
	}
	m.emitCorrelated(correlation, evs...)
	m.mu.Lock()
	for _, s := range servers {
		delete(m.servers, s.name)
		if s.conn != nil {
			s.conn.release()
		}
		m.setState(s, stDone)
		close(s.done)
	}
	m.mu.Unlock()
}
