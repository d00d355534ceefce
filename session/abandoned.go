package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/proc"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/store"
)

// Abandoned is a session that [ReapAbandoned] found abandoned: it never
// recorded SessionClosed and its host process is gone, so the host was
// killed before it could tear its servers down.
type Abandoned struct {
	// Session is the abandoned session's id (its event stream).
	Session string
	// Host is the process that ran it, as its SessionStarted recorded.
	Host events.ProcessRef
	// Reaped are the processes it left running that were killed, as its
	// OrphansReaped records them (empty when none was left).
	Reaped []events.ProcessRef
}

// ReapAbandoned finds the sessions of j's store that a killed host left
// open and kills the server processes they left running. A session is
// abandoned when it has a SessionStarted with a host (see
// [events.SessionStarted]) and no SessionClosed, its host no longer runs
// as the same process (the pid is free, or held by a process with another
// start time), and it was not marked abandoned before. A session recorded
// without a host, or whose host's start time is unknown (not Linux), is
// left alone: nothing tells whether its host still runs. So is one that
// j's host did not record (a fleet's other machines), or whose host ran
// in another PID namespace than this process (another container): its
// pid cannot be looked up here.
//
// For each abandoned session it appends to that session's stream
// SessionAbandoned (DetectedBy = detectedBy), kills with [proc.Reap] the
// processes the session recorded (each stdio server's process and group
// from ServerConnected, its descendants from ProcessesSeen) that still run
// as the same processes, leaving out the servers whose Disconnected was
// recorded since (their teardown was done), and every process of this
// user that carries the session's id in its environment
// ([proc.SessionEnv], which every process a session starts inherits), so
// that what the host started but had not recorded yet is killed too; and
// then appends OrphansReaped with what it killed, possibly nothing. A
// recorded pid now held by another process is never killed.
//
// It reads the SessionStarted, SessionClosed and SessionAbandoned events
// by type when the store can ([store.TypeReader]), and reads only the
// abandoned sessions' own streams in full. SessionAbandoned is appended on
// the condition that the stream did not change since it was read, so when
// several processes look at once a session is marked, and reaped, by one
// of them only. It is safe to call concurrently.
//
// It returns the sessions it marked, in the order they started. The error
// joins what failed: reading the store, an append, or a kill (see
// [proc.Reap]); a session whose SessionAbandoned could not be appended is
// not returned, and its processes are left for a later call.
func ReapAbandoned(ctx context.Context, j *journal.Journal, detectedBy string) ([]Abandoned, error) {
	if j == nil {
		return nil, errors.New("session: reap abandoned sessions: nil journal")
	}
	st := j.Store()
	last, err := st.LastSeq(ctx)
	if err != nil {
		return nil, fmt.Errorf("session: reap abandoned sessions: %w", err)
	}

	// The open sessions with a recorded host, by id, and the order they
	// started in; then only those whose host is gone. The host of a
	// closed session is never looked up: the cost stays with the open
	// ones, not with the history.
	hosts := map[string]events.ProcessRef{}
	var order []string
	listed := map[string]bool{}
	ns := events.PidNamespace()
	err = eachOfTypes(ctx, st, last, []string{events.TypeSessionStarted}, func(env events.Envelope, ev events.Event) {
		// A session another host recorded (a store shared by a fleet) has
		// its processes there: its pid means nothing here.
		if env.Host != "" && env.Host != j.Host() {
			return
		}
		s, ok := ev.(*events.SessionStarted)
		if !ok || s.Host == nil {
			return
		}
		if !listed[env.Stream] {
			listed[env.Stream] = true
			order = append(order, env.Stream)
		}
		hosts[env.Stream] = *s.Host
		// Nor does the pid of a host in another PID namespace (another
		// container under the same host id).
		if s.PidNamespace != 0 && ns != 0 && s.PidNamespace != ns {
			delete(hosts, env.Stream)
		}
	})
	if err == nil && len(hosts) > 0 {
		err = eachOfTypes(ctx, st, last, []string{events.TypeSessionClosed, events.TypeSessionAbandoned}, func(env events.Envelope, _ events.Event) {
			delete(hosts, env.Stream)
		})
	}
	if err != nil {
		return nil, fmt.Errorf("session: reap abandoned sessions: %w", err)
	}
	for id, host := range hosts {
		if !hostGone(host) {
			delete(hosts, id)
		}
	}

	var found []Abandoned
	var errs []error
	for _, id := range order {
		host, ok := hosts[id]
		if !ok {
			continue
		}
		reaped, marked, err := reapSession(ctx, j, id, detectedBy)
		if err != nil {
			errs = append(errs, fmt.Errorf("session: reap abandoned session %s: %w", id, err))
		}
		if marked {
			found = append(found, Abandoned{Session: id, Host: host, Reaped: reaped})
		}
	}
	return found, errors.Join(errs...)
}

// hostGone reports whether host no longer runs as the process recorded.
// A host recorded without a start time is never taken for gone.
func hostGone(host events.ProcessRef) bool {
	if host.Pid <= 0 || host.StartTime == 0 {
		return false
	}
	id, ok := proc.IdentityOf(host.Pid)
	return !ok || id.StartTime != host.StartTime
}

// bornMargin is how long past a server's connect a process that started
// in its group is still taken for born into it: the host first looks at
// a server's descendants half a second after the connect, and start
// times are counted in ticks.
const bornMargin = time.Second

