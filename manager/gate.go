package manager

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mcplife/mcplife/events"
)

// GateOutcome is the startup gate of one connect round.
type GateOutcome struct {
	Round   int64
	Gate    time.Duration
	Elapsed time.Duration
	// Outcomes maps each server the round connected to one of the
	// events.Outcome constants: ready, failed, deferred, awaited or
	// needs-auth.
	Outcomes map[string]events.Outcome
}

// round is one ConnectServers call that started connections, with its
// startup gate.
//
// The gate takes a snapshot of which servers have settled; it must not
// see a server half-way through recording its outcome. Servers hold
// emitMu for reading while they record an event and mark themselves
// settled; the gate holds it for writing while it takes the snapshot.
// After the snapshot, servers served from the cache (deferred) record
// nothing until the gate's own events are recorded, so a late tool list
// always follows the cached one it replaces.
type round struct {
	id      int64
	servers map[string]*server

	emitMu  sync.RWMutex
	snap    bool                      // (emitMu) the gate took its snapshot
	outcome map[string]events.Outcome // (emitMu) gate outcome per unsettled server

	mu      sync.Mutex
	results map[string]error // (mu) settled servers; nil error = ready

	settled chan string   // one name per server when it settled
	emitted chan struct{} // closed once StartupGateElapsed was recorded
}

func newRound(id int64, servers []*server) *round {
	r := &round{
		id:      id,
		servers: make(map[string]*server, len(servers)),
		results: make(map[string]error, len(servers)),
		settled: make(chan string, len(servers)),
		emitted: make(chan struct{}),
	}
	for _, s := range servers {
		r.servers[s.name] = s
	}
	return r
}

// enter waits until name may record an event and read-locks emitMu; leave
// unlocks it. late reports whether the event comes after the gate's
// result (a deferred server, or any server once the gate was recorded).
func (r *round) enter(name string) (late bool) {
	for {
		r.emitMu.RLock()
		if !r.snap {
			return false
		}
		select {
		case <-r.emitted:
			return true
		default:
		}
		if r.outcome[name] != events.OutcomeDeferred {
			return false // awaited: part of the gate's result
		}
		r.emitMu.RUnlock()
		<-r.emitted
	}
}

func (r *round) leave() { r.emitMu.RUnlock() }

// settle records name's outcome once and tells the gate. Requires
// r.emitMu held for reading when called between enter and leave.
func (r *round) settle(name string, err error) {
	r.mu.Lock()
	_, done := r.results[name]
	if !done {
		r.results[name] = err
	}
	r.mu.Unlock()
	if !done {
		r.settled <- name // buffered: one slot per server
	}
}

func (r *round) result(name string) (err error, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	err, ok = r.results[name]
	return err, ok
}

