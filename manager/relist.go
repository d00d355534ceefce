package manager

import (
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/proc"
)

// serve is the rest of a connection's life on its server's goroutine,
// until the server is torn down or the connection ends: each case of its
// select is one duty, done in turn. It reports whether the connection
// ended on its own (a drop, which the caller records), not by a teardown.
//
//   - The end of the connection: the session's Wait returned, the process
//     exited, a health check or the flood limit closed it, or its listen
//     stream ended (lc.ctx).
//   - Re-lists on each (coalesced) notifications/tools/list_changed. A
//     server may send the notification in a loop, with or without a
//     change: re-lists are at least Options.RelistInterval apart
//     (notifications in between are coalesced into one ToolListChanged and
//     one re-list), and a list is recorded only when it differs from the
//     last one recorded, so the store grows by one small event per
//     interval at most.
//   - Health checks every Options.Health.Interval, skipped while the
//     server answered another request within the interval, and at once
//     when lc.checkNow is signalled (the host slept: the monotonic clock
//     that dates the last answer stood still); see checkHealth.
//   - The descendants of a stdio server, recorded (ProcessesSeen) when a
//     scan answers: one at the start and one after each health check.
//   - Re-lists of resources and prompts on their list_changed
//     notifications, spaced as tools' are, once surfaceLists recorded the
//     first lists.
func (m *Manager) serve(s *server, lc *liveConn, last string) (dropped bool) {
	var tick <-chan time.Time
	if m.opts.Health.Interval > 0 {
		t := time.NewTicker(m.opts.Health.Interval)
		defer t.Stop()
		tick = t.C
	}
	seen := map[proc.Identity]bool{}
	scan, forget := m.scanDescendants(lc)
	// A scan still pending when the connection ends is not made for it.
	defer func() { forget() }()
	var prev time.Time
	surfaced := lc.surfaceReady
	var resourcesChanged, promptsChanged chan struct{} // once the first lists are in
	sf := &lc.surface
	ended := func() bool { return s.ctx.Err() == nil } // else torn down
	for {
		select {
		case <-lc.ctx.Done():
			return ended()
		case ids := <-scan:
			scan = nil
			m.recordDescendants(s, lc, seen, ids)
			continue
		case <-tick:
			if !lc.wire.answeredWithin(m.opts.Health.Interval) && !m.checkHealth(s, lc) {
				return ended()
			}
			if scan == nil {
				scan, forget = m.scanDescendants(lc)
			}
			continue
		case <-lc.checkNow:
			if !m.checkHealth(s, lc) {
				return ended()
			}
			continue
		case <-surfaced:
			surfaced = nil
			if sf.resources {
				resourcesChanged = lc.resourcesChanged
			}
			if sf.prompts {
				promptsChanged = lc.promptsChanged
			}
			continue
		case <-resourcesChanged:
			if !m.spaced(lc, &sf.prevResources, lc.resourcesChanged) {
				return ended()
			}
			sf.lastResources = m.listResources(s, lc, events.CauseListChanged, sf.lastResources)
			continue
		case <-promptsChanged:
			if !m.spaced(lc, &sf.prevPrompts, lc.promptsChanged) {
				return ended()
			}
			sf.lastPrompts = m.listPrompts(s, lc, events.CauseListChanged, sf.lastPrompts)
			continue
		case <-lc.relist:
		}
		if !m.spaced(lc, &prev, lc.relist) {
			return ended()
		}
		m.emitDeferred("", &events.ToolListChanged{Server: s.name})
		start := m.now()
		defs, hints, err := m.listTools(lc.ctx, s, lc)
		if lc.ctx.Err() != nil {
			return ended() // the list failed with the connection: no ToolsListFailed
		}
		if err != nil {
			m.emitDeferred("", &events.ToolsListFailed{Server: s.name, Error: err.Error(), Duration: m.now().Sub(start)})
			m.log.Warn("MCP tool re-list failed", "server", s.name, "err", err)
			last = "" // whatever comes next is news
			continue
		}
		listed := m.listed(s, lc, defs, m.now().Sub(start), events.CauseListChanged)
		listed.CacheHints = hints
		if listed.ToolsHash == last {
			continue
		}
		last = listed.ToolsHash
		m.emitDeferred("", listed)
	}
}

// spaced keeps re-lists of one list at least Options.RelistInterval
// apart: when the last one (at *prev) is more recent, it waits out the
// rest of the interval, and the signals that arrive meanwhile are covered
// by the re-list that follows. It sets *prev to now and reports false
// when the connection lc ended while it waited.
func (m *Manager) spaced(lc *liveConn, prev *time.Time, signal chan struct{}) bool {
	if !prev.IsZero() {
		if wait := m.opts.RelistInterval - time.Since(*prev); wait > 0 {
			t := time.NewTimer(wait)
			defer t.Stop()
			select {
			case <-lc.ctx.Done():
				return false
			case <-t.C:
			}
			select {
			case <-signal: // covered by this re-list
			default:
			}
		}
	}
	*prev = time.Now()
	return true
}
