package manager

import (
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
// A record whose state is dropped, needs-auth, closing or done, or that
// was asked to disconnect, takes no new call.
//
// The one writer is the owner: it changes the state through setState,
// which checks the transition and, in tests, that the caller is the
// owner's goroutine; other goroutines send it commands (a disconnect
// through s.stops, reconnect now and check now through conn.Kick). A
// write pairs with fields under m.mu only where readers of those fields
// need the two together (a drop's backoff and the cleared connection);
// the state itself needs no lock. Readers load the machine's snapshot.
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

// ending reports whether s is leaving (dropped, needs-auth, closing, or
// asked to disconnect) or gone: it takes no call. It takes no lock.
func (s *server) ending() bool { return s.mach.State().Ending() || s.stops.Asked() }

// setState moves s to the state to, with edits to the snapshot's other
// fields. Only s's owner calls it (in tests, another caller panics). An
// illegal transition is a bug: it panics in tests and is logged
// elsewhere (the state changes anyway, as the code that asked for it
// expects).
func (m *Manager) setState(s *server, to state, edits ...func(*conn.Snapshot)) {
	m.stateBug(s, s.mach.To(to, m.now(), edits...))
}

// noteState publishes edits to s's snapshot without a transition: by its
// owner, or by its creator before the owner runs.
func (m *Manager) noteState(s *server, edits ...func(*conn.Snapshot)) {
	m.stateBug(s, s.mach.Note(edits...))
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