// gate waits for the round's servers or the gate, decides each pending
// server's outcome, waits for the awaited ones, and records the cached
// tools served and StartupGateElapsed.
func (m *Manager) gate(ctx context.Context, r *round, start time.Time) (GateOutcome, error) {
	defer close(r.emitted)
	names := make([]string, 0, len(r.servers))
	for name := range r.servers {
		names = append(names, name)
	}
	slices.Sort(names)

	timer := time.NewTimer(m.opts.Gate)
	defer timer.Stop()
	var ctxErr error
	for n := 0; n < len(names) && !m.allPendingCached(r, names); n++ {
		select {
		case <-r.settled:
			continue
		case <-timer.C:
		case <-ctx.Done():
			ctxErr = ctx.Err()
		}
		break
	}

	outcomes := make(map[string]events.Outcome, len(names))
	awaited := map[string]bool{}
	var served []events.Event
	var deferred []*server
	m.yield("gate.snapshot", "")
	r.emitMu.Lock()
	r.snap = true
	for _, name := range names {
		if err, ok := r.result(name); ok {
			outcomes[name] = outcomeOf(err)
			continue
		}
		s := r.servers[name]
		// Stale lists too: a deferred list stands in until the server's own.
		if c, ok := m.cache.LookupFor(m.viewer(s), name, s.hash, m.now()); ok {
			outcomes[name] = events.OutcomeDeferred
			served = append(served, &events.CachedToolsServed{Server: name, ConfigHash: s.hash, Tools: c.List, Count: len(c.List), CacheAge: c.Age})
			served = append(served, m.cachedSurface(s)...)
			deferred = append(deferred, s)
			continue
		}
		outcomes[name] = events.OutcomeAwaited
		awaited[name] = true
	}
	r.outcome = maps.Clone(outcomes)
	r.emitMu.Unlock()
	if m.opts.OnGate != nil {
		m.opts.OnGate(GateOutcome{Round: r.id, Gate: m.opts.Gate, Outcomes: maps.Clone(outcomes)})
	}

	for len(awaited) > 0 && ctxErr == nil {
		select {
		case name := <-r.settled:
			delete(awaited, name)
		case <-ctx.Done():
			ctxErr = ctx.Err()
		}
	}
	// An awaited server that settled failed is reported as failed.
	for _, name := range names {
		if outcomes[name] == events.OutcomeAwaited {
			if err, ok := r.result(name); ok && err != nil {
				outcomes[name] = outcomeOf(err)
			}
		}
	}
	g := GateOutcome{Round: r.id, Gate: m.opts.Gate, Elapsed: m.now().Sub(start), Outcomes: outcomes}
	// Mark deferred servers before recording, so a call that sees the
	// deferred tools may record its start.
	m.yield("gate.emit", "")
	m.mu.Lock()
	for _, s := range deferred {
		s.deferred = true
	}
	for _, ev := range served {
		switch ev := ev.(type) {
		case *events.ResourcesListed:
			r.servers[ev.Server].cachedResources = true
		case *events.PromptsListed:
			r.servers[ev.Server].cachedPrompts = true
		}
	}
	m.mu.Unlock()
	m.emit(append(served, &events.StartupGateElapsed{Round: r.id, Gate: g.Gate, Elapsed: g.Elapsed, Outcomes: outcomes})...)
	return g, ctxErr
}

// outcomeOf returns the gate outcome of a server that settled with err:
// ready, failed, or needs-auth for a server waiting for an OAuth login.
func outcomeOf(err error) events.Outcome {
	switch _, auth := needsAuthOf(err); {
	case err == nil:
		return events.OutcomeReady
	case auth:
		return events.OutcomeNeedsAuth
	}
	return events.OutcomeFailed
}

// allPendingCached reports, with Options.EagerCache, whether every server
// of r that has not settled has a cached tool list, so the gate need not
// wait for any of them.
func (m *Manager) allPendingCached(r *round, names []string) bool {
	if !m.opts.EagerCache {
		return false
	}
	now := m.now()
	for _, name := range names {
		if _, ok := r.result(name); ok {
			continue
		}
		if _, ok := m.cache.LookupFor(m.viewer(r.servers[name]), name, r.servers[name].hash, now); !ok {
			return false
		}
	}
	return true
}

// cachedSurface returns the resource and prompt lists the cache holds for
// the deferred server s, recorded with cause cache so the session shows
// them while s connects, until s lists its own.
func (m *Manager) cachedSurface(s *server) []events.Event {
	var out []events.Event
	now := m.now()
	if res, tpl, age, ok := m.cache.LookupResources(s.name, s.hash, now); ok {
		out = append(out, &events.ResourcesListed{Server: s.name, ConfigHash: s.hash, Resources: res, Templates: tpl,
			Hash: events.HashList([]any{res, tpl}), Count: len(res), Cause: events.CauseCache, CacheAge: age})
	}
	if prompts, age, ok := m.cache.LookupPrompts(s.name, s.hash, now); ok {
		out = append(out, &events.PromptsListed{Server: s.name, ConfigHash: s.hash, Prompts: prompts,
			Hash: events.HashList(prompts), Count: len(prompts), Cause: events.CauseCache, CacheAge: age})
	}
	return out
}
