package conn

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// legalPairs is the transition table written out pair by pair, apart
// from the code's: a change to either shows here.
var legalPairs = map[[2]State]bool{
	{Dialing, Listing}: true, {Dialing, Backoff}: true, {Dialing, NeedsAuth}: true, {Dialing, Closing}: true,
	{Listing, Ready}: true, {Listing, Dropped}: true, {Listing, NeedsAuth}: true, {Listing, Closing}: true,
	{Ready, Dropped}: true, {Ready, Closing}: true,
	{Dropped, Backoff}: true, {Dropped, Closing}: true,
	{Backoff, Dialing}: true, {Backoff, Closing}: true,
	{NeedsAuth, Done}: true,
	{Closing, Done}:   true,
}

// pathTo is a legal way from Dialing to each state.
var pathTo = map[State][]State{
	Dialing:   nil,
	Listing:   {Listing},
	Ready:     {Listing, Ready},
	Backoff:   {Backoff},
	Dropped:   {Listing, Dropped},
	NeedsAuth: {NeedsAuth},
	Closing:   {Closing},
	Done:      {Closing, Done},
}

// machineAt returns a machine brought to st by legal transitions.
func machineAt(t *testing.T, st State) *Machine {
	t.Helper()
	m := New(time.Unix(0, 0))
	for i, s := range pathTo[st] {
		if err := m.To(s, time.Unix(int64(i+1), 0)); err != nil {
			t.Fatalf("on the way to %s: %v", st, err)
		}
	}
	if got := m.State(); got != st {
		t.Fatalf("machine at %s, want %s", got, st)
	}
	return m
}

// Every pair of states: the legal transitions are accepted (and made),
// every other one is rejected with a TransitionError naming both (and
// made all the same, as its caller expects).
func TestEveryTransition(t *testing.T) {
	for _, from := range States() {
		for _, to := range States() {
			t.Run(from.String()+"→"+to.String(), func(t *testing.T) {
				if got, want := Legal(from, to), legalPairs[[2]State{from, to}]; got != want {
					t.Fatalf("Legal = %v, want %v", got, want)
				}
				m := machineAt(t, from)
				at := time.Unix(100, 0)
				err := m.To(to, at)
				if legalPairs[[2]State{from, to}] {
					if err != nil {
						t.Fatalf("legal transition rejected: %v", err)
					}
				} else {
					var te *TransitionError
					if !errors.As(err, &te) || te.From != from || te.To != to {
						t.Fatalf("illegal transition: err %v, want a TransitionError %s → %s", err, from, to)
					}
					if want := "illegal state transition " + from.String() + " → " + to.String(); err.Error() != want {
						t.Fatalf("error %q, want %q", err, want)
					}
				}
				if s := m.Load(); s.State != to || !s.Since.Equal(at) {
					t.Fatalf("snapshot %+v, want %s since %v", s, to, at)
				}
			})
		}
	}
}

// Every state but done has a way out, every state is reached from
// dialing, where a server is born, and done is reached from every state:
// no server can be stuck.
func TestTransitionsReachDone(t *testing.T) {
	reach := func(from State) map[State]bool {
		seen := map[State]bool{from: true}
		for todo := []State{from}; len(todo) > 0; {
			s := todo[0]
			todo = todo[1:]
			for _, n := range s.Next() {
				if !seen[n] {
					seen[n] = true
					todo = append(todo, n)
				}
			}
		}
		return seen
	}
	born := reach(Dialing)
	for _, s := range States() {
		if !born[s] {
			t.Errorf("%s is never reached", s)
		}
		if !reach(s)[Done] {
			t.Errorf("%s never reaches done", s)
		}
		if s != Done && len(s.Next()) == 0 {
			t.Errorf("%s has no way out", s)
		}
	}
	if len(Done.Next()) != 0 {
		t.Error("done has a way out")
	}
}

func TestEnding(t *testing.T) {
	for _, s := range States() {
		want := s == Dropped || s == NeedsAuth || s == Closing || s == Done
		if s.Ending() != want {
			t.Errorf("%s.Ending() = %v, want %v", s, s.Ending(), want)
		}
	}
	if got := State(0).String(); got != "state(0)" {
		t.Errorf("State(0) = %q", got)
	}
}

