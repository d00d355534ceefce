package manager

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mcplife/mcplife/manager/internal/conn"
)

// A server record's lifecycle state is its [conn.Machine]
// (manager/internal/conn holds the states, the table of their legal
// transitions and its check). The record is born dialing and ends done;
// between the two, its owner goroutine (run) loops through connects,
// drops and reconnects.
//
// A record whose state is dropped, needs-auth, closing or done takes no new
// call; one that is needs-auth, closing or done is not torn down a second
// time, and a teardown of a dropped one is left to its owner, which then
// does not reconnect.
//
// Writers: the owner, and a teardown that claimed the record (it marks it
// closing, then done); both change the state under the manager's mutex,
// through setState, which checks the transition, so decisions that read
// the state together with other fields under m.mu stay whole. Readers
// that need the state alone (ending, a login's "ready?", tests) load the
// machine's snapshot without m.mu.
type state = conn.State

// The states, by their names in the manager's code.
const (
	stDialing   = conn.Dialing
	stListing   = conn.Listing
	stReady     = conn.Ready
	stBackoff   = conn.Backoff
	stDropped   = conn.Dropped
	stNeedsAuth = conn.NeedsAuth
	stClosing   = conn.Closing
	stDone      = conn.Done
)

// ending reports whether s is leaving (dropped, needs-auth, closing) or
// gone: it takes no call. It takes no lock; under m.mu its answer holds
// until m.mu is released.
func (s *server) ending() bool { return s.mach.State().Ending() }

// setState moves s to the state to, with edits to the snapshot's other
// fields. An illegal transition is a bug: it panics in tests and is
// logged elsewhere (the state changes anyway, as the code that asked for
// it expects). Requires m.mu.
func (m *Manager) setState(s *server, to state, edits ...func(*conn.Snapshot)) {
	m.assertLocked(s)
	m.stateBug(s, s.mach.To(to, m.now(), edits...))
}

// noteState publishes edits to s's snapshot without a transition.
// Requires m.mu.
func (m *Manager) noteState(s *server, edits ...func(*conn.Snapshot)) {
	m.assertLocked(s)
	m.stateBug(s, s.mach.Note(edits...))
}

// assertLocked checks, in tests, that m.mu is held by someone when s's
// state changes: the writers of a record take turns under it.
func (m *Manager) assertLocked(s *server) {
	if testing.Testing() && m.mu.TryLock() {
		m.mu.Unlock()
		m.stateBug(s, errors.New("state changed without the manager's mutex"))
	}
}

// stateBug reports a failed change of s's machine: it panics in tests and
// is logged elsewhere.
func (m *Manager) stateBug(s *server, err error) {
	if err == nil {
		return
	}
	err = fmt.Errorf("manager: server %q: %w", s.name, err)
	if testing.Testing() {
		panic(err)
	}
	m.log.Error("MCP server lifecycle bug", "server", s.name, "err", err)
}
