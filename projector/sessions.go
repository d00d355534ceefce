package projector

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcplife/mcplife/events"
)

// SessionSummary describes one recorded session.
type SessionSummary struct {
	ID    string
	Start time.Time // SessionStarted time, else the time of its first event
	End   time.Time // SessionClosed time; zero while open
	Last  time.Time // time of its latest event
	Cwd   string
	// Host is the host id of the session's first event: which machine and
	// user ran it, in a store shared by a fleet.
	Host string
	// Servers are the distinct names with a ServerDiscovered or a
	// ConnectStarted, sorted.
	Servers []string
	// Tools is the number of tools visible at the session's end: after its
	// latest event, not counting the SessionClosed that clears every
	// server. A session that disconnected its servers before closing shows
	// 0; PeakTools is the most tools it exposed at once.
	Tools     int
	PeakTools int
	// Failures counts ConnectFailed, ToolsListFailed, ServerInvalid and
	// DiscoveryFailed events.
	Failures int
	Events   int    // envelopes of the session, known or not
	LastSeq  uint64 // sequence of its latest envelope
}

// Closed reports whether the session recorded SessionClosed.
func (s SessionSummary) Closed() bool { return !s.End.IsZero() }

// Duration returns End - Start for a closed session and Last - Start for
// an open one.
func (s SessionSummary) Duration() time.Duration {
	if s.Closed() {
		return s.End.Sub(s.Start)
	}
	return s.Last.Sub(s.Start)
}

// SessionIndex is the fold of every event into one summary per session,
// for listings such as `mcp-audit sessions`.
//
// It keeps a tool view (tool names only) per open session to count tools
// with the same rules as [ToolView], and drops it when the session closes.
// A SessionIndex is not safe for concurrent use.
type SessionIndex struct {
	sessions map[string]*sessionEntry
	lastSeq  uint64
	counts   Counts
}

type sessionEntry struct {
	sum     SessionSummary
	started bool // a SessionStarted set Start
	servers map[string]struct{}
	view    *ToolView // nil once closed
}

// NewSessionIndex returns an empty index.
func NewSessionIndex() *SessionIndex {
	return &SessionIndex{sessions: make(map[string]*sessionEntry)}
}

// LastSeq returns the highest sequence passed to Apply.
func (x *SessionIndex) LastSeq() uint64 { return x.lastSeq }

// Counts returns how many envelopes were applied and skipped, and why.
// Every envelope of a session counts towards its Events, skipped or not.
func (x *SessionIndex) Counts() Counts { return x.counts }

// Apply folds env into its session's summary. Envelopes are expected in
// sequence order; one whose Seq is not above LastSeq is a redelivery and is
// skipped (Seq 0 is always applied).
func (x *SessionIndex) Apply(env events.Envelope) {
	if env.Seq != 0 {
		if env.Seq <= x.lastSeq {
			x.counts.Stale++
			return
		}
		x.lastSeq = env.Seq
	}
	id := sessionOf(env)
	s, ok := x.sessions[id]
	if !ok {
		s = &sessionEntry{
			sum:     SessionSummary{ID: id, Start: env.Time, Host: env.Host},
			servers: make(map[string]struct{}),
			view:    &ToolView{session: id, lean: true, servers: make(map[string]*serverEntry)},
		}
		x.sessions[id] = s
	}
	s.sum.Events++
	s.sum.LastSeq = max(s.sum.LastSeq, env.Seq)
	if env.Time.After(s.sum.Last) {
		s.sum.Last = env.Time
	}
	if !s.started && env.Time.Before(s.sum.Start) {
		s.sum.Start = env.Time
	}
	if !sessionIndexUses(env.Type) {
		x.counts.skip(env)
		return
	}
	ev, ok := x.counts.decode(env, nil)
	if !ok {
		return
	}
	x.counts.Applied++
	switch e := ev.(type) {
	case *events.SessionStarted:
		s.sum.Start = env.Time
		s.started = true
		s.sum.Cwd = e.Cwd
	case *events.SessionClosed:
		s.sum.End = env.Time
	case *events.ServerDiscovered:
		s.servers[e.Server] = struct{}{}
	case *events.ConnectStarted:
		s.servers[e.Server] = struct{}{}
	case *events.ConnectFailed, *events.ToolsListFailed, *events.ServerInvalid, *events.DiscoveryFailed:
		s.sum.Failures++
	}
	if s.view == nil || !toolViewUses(env.Type) {
		return
	}
	if _, closed := ev.(*events.SessionClosed); closed {
		// Keep the count of the last event before the close, then free the
		// view: a closed session's tools no longer change.
		s.view = nil
		return
	}
	s.view.applyEvent(env.Time, ev)
	s.sum.Tools = s.view.visible
	s.sum.PeakTools = max(s.sum.PeakTools, s.sum.Tools)
}

// sessionIndexUses reports whether the index decodes events of type t.
func sessionIndexUses(t string) bool {
	return t == events.TypeSessionStarted || toolViewUses(t)
}

// Session returns the summary of one session.
func (x *SessionIndex) Session(id string) (SessionSummary, bool) {
	s, ok := x.sessions[id]
	if !ok {
		return SessionSummary{}, false
	}
	return s.summary(), true
}

// Sessions returns every session's summary, ordered by Start, then ID.
func (x *SessionIndex) Sessions() []SessionSummary {
	out := make([]SessionSummary, 0, len(x.sessions))
	for _, s := range x.sessions {
		out = append(out, s.summary())
	}
	slices.SortFunc(out, func(a, b SessionSummary) int {
		return cmp.Or(a.Start.Compare(b.Start), strings.Compare(a.ID, b.ID))
	})
	return out
}

func (s *sessionEntry) summary() SessionSummary {
	sum := s.sum
	sum.Servers = slices.Sorted(maps.Keys(s.servers))
	return sum
}
