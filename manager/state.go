package manager

import (
	"fmt"
	"testing"
)

// state is where one server record is in its lifecycle. A record is born
// dialing and ends done; between the two, its owner goroutine (run) loops
// through connects, drops and reconnects. Its transitions, and nothing
// else:
//
//	dialing    → listing     initialize succeeded (the connection is published)
//	dialing    → backoff     a reconnect attempt failed; another is scheduled
//	dialing    → needs-auth  the server wants an OAuth login (the record ends)
//	dialing    → closing     the connect failed for good, or a teardown began
//	listing    → ready       the first tools/list settled
//	listing    → dropped     the connection ended on its own
//	listing    → needs-auth  the first tools/list wants an OAuth login (the record ends)
//	listing    → closing     a teardown began
//	ready      → dropped     the connection ended on its own
//	ready      → closing     a teardown began
//	dropped    → backoff     the drop is recorded; a reconnect is scheduled
//	dropped    → closing     the drop is recorded; no reconnect follows
//	backoff    → dialing     the delay passed (or ReconnectNow cut it short)
//	backoff    → closing     a teardown began, or the reconnects gave up
//	needs-auth → done        the record was removed; a login connects anew
//	closing    → done        the teardown finished and the record was removed
//
// A record whose state is dropped, needs-auth, closing or done takes no new
// call; one that is needs-auth, closing or done is not torn down a second
// time, and a teardown of a dropped one is left to its owner, which then
// does not reconnect. The state changes under the manager's mutex, through
// setState, which checks the transition.
type state uint8

const (
	stDialing state = iota + 1
	stListing
	stReady
	stBackoff
	stDropped
	stNeedsAuth
	stClosing
	stDone
)

var stateNames = [...]string{
	stDialing: "dialing", stListing: "listing", stReady: "ready", stBackoff: "backoff", stDropped: "dropped",
	stNeedsAuth: "needs-auth", stClosing: "closing", stDone: "done",
}

func (st state) String() string {
	if int(st) < len(stateNames) && stateNames[st] != "" {
		return stateNames[st]
	}
	return fmt.Sprintf("state(%d)", st)
}

// transitions lists, per state, the states it may change to.
var transitions = map[state][]state{
	stDialing:   {stListing, stBackoff, stNeedsAuth, stClosing},
	stListing:   {stReady, stDropped, stNeedsAuth, stClosing},
	stReady:     {stDropped, stClosing},
	stDropped:   {stBackoff, stClosing},
	stBackoff:   {stDialing, stClosing},
	stNeedsAuth: {stDone},
	stClosing:   {stDone},
}

// legal reports whether a record may change from one state to another.
func legal(from, to state) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// ending reports whether s is leaving (dropped, needs-auth, closing) or
// gone: it takes no call. Requires m.mu.
func (s *server) ending() bool { return s.state >= stDropped }

// setState moves s to the state to. An illegal transition is a bug: it
// panics in tests and is logged elsewhere (the state changes anyway, as
// the code that asked for it expects). Requires m.mu.
func (m *Manager) setState(s *server, to state) {
	if !legal(s.state, to) {
		err := fmt.Errorf("manager: server %q: illegal state transition %s → %s", s.name, s.state, to)
		if testing.Testing() {
			panic(err)
		}
		m.log.Error("MCP server lifecycle bug", "server", s.name, "err", err)
	}
	s.state = to
}
