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
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/verify"
)

// resolveSession maps "last", an exact id or a unique id prefix onto a
// recorded session id.
func resolveSession(ctx context.Context, st store.Store, arg string) (string, error) {
	var last string
	var matches []string
	for info, err := range st.Streams(ctx) {
		if err != nil {
			return "", err
		}
		if info.Stream == arg {
			return arg, nil
		}
		last = info.Stream
		if strings.HasPrefix(info.Stream, arg) {
			matches = append(matches, info.Stream)
		}
	}
	switch {
	case arg == "last" && last != "":
		return last, nil
	case arg == "last":
		return "", usagef("no sessions recorded yet")
	case len(matches) == 1:
		return matches[0], nil
	case len(matches) > 1:
		return "", usagef("session prefix %q is ambiguous (%d sessions)", arg, len(matches))
	}
	return "", usagef("no session %q (see mcp-audit sessions)", arg)
}

// openSession opens the store read-only and resolves arg to a session id.
func (g *globals) openSession(ctx context.Context, arg string) (store.Store, string, error) {
	st, err := g.openReadOnly()
	if err != nil {
		return nil, "", err
	}
	session, err := resolveSession(ctx, st, arg)
	if err != nil {
		st.Close()
		return nil, "", err
	}
	return st, session, nil
}