// reapSession marks the abandoned session id, kills what it left running
// and records what was killed. marked is false when the session was not
// marked: it was closed or marked meanwhile (then err is nil), or the
// mark could not be stored.
func reapSession(ctx context.Context, j *journal.Journal, id, detectedBy string) (reaped []events.ProcessRef, marked bool, err error) {
	st := j.Store()
	// The processes of each server since its last connect; a Disconnected
	// means its teardown was done.
	procs := map[string][]proc.Identity{}
	pgids := map[string]int{}
	born := map[string]proc.GroupSpan{}
	var version uint64
	for env, err := range st.ReadStream(ctx, id, 1) {
		if err != nil {
			return nil, false, err
		}
		version = env.Version
		switch env.Type {
		case events.TypeServerConnected, events.TypeProcessesSeen, events.TypeDisconnected,
			events.TypeSessionClosed, events.TypeSessionAbandoned:
		default:
			continue // not decoded: a session's stream is mostly tool lists and calls
		}
		ev, err := events.Decode(env)
		if err != nil {
			continue // recorded by a newer version, or damaged: not ours to read
		}
		switch e := ev.(type) {
		case *events.ServerConnected:
			delete(procs, e.Server)
			delete(born, e.Server)
			pgids[e.Server] = e.Pgid
			if e.Pid > 0 {
				procs[e.Server] = []proc.Identity{{Pid: e.Pid, Pgid: e.Pgid, StartTime: e.StartTime}}
			}
			if e.Pgid == e.Pid && e.Pid > 0 && e.StartTime != 0 {
				// What started in the server's group from its start to a
				// little past its connect, when it ran as its leader, was
				// born into that group: a child that cleared its
				// environment before the host first looked at the
				// server's descendants goes with the group too.
				born[e.Server] = proc.GroupSpan{Pgid: e.Pgid, From: e.StartTime, To: e.StartTime + proc.Ticks(e.Duration+bornMargin)}
			}
		case *events.ProcessesSeen:
			// A descendant still in the server's group takes the group
			// with it, members never recorded included (see proc.Reap);
			// one that left the group is killed alone.
			for _, p := range e.Pids {
				procs[e.Server] = append(procs[e.Server], proc.Identity{Pid: p.Pid, Pgid: pgids[e.Server], StartTime: p.StartTime})
			}
		case *events.Disconnected:
			delete(procs, e.Server)
			delete(born, e.Server)
		case *events.SessionClosed, *events.SessionAbandoned:
			return nil, false, nil // closed or marked since the look by type
		}
	}

	// The mark is conditional on the stream's version, so of several
	// processes that found the session at once only one marks and reaps
	// it; the journal has no conditional append, and picks the event up
	// from the store like any other process's.
	mark, err := events.New(id, &events.SessionAbandoned{Session: id, DetectedBy: detectedBy}, j.Now())
	if err != nil {
		return nil, false, err
	}
	if _, err := st.Append(ctx, id, int64(version), []events.Envelope{mark}); err != nil {
		if errors.Is(err, store.ErrVersionConflict) {
			return nil, false, nil
		}
		return nil, false, err
	}

	var ids []proc.Identity
	for _, server := range slices.Sorted(maps.Keys(procs)) {
		ids = append(ids, procs[server]...)
	}
	var spans []proc.GroupSpan
	for _, server := range slices.Sorted(maps.Keys(born)) {
		spans = append(spans, born[server])
	}
	killed, reapErr := proc.Reap(ids, &proc.ReapOptions{Session: id, Born: spans})
	reaped = make([]events.ProcessRef, 0, len(killed))
	for _, k := range killed {
		reaped = append(reaped, events.ProcessRef{Pid: k.Pid, StartTime: k.StartTime})
	}
	_, appendErr := j.Append(context.WithoutCancel(ctx), id, &events.OrphansReaped{Session: id, Pids: reaped})
	return reaped, true, errors.Join(reapErr, appendErr)
}

// eachOfTypes calls fn with every envelope of the given types up to seq
// toSeq, decoded, reading by type when the store can and in one pass over
// everything otherwise. Envelopes that do not decode are skipped.
func eachOfTypes(ctx context.Context, st store.Store, toSeq uint64, types []string, fn func(events.Envelope, events.Event)) error {
	take := func(env events.Envelope) {
		if ev, err := events.Decode(env); err == nil {
			fn(env, ev)
		}
	}
	if tr, ok := st.(store.TypeReader); ok {
		for _, typ := range types {
			for env, err := range tr.ReadType(ctx, typ, 1, toSeq) {
				if err != nil {
					return err
				}
				take(env)
			}
		}
		return nil
	}
	for env, err := range st.ReadAll(ctx, 1) {
		if err != nil {
			return err
		}
		if env.Seq > toSeq {
			break
		}
		if slices.Contains(types, env.Type) {
			take(env)
		}
	}
	return nil
}

// reapAbandonedAtStart is [ReapAbandoned] as [Start] runs it for the
// session id: at best effort, logging what it found and what failed.
func reapAbandonedAtStart(ctx context.Context, j *journal.Journal, id string, log *slog.Logger) {
	found, err := ReapAbandoned(ctx, j, id)
	for _, a := range found {
		log.Warn("session abandoned by a killed host: killed the processes it left running",
			"session", a.Session, "hostPid", a.Host.Pid, "killed", len(a.Reaped))
	}
	if err != nil {
		log.Error("abandoned sessions not fully reaped", "err", err)
	}
}
