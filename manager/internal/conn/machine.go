package conn

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Snapshot is where a server was at one moment. A published snapshot is
// never changed: a reader may keep it as long as it likes while the
// server moves on.
type Snapshot struct {
	State State
	// Since is when the server entered State.
	Since time.Time
	// Attempt is the number of the server's latest connect attempt (its
	// ConnectStarted's), 0 before the first one is recorded.
	Attempt int
	// RetryDelay and RetryDue, in Backoff: the reconnect delay scheduled
	// and when it ends (a reconnect-now starts the attempt earlier).
	RetryDelay time.Duration
	RetryDue   time.Time
	// Err is the text of the latest failed connect or of the latest drop,
	// scrubbed as recorded; "" while none.
	Err string
	// Gen counts the connections made: it grows by one at each
	// initialize that succeeded (Dialing → Listing), so a reader can tell
	// a connection from the one that replaced it.
	Gen uint64
}

// Machine is one server's state: it checks each transition and
// publishes a new [Snapshot] for it. The zero Machine is not usable: see
// [New].
//
// One writer at a time (the server's owner, or a teardown that claimed
// it; see the package doc) calls [Machine.To] and [Machine.Note]; two
// writers at once are reported as [ErrConcurrentWrite]. Any goroutine
// may call [Machine.Load] and [Machine.State] at any time, without a
// lock.
type Machine struct {
	cur     atomic.Pointer[Snapshot]
	writing atomic.Bool
}

// New returns the machine of a server born Dialing at the time at.
func New(at time.Time) *Machine {
	m := &Machine{}
	m.cur.Store(&Snapshot{State: Dialing, Since: at})
	return m
}

// Load returns the latest snapshot. Its fields must not be changed.
func (m *Machine) Load() *Snapshot { return m.cur.Load() }

// State returns the latest state.
func (m *Machine) State() State { return m.cur.Load().State }

// TransitionError is a transition that the table does not allow: a bug
// in the caller.
type TransitionError struct{ From, To State }

func (e *TransitionError) Error() string {
	return fmt.Sprintf("illegal state transition %s → %s", e.From, e.To)
}

// ErrConcurrentWrite reports two writers changing one machine at once: a
// bug in the caller, which must serialize them.
var ErrConcurrentWrite = errors.New("conn: concurrent state change")

// To moves the machine to the state to at the time at, with edits
// applied to the new snapshot (its other fields start as the previous
// snapshot's; RetryDelay and RetryDue are cleared on leaving Backoff,
// and Gen grows on Dialing → Listing). An illegal transition is made all
// the same, as the caller expects, and reported as a [*TransitionError].
func (m *Machine) To(to State, at time.Time, edits ...func(*Snapshot)) error {
	alone := m.enter()
	if alone {
		defer m.leave()
	}
	next := *m.cur.Load()
	from := next.State
	next.State, next.Since = to, at
	if from == Backoff && to != Backoff {
		next.RetryDelay, next.RetryDue = 0, time.Time{}
	}
	if from == Dialing && to == Listing {
		next.Gen++
	}
	for _, edit := range edits {
		edit(&next)
	}
	m.cur.Store(&next)
	var err error
	if !Legal(from, to) {
		err = &TransitionError{From: from, To: to}
	}
	if !alone {
		err = errors.Join(ErrConcurrentWrite, err)
	}
	return err
}

// Note publishes a snapshot in the same state with edits applied: a new
// attempt number, an error text.
func (m *Machine) Note(edits ...func(*Snapshot)) error {
	alone := m.enter()
	if alone {
		defer m.leave()
	}
	next := *m.cur.Load()
	for _, edit := range edits {
		edit(&next)
	}
	m.cur.Store(&next)
	if !alone {
		return ErrConcurrentWrite
	}
	return nil
}

// enter marks a write under way; it reports false when another write
// was under way already.
func (m *Machine) enter() bool { return m.writing.CompareAndSwap(false, true) }

func (m *Machine) leave() { m.writing.Store(false) }

// Attempt sets a snapshot's attempt number.
func Attempt(n int) func(*Snapshot) { return func(s *Snapshot) { s.Attempt = n } }

// Failed sets a snapshot's error text.
func Failed(text string) func(*Snapshot) { return func(s *Snapshot) { s.Err = text } }

// Retry sets a Backoff snapshot's delay, due that long after at.
func Retry(delay time.Duration, at time.Time) func(*Snapshot) {
	return func(s *Snapshot) { s.RetryDelay, s.RetryDue = delay, at.Add(delay) }
}