// The snapshot's other fields: an attempt and an error noted, a backoff's
// delay (cleared when it ends), a generation per initialize that
// succeeded.
func TestSnapshotFields(t *testing.T) {
	t0 := time.Unix(1000, 0)
	m := New(t0)
	if s := m.Load(); s.State != Dialing || !s.Since.Equal(t0) || s.Gen != 0 || s.Attempt != 0 {
		t.Fatalf("born %+v", s)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(m.Note(Attempt(1)))
	must(m.To(Listing, t0.Add(time.Second)))
	must(m.To(Ready, t0.Add(2*time.Second)))
	must(m.To(Dropped, t0.Add(3*time.Second), Failed("process exited")))
	must(m.To(Backoff, t0.Add(4*time.Second), Retry(500*time.Millisecond, t0.Add(4*time.Second))))
	s := m.Load()
	if s.Gen != 1 || s.Attempt != 1 || s.Err != "process exited" || s.RetryDelay != 500*time.Millisecond || !s.RetryDue.Equal(t0.Add(4500*time.Millisecond)) {
		t.Fatalf("in backoff %+v", s)
	}
	must(m.To(Dialing, t0.Add(5*time.Second), Attempt(2)))
	must(m.To(Listing, t0.Add(6*time.Second)))
	s = m.Load()
	if s.Gen != 2 || s.Attempt != 2 || s.RetryDelay != 0 || !s.RetryDue.IsZero() || !s.Since.Equal(t0.Add(6*time.Second)) {
		t.Fatalf("reconnected %+v", s)
	}
}

// A reader keeps the snapshot it loaded while the writer moves on: a
// snapshot is never changed once published.
func TestSnapshotImmutable(t *testing.T) {
	m := New(time.Unix(0, 0))
	old := m.Load()
	kept := *old
	if err := m.To(Listing, time.Unix(1, 0), Attempt(1), Failed("x")); err != nil {
		t.Fatal(err)
	}
	if err := m.Note(Failed("y")); err != nil {
		t.Fatal(err)
	}
	if *old != kept {
		t.Fatalf("the old snapshot changed: %+v, was %+v", *old, kept)
	}
	if cur := m.Load(); cur == old || cur.State != Listing || cur.Err != "y" {
		t.Fatalf("current %+v", cur)
	}
}

// Readers load snapshots while the one writer walks the machine through
// reconnects: under -race, no data race; every snapshot a reader sees is
// whole (a state and the generation that goes with it), and the
// generations it sees never go back.
func TestConcurrentReaders(t *testing.T) {
	m := New(time.Unix(0, 0))
	const rounds = 2000
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			var last uint64
			for {
				s := m.Load()
				if s.Gen < last {
					t.Errorf("generation went back from %d to %d", last, s.Gen)
					return
				}
				last = s.Gen
				if s.State == Ready && s.Gen == 0 {
					t.Errorf("ready without a connection: %+v", s)
					return
				}
				_ = m.State().Ending()
				select {
				case <-stop:
					return
				default:
				}
			}
		})
	}
	at := time.Unix(0, 0)
	for i := range rounds {
		for _, to := range []State{Listing, Ready, Dropped, Backoff, Dialing} {
			at = at.Add(time.Millisecond)
			if err := m.To(to, at, Attempt(i+1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	if s := m.Load(); s.Gen != rounds || s.State != Dialing {
		t.Fatalf("after %d reconnects: %+v", rounds, s)
	}
}

// Two writers at once are reported; one writer after another is not.
func TestConcurrentWriteReported(t *testing.T) {
	m := New(time.Unix(0, 0))
	m.writing.Store(true) // a write under way
	if err := m.To(Listing, time.Unix(1, 0)); !errors.Is(err, ErrConcurrentWrite) {
		t.Fatalf("To during a write: %v, want ErrConcurrentWrite", err)
	}
	if err := m.Note(Attempt(1)); !errors.Is(err, ErrConcurrentWrite) {
		t.Fatalf("Note during a write: %v, want ErrConcurrentWrite", err)
	}
	m.writing.Store(false)
	if err := m.To(Ready, time.Unix(2, 0)); err != nil {
		t.Fatal(err)
	}
}

func TestKickCoalesces(t *testing.T) {
	k := NewKick()
	if !k.Send() {
		t.Fatal("the first send was not taken")
	}
	if k.Send() {
		t.Fatal("a second send before the owner took the first was taken")
	}
	<-k
	select {
	case <-k:
		t.Fatal("two requests pending")
	default:
	}
	if !k.Send() {
		t.Fatal("a send after the owner took one was not taken")
	}
}
