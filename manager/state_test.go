package manager

import (
	"strings"
	"testing"
	"time"

	"github.com/mcplife/mcplife/manager/internal/conn"
)

// recordAt returns a record brought to st by legal transitions.
func recordAt(t *testing.T, m *Manager, st state) *server {
	t.Helper()
	path := map[state][]state{
		stListing: {stListing}, stReady: {stListing, stReady}, stBackoff: {stBackoff}, stDropped: {stListing, stDropped},
		stNeedsAuth: {stNeedsAuth}, stClosing: {stClosing}, stDone: {stClosing, stDone},
	}
	s := &server{name: "x", mach: conn.New(time.Time{})}
	for _, to := range path[st] {
		m.setState(s, to)
	}
	return s
}

// An illegal transition is a bug that tests see at once (the table and
// every pair of states are checked in manager/internal/conn).
func TestIllegalTransitionPanicsInTests(t *testing.T) {
	m := &Manager{now: time.Now}
	for _, c := range []struct{ from, to state }{
		{stReady, stListing}, {stDone, stDialing}, {stClosing, stReady}, {stBackoff, stReady}, {stNeedsAuth, stDialing}, {stDropped, stReady}, {stDropped, stDone},
	} {
		func() {
			s := recordAt(t, m, c.from)
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(error).Error(), "illegal state transition "+c.from.String()+" → "+c.to.String()) {
					t.Errorf("%s → %s: recovered %v, want an illegal-transition panic", c.from, c.to, r)
				}
			}()
			m.setState(s, c.to)
		}()
	}
	s := recordAt(t, m, stDialing)
	for _, to := range []state{stListing, stReady, stClosing, stDone} {
		m.setState(s, to)
	}
	if st := s.mach.Load(); st.State != stDone || st.Gen != 1 {
		t.Fatalf("snapshot %+v, want done after one connection", st)
	}
}
