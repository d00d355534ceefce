// Package conn holds one MCP server's lifecycle state machine: its
// states, the transitions between them, and a [Machine] that publishes
// where the server is as an immutable [Snapshot] through an atomic
// pointer, so a reader of one server's state takes no lock.
//
// One writer at a time changes a machine: the goroutine that owns the
// server (it connects, lists, serves, records a drop and reconnects), or
// a teardown once it claimed the server; the manager serializes them
// under its registry mutex and the machine asserts it. Readers, any
// number, load a snapshot and keep it: the writer never changes a
// snapshot it published, it publishes a new one.
package conn

import "fmt"

// State is where one server is in its lifecycle. A server is born
// Dialing and ends Done; between the two, its owner loops through
// connects, drops and reconnects. Its transitions, and nothing else:
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
//	backoff    → dialing     the delay passed (or a reconnect-now cut it short)
//	backoff    → closing     a teardown began, or the reconnects gave up
//	needs-auth → done        the record was removed; a login connects anew
//	closing    → done        the teardown finished and the record was removed
//
// A server whose state is dropped, needs-auth, closing or done takes no
// new call ([State.Ending]).
type State uint8

// The states, in the order a first connect meets them; every state from
// Dropped on is [State.Ending].
const (
	Dialing State = iota + 1
	Listing
	Ready
	Backoff
	Dropped
	NeedsAuth
	Closing
	Done
)

// States lists every state, in order.
func States() []State {
	return []State{Dialing, Listing, Ready, Backoff, Dropped, NeedsAuth, Closing, Done}
}

var names = [...]string{
	Dialing: "dialing", Listing: "listing", Ready: "ready", Backoff: "backoff", Dropped: "dropped",
	NeedsAuth: "needs-auth", Closing: "closing", Done: "done",
}

func (s State) String() string {
	if int(s) < len(names) && names[s] != "" {
		return names[s]
	}
	return fmt.Sprintf("state(%d)", s)
}

// Ending reports whether s is leaving (dropped, needs-auth, closing) or
// gone: a server in it takes no call.
func (s State) Ending() bool { return s >= Dropped }

// transitions lists, per state, the states it may change to.
var transitions = map[State][]State{
	Dialing:   {Listing, Backoff, NeedsAuth, Closing},
	Listing:   {Ready, Dropped, NeedsAuth, Closing},
	Ready:     {Dropped, Closing},
	Dropped:   {Backoff, Closing},
	Backoff:   {Dialing, Closing},
	NeedsAuth: {Done},
	Closing:   {Done},
}

// Next returns the states s may change to (a copy).
func (s State) Next() []State { return append([]State(nil), transitions[s]...) }

// Legal reports whether a server may change from one state to another.
func Legal(from, to State) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}
