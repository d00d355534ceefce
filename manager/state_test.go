package manager

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
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
	m.mu.Lock()
	defer m.mu.Unlock()
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
			m.mu.Lock()
			defer m.mu.Unlock()
			m.setState(s, c.to)
		}()
	}
	s := recordAt(t, m, stDialing)
	m.mu.Lock()
	for _, to := range []state{stListing, stReady, stClosing, stDone} {
		m.setState(s, to)
	}
	m.mu.Unlock()
	if st := s.mach.Load(); st.State != stDone || st.Gen != 1 {
		t.Fatalf("snapshot %+v, want done after one connection", st)
	}
}

// A record's snapshot follows its lifecycle: ready after the first
// connection, backoff with the delay and the drop's error after a drop,
// ready again on a second connection after ReconnectNow, done once torn
// down; a snapshot loaded earlier stays as it was.
func TestStateSnapshotFollowsTheLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newReconnectEnv(t, Options{Reconnect: ReconnectPolicy{Initial: time.Hour, Max: time.Hour, NoJitter: true}})
		defer e.close()
		e.connect("a")
		e.m.mu.Lock()
		s := e.m.servers["a"]
		e.m.mu.Unlock()
		first := s.mach.Load()
		if first.State != stReady || first.Gen != 1 || first.Attempt != 1 || first.Err != "" || first.RetryDelay != 0 {
			t.Fatalf("connected: %+v", *first)
		}
		kept := *first

		e.ds.drop("a")
		e.flush()
		back := s.mach.Load()
		if back.State != stBackoff || back.Gen != 1 || back.Attempt != 1 || back.Err != "connection closed" ||
			back.RetryDelay != time.Hour || !back.RetryDue.Equal(back.Since.Add(time.Hour)) || back.Since.Before(first.Since) {
			t.Fatalf("after the drop: %+v", *back)
		}

		if err := e.m.ReconnectNow("a"); err != nil {
			t.Fatal(err)
		}
		e.flush()
		again := s.mach.Load()
		if again.State != stReady || again.Gen != 2 || again.Attempt != 2 || again.RetryDelay != 0 || !again.RetryDue.IsZero() {
			t.Fatalf("reconnected: %+v", *again)
		}
		if *first != kept {
			t.Fatalf("the first snapshot changed: %+v, was %+v", *first, kept)
		}

		if err := e.m.DisconnectServer(context.Background(), "a"); err != nil {
			t.Fatal(err)
		}
		if st := s.mach.State(); st != stDone {
			t.Fatalf("torn down: %s", st)
		}
	})
}

// A state changed without the manager's mutex is a bug tests see.
func TestStateChangeWithoutTheMutexPanicsInTests(t *testing.T) {
	m := &Manager{now: time.Now}
	s := recordAt(t, m, stDialing)
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(error).Error(), "without the manager's mutex") {
			t.Errorf("recovered %v, want a panic for a state changed without m.mu", r)
		}
	}()
	m.setState(s, stListing)
}
