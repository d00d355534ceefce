package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/projector"
)

// sessionJSON is one element of `sessions --json`.
type sessionJSON struct {
	ID         string    `json:"id"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end,omitzero"`
	DurationMs float64   `json:"durationMs"`
	Cwd        string    `json:"cwd"`
	Host       string    `json:"host"`
	Servers    []string  `json:"servers"`
	Tools      int       `json:"tools"`
	PeakTools  int       `json:"peakTools"`
	Failures   int       `json:"failures"`
	Events     int       `json:"events"`
	Closed     bool      `json:"closed"`
	// Shared lists, for a shared host's session, each server process it
	// ran and the sessions that attached to it.
	Shared []sharedJSON `json:"shared,omitempty"`
}

// sharedJSON is one server process of a shared host and the sessions
// that used it.
type sharedJSON struct {
	Instance string   `json:"instance"`
	Pid      int      `json:"pid,omitempty"`
	Sessions []string `json:"sessions"`
}

func runSessions(ctx context.Context, g *globals, args []string) error {
	fs := newFlagSet("sessions", g)
	if pos, err := parseInterleaved(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("sessions takes no arguments")
	}
	st, err := g.openReadOnly()
	if err != nil {
		return err
	}
	defer st.Close()
	idx := projector.NewSessionIndex()
	sh := newSharing()
	for env, err := range st.ReadAll(ctx, 1) {
		if err != nil {
			return err
		}
		idx.Apply(env)
		sh.apply(env)
	}
	list := idx.Sessions()
	if g.json {
		out := make([]sessionJSON, 0, len(list))
		for _, s := range list {
			out = append(out, sessionJSON{
				ID: s.ID, Start: s.Start, End: s.End, DurationMs: ms(s.Duration()), Cwd: s.Cwd, Host: s.Host,
				Servers: nonNil(s.Servers), Tools: s.Tools, PeakTools: s.PeakTools, Failures: s.Failures,
				Events: s.Events, Closed: s.Closed(), Shared: sh.of(s.ID),
			})
		}
		return g.writeJSON(out)
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tHOST\tSTART\tDURATION\tCWD\tSERVERS\tTOOLS\tFAILURES")
	for _, s := range list {
		dur := s.Duration().Round(time.Millisecond).String()
		if !s.Closed() {
			dur += " (open)"
		}
		failures := strconv.Itoa(s.Failures)
		if s.Failures > 0 {
			failures = g.paint(colorRed, failures)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", escapeLine(s.ID), escapeLine(cmp.Or(s.Host, "-")), s.Start.Local().Format("2006-01-02 15:04:05"),
			dur, escapeLine(s.Cwd), len(s.Servers), max(s.Tools, s.PeakTools), failures)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Which sessions shared which server process, when any did.
	first := true
	for _, s := range list {
		for _, p := range sh.of(s.ID) {
			if first {
				fmt.Fprintln(g.stdout, "\nshared server processes (shared host session, instance, pid: sessions)")
				first = false
			}
			pid := "-"
			if p.Pid != 0 {
				pid = strconv.Itoa(p.Pid)
			}
			fmt.Fprintf(g.stdout, "  %s  %s  pid %s: %s\n", escapeLine(s.ID), escapeLine(p.Instance), pid, escapeLine(strings.Join(p.Sessions, ", ")))
		}
	}
	return nil
}

// sharing folds, per shared host session, its server processes and the
// sessions attached to each, from HostAttached and ServerConnected.
type sharing struct {
	attached map[string]map[string][]string // shared session → instance → sessions, in order
	order    map[string][]string            // shared session → instances, in order
	pids     map[[2]string]int              // (session, server) → latest pid
}

func newSharing() *sharing {
	return &sharing{attached: map[string]map[string][]string{}, order: map[string][]string{}, pids: map[[2]string]int{}}
}

func (s *sharing) apply(env events.Envelope) {
	switch env.Type {
	case events.TypeHostAttached, events.TypeServerConnected:
	default:
		return
	}
	ev, err := events.Decode(env)
	if err != nil {
		return
	}
	switch e := ev.(type) {
	case *events.ServerConnected:
		if e.Pid != 0 {
			s.pids[[2]string{env.SessionID, e.Server}] = e.Pid
		}
	case *events.HostAttached:
		m := s.attached[env.SessionID]
		if m == nil {
			m = map[string][]string{}
			s.attached[env.SessionID] = m
		}
		if _, ok := m[e.Server]; !ok {
			s.order[env.SessionID] = append(s.order[env.SessionID], e.Server)
		}
		if !slices.Contains(m[e.Server], e.Session) {
			m[e.Server] = append(m[e.Server], e.Session)
		}
	}
}

// of returns the server processes of a shared host's session (nil for any
// other session).
func (s *sharing) of(session string) []sharedJSON {
	var out []sharedJSON
	for _, in := range s.order[session] {
		out = append(out, sharedJSON{Instance: in, Pid: s.pids[[2]string{session, in}], Sessions: s.attached[session][in]})
	}
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
