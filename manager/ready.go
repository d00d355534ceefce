package manager

import (
	"context"

	"github.com/mcplife/mcplife/projector"
)

// WaitReady waits until every server with connection work in flight has
// settled: it is connected and its first tools/list finished (live tools,
// not the cached ones served at the gate) and so did its first lists of
// resources and prompts if it has them, or it failed (connect,
// initialize or the first tools/list failed, or it was disconnected). This
// covers every server of the latest connect round, and of an earlier round
// still pending, including servers started while WaitReady waits.
// waitForConnection covers one server's initialize only; the
// startup gate returns before deferred servers have listed.
//
// WaitReady returns nil once everything settled, also when servers failed
// (their errors are in [Manager.View] and [ConnectResult.Errors]), and at
// once when nothing is connecting. It returns ctx.Err() when ctx ends
// first, and [ErrClosed] when the manager closes first. It reads the
// session's view, so it agrees with [Manager.Tools] and [Manager.Status]
// when it returns. Safe for concurrent use.
func (m *Manager) WaitReady(ctx context.Context) error {
	// Watch before the first check, so a server that settles in between
	// still wakes the loop.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	updates, err := m.Watch(wctx)
	if err != nil {
		return err
	}
	for !m.ready() {
		select {
		case _, ok := <-updates:
			if ok {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if m.ready() {
				return m.waitSurfaces(ctx)
			}
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return m.waitSurfaces(ctx)
}

// waitSurfaces waits until every connected server's first resource and
// prompt lists are in (or failed), and until they are in the view.
func (m *Manager) waitSurfaces(ctx context.Context) error {
	type pending struct {
		ready <-chan struct{}
		gone  <-chan struct{}
	}
	var wait []pending
	m.mu.Lock()
	for _, s := range m.servers {
		if s.conn != nil && !s.ending() {
			wait = append(wait, pending{s.conn.surfaceReady, s.ctx.Done()})
		}
	}
	m.mu.Unlock()
	if len(wait) == 0 {
		return nil
	}
	for _, p := range wait {
		select {
		case <-p.ready:
		case <-p.gone:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return m.flush(ctx)
}

// ready reports whether every server with a runtime record (a connect in
// flight, connected, or being torn down) has settled in the view.
func (m *Manager) ready() bool {
	m.mu.Lock()
	names := make([]string, 0, len(m.servers))
	for name := range m.servers {
		names = append(names, name)
	}
	m.mu.Unlock()
	m.viewMu.Lock()
	defer m.viewMu.Unlock()
	for _, name := range names {
		st, ok := m.view.Server(name)
		if !ok {
			continue
		}
		switch {
		case st.Status == projector.StatusDisconnected || st.Status == projector.StatusFailed:
		case st.Status == projector.StatusConnected && (!st.ToolsListedAt.IsZero() || st.Error != ""):
		default:
			return false // connecting, or connected with its first list pending
		}
	}
	return true
}
