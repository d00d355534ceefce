package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/projector"
	mcpsession "github.com/mcplife/mcplife/session"
)

// inspectJSON is the output of `inspect --json`.
type inspectJSON struct {
	Session string              `json:"session"`
	AtSeq   uint64              `json:"atSeq"`
	AtTime  time.Time           `json:"atTime"`
	Servers []inspectServerJSON `json:"servers"`
	Tools   []toolJSON          `json:"tools"`
	// Budget is set when the session ran with a tool budget; then each
	// tool says whether it was loaded at that point.
	Budget *budgetJSON `json:"budget,omitempty"`
	// Hosts, in a shared host's session, are the hosts attached to its
	// servers at that point.
	Hosts []attachedHostJSON `json:"hosts,omitempty"`
}

// sharedRefJSON is the shared server a connection of an attached
// session used: the instance, the shared host's session and the
// server's pid there.
type sharedRefJSON struct {
	Instance   string `json:"instance"`
	SharedHost string `json:"sharedHost,omitempty"`
	Pid        int    `json:"pid,omitempty"`
}

// attachedHostJSON is a host attached to a shared host's server.
type attachedHostJSON struct {
	Instance string `json:"instance"`
	Session  string `json:"session"`
	Pid      int    `json:"pid"`
}

type inspectServerJSON struct {
	Name      string            `json:"name"`
	Status    projector.Status  `json:"status"`
	Transport string            `json:"transport"`
	Source    events.SourceMeta `json:"source"`
	Tools     int               `json:"tools"`
	Resources int               `json:"resources"`
	Prompts   int               `json:"prompts"`
	Deferred  bool              `json:"deferred"`
	Error     string            `json:"error,omitempty"`
	// Shared is set when the server's latest connection was to a shared
	// server.
	Shared *sharedRefJSON `json:"shared,omitempty"`
}

func runInspect(ctx context.Context, g *globals, args []string) error {
	fs := newFlagSet("inspect", g)
	at := fs.String("at", "", "a time: RFC 3339, or an offset from the session start such as 300ms or +1.5s")
	seq := fs.Uint64("seq", 0, "a global sequence number")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || (*at == "") == (*seq == 0) {
		return usagef("usage: mcp-audit inspect SESSION --at TIME|--seq N")
	}
	st, session, err := g.openSession(ctx, pos[0])
	if err != nil {
		return err
	}
	defer st.Close()
	view := projector.NewToolView(session)
	var start, limit, atTime time.Time
	var atSeq uint64
	budget := 0
	reachedEnd, closed := true, false // every event was applied; SessionClosed was among them
	sharedOf := map[string]string{}   // server → instance of its latest connection, when shared
	var hosts []attachedHostJSON      // attached to this session's servers (a shared host's)
	for env, err := range st.ReadStream(ctx, session, 1) {
		if err != nil {
			return err
		}
		if start.IsZero() {
			start = env.Time
			if *at != "" {
				if limit, err = parseAt(*at, start); err != nil {
					return err
				}
				// Nothing is recorded before the start, so there is no
				// state to show there.
				if limit.Before(start) {
					return usagef("--at %q is before the session's start, %s", *at, start.UTC().Format(time.RFC3339Nano))
				}
			}
		}
		if (*seq != 0 && env.Seq > *seq) || (*at != "" && env.Time.After(limit)) {
			reachedEnd = false
			break
		}
		closed = closed || env.Type == events.TypeSessionClosed
		view.Apply(env)
		hosts = foldSharing(env, sharedOf, hosts)
		if env.Type == events.TypeSessionStarted {
			budget = recordedBudget(env)
		}
		atSeq, atTime = env.Seq, env.Time
	}
	if start.IsZero() {
		return usagef("session %s has no events", session)
	}
	if *at != "" && reachedEnd && limit.After(atTime) {
		// A point past the last event would silently show the end.
		length := fmtDur(atTime.Sub(start))
		if closed {
			return usagef("--at %s is beyond the end of session %s, which lasted %s", *at, session, length)
		}
		return usagef("--at %s is beyond the last event of session %s, %s after its start (the session is still open or its host died)", *at, session, length)
	}
	out := inspectJSON{Session: session, AtSeq: atSeq, AtTime: atTime, Servers: []inspectServerJSON{}, Tools: []toolJSON{}}
	for _, s := range view.Servers() {
		out.Servers = append(out.Servers, inspectServerJSON{Name: s.Name, Status: serverStatus(s), Transport: s.Transport,
			Source: s.Source, Tools: len(s.Tools), Resources: len(s.Resources), Prompts: len(s.Prompts), Deferred: s.Deferred, Error: s.Error,
			Shared: sharedRef(ctx, st, sharedOf[s.Name])})
	}
	out.Hosts = hosts
	if budget > 0 {
		exp := mcpsession.Expose(view, budget)
		out.Budget = budgetOf(exp)
		out.Tools = exposedTools(view, exp)
	} else {
		for _, t := range view.Tools() {
			out.Tools = append(out.Tools, toolJSON{Name: t.Name, Server: t.Server, Tool: t.Original, Deferred: t.Deferred})
		}
	}
	if g.json {
		return g.writeJSON(out)
	}
	fmt.Fprintf(g.stdout, "session %s as of seq %d (%s after start)\n\n", escapeLine(session), atSeq, fmtDur(atTime.Sub(start)))
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATUS\tTRANSPORT\tSOURCE\tTOOLS\tERROR")
	for _, s := range out.Servers {
		tools := strconv.Itoa(s.Tools)
		if s.Deferred {
			tools += " (cached)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", escapeLine(s.Name), g.statusColor(string(s.Status)), escapeLine(s.Transport),
			escapeLine(sourceLabel(s.Source)), tools, escapeLine(errorCause(s.Name, s.Error)))
	}
	tw.Flush()
	fmt.Fprintln(g.stdout)
	writeInspectSharing(g, out)
	tw = tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	if b := out.Budget; b != nil {
		fmt.Fprintf(g.stdout, "tool budget %d tokens: %d estimated tokens; %d of %d tools loaded (%d tokens), budget applied: %t\n\n",
			b.Tokens, b.TotalTokens, b.Loaded, b.Total, b.LoadedTokens, b.Applied)
		fmt.Fprintln(tw, "TOOL\tSERVER\tORIGINAL\tDEFERRED\tLOADED")
		for _, t := range out.Tools {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%t\n", escapeLine(t.Name), escapeLine(t.Server), escapeLine(t.Tool), t.Deferred, *t.Loaded)
		}
		return tw.Flush()
	}
	fmt.Fprintln(tw, "TOOL\tSERVER\tORIGINAL\tDEFERRED")
	for _, t := range out.Tools {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%t\n", escapeLine(t.Name), escapeLine(t.Server), escapeLine(t.Tool), t.Deferred)
	}
	return tw.Flush()
}

// recordedBudget returns the tool budget a SessionStarted envelope
// records, or 0.
func recordedBudget(env events.Envelope) int {
	ev, err := events.Decode(env)
	if err != nil {
		return 0
	}
	started, ok := ev.(*events.SessionStarted)
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(started.Options[mcpsession.ToolBudgetOption])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func sourceLabel(s events.SourceMeta) string {
	if s.Provider == "" {
		return "-"
	}
	return s.Provider + "/" + s.Level
}

// parseAt reads an RFC 3339 time or an offset from start.
func parseAt(s string, start time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(strings.TrimPrefix(s, "+")); err == nil {
		return start.Add(d), nil
	}
	return time.Time{}, usagef("--at %q: want an RFC 3339 time or an offset such as 300ms", s)
}