// sessionJSON is one element of `sessions --json`.
type sessionJSON struct {
	ID         string    `json:"id"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end,omitzero"`
	DurationMs float64   `json:"durationMs"`
	Cwd        string    `json:"cwd"`
	Servers    []string  `json:"servers"`
	Tools      int       `json:"tools"`
	PeakTools  int       `json:"peakTools"`
	Failures   int       `json:"failures"`
	Events     int       `json:"events"`
	Closed     bool      `json:"closed"`
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
	for env, err := range st.ReadAll(ctx, 1) {
		if err != nil {
			return err
		}
		idx.Apply(env)
	}
	list := idx.Sessions()
	if g.json {
		out := make([]sessionJSON, 0, len(list))
		for _, s := range list {
			out = append(out, sessionJSON{
				ID: s.ID, Start: s.Start, End: s.End, DurationMs: ms(s.Duration()), Cwd: s.Cwd,
				Servers: nonNil(s.Servers), Tools: s.Tools, PeakTools: s.PeakTools, Failures: s.Failures,
				Events: s.Events, Closed: s.Closed(),
			})
		}
		return g.writeJSON(out)
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSTART\tDURATION\tCWD\tSERVERS\tTOOLS\tFAILURES")
	for _, s := range list {
		dur := s.Duration().Round(time.Millisecond).String()
		if !s.Closed() {
			dur += " (open)"
		}
		failures := strconv.Itoa(s.Failures)
		if s.Failures > 0 {
			failures = g.paint(colorRed, failures)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", escapeLine(s.ID), s.Start.Local().Format("2006-01-02 15:04:05"),
			dur, escapeLine(s.Cwd), len(s.Servers), max(s.Tools, s.PeakTools), failures)
	}
	return tw.Flush()
}

// replayJSON is one line of `replay --json` (JSON Lines, one per event).
type replayJSON struct {
	Seq           uint64          `json:"seq"`
	Offset        float64         `json:"offsetMs"`
	Time          time.Time       `json:"time"`
	Type          string          `json:"type"`
	Server        string          `json:"server,omitempty"`
	CorrelationID string          `json:"correlationId,omitempty"`
	Summary       string          `json:"summary"`
	Data          events.Envelope `json:"envelope"`
}

func runReplay(ctx context.Context, g *globals, args []string) error {
	fs := newFlagSet("replay", g)
	follow := fs.Bool("follow", false, "keep streaming new events")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("usage: mcp-audit replay SESSION|last [--follow]")
	}
	st, session, err := g.openSession(ctx, pos[0])
	if err != nil {
		return err
	}
	defer st.Close()
	p := &replayPrinter{g: g}
	if !g.json {
		fmt.Fprintf(g.stdout, "session %s\n", escapeLine(session))
	}
	next := uint64(1)
	for {
		for env, err := range st.ReadStream(ctx, session, next) {
			if err != nil {
				return err
			}
			if err := p.print(env); err != nil {
				return err
			}
			next = env.Version + 1
		}
		if !*follow {
			return nil
		}
		// Another process appends to the file; poll it. The store is opened
		// read-only, so there is no bus to listen on across processes.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// replayPrinter prints one line per event with its offset from the first.
type replayPrinter struct {
	g     *globals
	start time.Time
}

func (p *replayPrinter) print(env events.Envelope) error {
	if p.start.IsZero() {
		p.start = env.Time
	}
	ev, err := events.Decode(env)
	if err != nil {
		ev = &events.Unknown{TypeName: env.Type, Schema: env.Schema, Data: env.Data}
	}
	offset := env.Time.Sub(p.start)
	if p.g.json {
		return p.g.writeJSONLine(replayJSON{
			Seq: env.Seq, Offset: ms(offset), Time: env.Time, Type: env.Type, Server: events.ServerOf(ev),
			CorrelationID: env.CorrelationID, Summary: events.Describe(ev), Data: env,
		})
	}
	line := fmt.Sprintf("%10s  #%-6d %-19s %s", fmtOffset(offset), env.Seq, p.g.typeColor(env.Type), escapeLine(events.Describe(ev)))
	if d, ok := events.DurationOf(ev); ok {
		line += p.g.paint(colorDim, " ("+fmtDur(d)+")")
	}
	_, err = fmt.Fprintln(p.g.stdout, line)
	return err
}

func (g *globals) typeColor(t string) string {
	switch t {
	case events.TypeConnectFailed, events.TypeToolsListFailed, events.TypeServerInvalid, events.TypeDiscoveryFailed:
		return g.paint(colorRed, fmt.Sprintf("%-19s", t))
	case events.TypeServerConnected, events.TypeToolsListed:
		return g.paint(colorGreen, fmt.Sprintf("%-19s", t))
	case events.TypeStartupGateElapsed, events.TypeCachedToolsServed:
		return g.paint(colorYellow, fmt.Sprintf("%-19s", t))
	}
	return escapeLine(t)
}

// writeJSONLine prints v as one compact JSON line, with the characters a
// terminal acts on escaped (see [escapeJSON]).
func (g *globals) writeJSONLine(v any) error {
	b, err := marshalNoEscape(v)
	if err != nil {
		return err
	}
	_, err = g.stdout.Write(append(escapeJSON(b), '\n'))
	return err
}

func fmtOffset(d time.Duration) string {
	return "+" + strconv.FormatFloat(ms(d), 'f', 1, 64) + "ms"
}

func fmtDur(d time.Duration) string {
	if d < time.Second {
		return strconv.FormatFloat(ms(d), 'f', 1, 64) + "ms"
	}
	return d.Round(time.Millisecond).String()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// inspectJSON is the output of `inspect --json`.
type inspectJSON struct {
	Session string              `json:"session"`
	AtSeq   uint64              `json:"atSeq"`
	AtTime  time.Time           `json:"atTime"`
	Servers []inspectServerJSON `json:"servers"`
	Tools   []toolJSON          `json:"tools"`
}

type inspectServerJSON struct {
	Name      string            `json:"name"`
	Status    string            `json:"status"`
	Transport string            `json:"transport"`
	Source    events.SourceMeta `json:"source"`
	Tools     int               `json:"tools"`
	Deferred  bool              `json:"deferred"`
	Error     string            `json:"error,omitempty"`
}

type toolJSON struct {
	Name     string `json:"name"`
	Server   string `json:"server"`
	Tool     string `json:"tool"`
	Deferred bool   `json:"deferred"`
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
			}
		}
		if (*seq != 0 && env.Seq > *seq) || (*at != "" && env.Time.After(limit)) {
			break
		}
		view.Apply(env)
		atSeq, atTime = env.Seq, env.Time
	}
	if start.IsZero() {
		return usagef("session %s has no events", session)
	}
	out := inspectJSON{Session: session, AtSeq: atSeq, AtTime: atTime, Servers: []inspectServerJSON{}, Tools: []toolJSON{}}
	for _, s := range view.Servers() {
		out.Servers = append(out.Servers, inspectServerJSON{Name: s.Name, Status: s.Status, Transport: s.Transport,
			Source: s.Source, Tools: len(s.Tools), Deferred: s.Deferred, Error: s.Error})
	}
	for _, t := range view.Tools() {
		out.Tools = append(out.Tools, toolJSON{Name: t.Name, Server: t.Server, Tool: t.Original, Deferred: t.Deferred})
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", escapeLine(s.Name), g.statusColor(s.Status), escapeLine(s.Transport),
			escapeLine(sourceLabel(s.Source)), tools, escapeLine(firstLine(s.Error)))
	}
	tw.Flush()
	fmt.Fprintln(g.stdout)
	tw = tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tSERVER\tORIGINAL\tDEFERRED")
	for _, t := range out.Tools {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%t\n", escapeLine(t.Name), escapeLine(t.Server), escapeLine(t.Tool), t.Deferred)
	}
	return tw.Flush()
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

