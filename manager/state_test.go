package manager

import (
	"strings"
	"testing"
)

// Every state but done has a way out, every state is reached from
// dialing, where a record is born, and done is reached from every state:
// no record can be stuck.
func TestStateTransitionsReachDone(t *testing.T) {
	all := []state{stDialing, stListing, stReady, stBackoff, stDropped, stNeedsAuth, stClosing, stDone}
	reach := func(from state) map[state]bool {
		seen := map[state]bool{from: true}
		for todo := []state{from}; len(todo) > 0; {
			s := todo[0]
			todo = todo[1:]
			for _, n := range transitions[s] {
				if !seen[n] {
					seen[n] = true
					todo = append(todo, n)
				}
			}
		}
		return seen
	}
	born := reach(stDialing)
	for _, s := range all {
		if !born[s] {
			t.Errorf("%s is never reached", s)
		}
		if !reach(s)[stDone] {
			t.Errorf("%s never reaches done", s)
		}
		if s != stDone && len(transitions[s]) == 0 {
			t.Errorf("%s has no way out", s)
		}
	}
	if len(transitions[stDone]) != 0 {
		t.Error("done has a way out")
	}
}

// An illegal transition is a bug that tests see at once.
func TestIllegalTransitionPanicsInTests(t *testing.T) {
	for _, c := range []struct{ from, to state }{
		{stReady, stListing}, {stDone, stDialing}, {stClosing, stReady}, {stBackoff, stReady}, {stNeedsAuth, stDialing}, {stDropped, stReady}, {stDropped, stDone},
	} {
		func() {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(error).Error(), "illegal state transition "+c.from.String()+" → "+c.to.String()) {
					t.Errorf("%s → %s: recovered %v, want an illegal-transition panic", c.from, c.to, r)
				}
			}()
			m := &Manager{}
			m.setState(&server{name: "x", state: c.from}, c.to)
		}()
	}
	m := &Manager{}
	s := &server{name: "x", state: stDialing}
	for _, to := range []state{stListing, stReady, stClosing, stDone} {
		m.setState(s, to)
	}
}