// verifyJSON is the output of `verify --json`.
type verifyJSON struct {
	Sessions   int                `json:"sessions"`
	Events     int                `json:"events"`
	Violations []verify.Violation `json:"violations"`
}

func runVerify(ctx context.Context, g *globals, args []string) error {
	fs := newFlagSet("verify", g)
	all := fs.Bool("all", false, "verify every session")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 || (*all && len(pos) == 1) {
		return usagef("usage: mcp-audit verify [SESSION|--all]")
	}
	st, err := g.openReadOnly()
	if err != nil {
		return err
	}
	defer st.Close()
	var sessions []string
	if *all || len(pos) == 0 {
		for info, err := range st.Streams(ctx) {
			if err != nil {
				return err
			}
			sessions = append(sessions, info.Stream)
		}
		if !*all && len(sessions) > 0 { // no argument: the newest session
			sessions = sessions[len(sessions)-1:]
		}
	} else {
		id, err := resolveSession(ctx, st, pos[0])
		if err != nil {
			return err
		}
		sessions = []string{id}
	}
	out := verifyJSON{Violations: []verify.Violation{}}
	for _, id := range sessions {
		n, violations, err := checkSession(ctx, st, id)
		if err != nil {
			return err
		}
		out.Sessions++
		out.Events += n
		out.Violations = append(out.Violations, violations...)
	}
	if g.json {
		if err := g.writeJSON(out); err != nil {
			return err
		}
	} else {
		for _, v := range out.Violations {
			fmt.Fprintf(g.stdout, "%s  %s  seq %d  %s  %s: %s\n", g.paint(colorRed, "FAIL"), escapeLine(v.Session), v.Seq,
				escapeLine(v.Type), escapeLine(v.Rule), escapeLine(v.Message))
		}
		verdict := g.paint(colorGreen, "ok")
		if len(out.Violations) > 0 {
			verdict = g.paint(colorRed, fmt.Sprintf("%d violation(s)", len(out.Violations)))
		}
		fmt.Fprintf(g.stdout, "verified %d session(s), %d events: %s\n", out.Sessions, out.Events, verdict)
	}
	if len(out.Violations) > 0 {
		return errCheckFailed
	}
	return nil
}

// checkSession runs the invariant checker over one session, streaming.
func checkSession(ctx context.Context, st store.Store, id string) (int, []verify.Violation, error) {
	c := verify.NewChecker(id)
	n := 0
	for env, err := range st.ReadStream(ctx, id, 1) {
		if err != nil {
			return n, nil, err
		}
		c.Apply(env)
		n++
	}
	return n, c.Finish(), nil
}
