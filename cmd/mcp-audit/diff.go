package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcplife/mcplife/contract"
	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
)

const diffUsage = "usage: mcp-audit diff A B [--server NAME] [--fail-on breaking] | diff --server NAME [--since TIME] [--fail-on breaking]"

// diffJSON is the output of `diff A B --json`.
type diffJSON struct {
	From        diffEnd           `json:"from"`
	To          diffEnd           `json:"to"`
	Changes     []contract.Change `json:"changes"`
	Total       int               `json:"total"`
	Breaking    int               `json:"breaking"`
	NotCompared []notComparedJSON `json:"notCompared"`
}

// diffEnd names one side of a comparison: a session, and in a history the
// newest listing of the server in it.
type diffEnd struct {
	Session string    `json:"session"`
	Time    time.Time `json:"time,omitzero"`
	Seq     uint64    `json:"seq,omitempty"`
}

// notComparedJSON names the kinds a server did not list on one side,
// which the comparison leaves out.
type notComparedJSON struct {
	Server string   `json:"server"`
	Side   string   `json:"side"` // "from" or "to"
	Kinds  []string `json:"kinds"`
}

// historyJSON is the output of `diff --server NAME --json`.
type historyJSON struct {
	Server   string     `json:"server"`
	Since    time.Time  `json:"since,omitzero"`
	Steps    []stepJSON `json:"steps"`
	Total    int        `json:"total"`
	Breaking int        `json:"breaking"`
}

type stepJSON struct {
	From     diffEnd           `json:"from"`
	To       diffEnd           `json:"to"`
	Changes  []contract.Change `json:"changes"`
	Breaking int               `json:"breaking"`
}

func runDiff(ctx context.Context, g *globals, args []string) error {
	fs := newFlagSet("diff", g)
	server := fs.String("server", "", "compare only this server; without sessions, the history of this server")
	since := fs.String("since", "", "with --server and no sessions: changes since TIME (RFC 3339, a date, or an age such as 24h)")
	failOn := fs.String("fail-on", "", `"breaking": exit 1 when a change is breaking`)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *failOn != "" && *failOn != "breaking" {
		return usagef("--fail-on %q: the only class to fail on is breaking", *failOn)
	}
	var breaking int
	switch {
	case len(pos) == 2 && *since == "":
		breaking, err = diffSessions(ctx, g, pos[0], pos[1], *server)
	case len(pos) == 0 && *server != "":
		var from time.Time
		if *since != "" {
			if from, err = parseSince(*since, time.Now()); err != nil {
				return err
			}
		}
		breaking, err = diffHistory(ctx, g, *server, from)
	case len(pos) == 2:
		return usagef("diff: --since needs --server NAME and no sessions\n%s", diffUsage)
	default:
		return usagef("%s", diffUsage)
	}
	if err != nil {
		return err
	}
	if *failOn == "breaking" && breaking > 0 {
		return errCheckFailed
	}
	return nil
}

// diffSessions compares two sessions and prints the changes; it returns
// the number of breaking ones.
func diffSessions(ctx context.Context, g *globals, refA, refB, server string) (int, error) {
	st, err := g.openReadOnly()
	if err != nil {
		return 0, err
	}
	defer st.Close()
	a, err := resolveSessionRef(ctx, st, refA)
	if err != nil {
		return 0, err
	}
	b, err := resolveSessionRef(ctx, st, refB)
	if err != nil {
		return 0, err
	}
	snapA, err := snapshotOf(ctx, st, a)
	if err != nil {
		return 0, err
	}
	snapB, err := snapshotOf(ctx, st, b)
	if err != nil {
		return 0, err
	}
	if server != "" {
		_, okA := snapA.Server(server)
		_, okB := snapB.Server(server)
		if !okA && !okB {
			return 0, usagef("server %q listed nothing in session %s or %s", server, a, b)
		}
	}
	changes := contract.CompareSnapshots(snapA, snapB)
	if server != "" {
		changes = slices.DeleteFunc(changes, func(c contract.Change) bool { return c.Server != server })
	}
	out := diffJSON{From: diffEnd{Session: a}, To: diffEnd{Session: b}, Changes: nonNil(changes), Total: len(changes),
		Breaking: countBreaking(changes), NotCompared: []notComparedJSON{}}
	var unchanged []string
	for _, sb := range snapB.Servers() {
		sa, ok := snapA.Server(sb.Server)
		if !ok || (server != "" && sb.Server != server) {
			continue
		}
		if k := contract.Unknown(sa); len(k) > 0 && len(k) < 3 {
			out.NotCompared = append(out.NotCompared, notComparedJSON{Server: sa.Server, Side: "from", Kinds: k})
		}
		if k := contract.Unknown(sb); len(k) > 0 && len(k) < 3 {
			out.NotCompared = append(out.NotCompared, notComparedJSON{Server: sb.Server, Side: "to", Kinds: k})
		}
		if !hasServer(changes, sb.Server) {
			unchanged = append(unchanged, sb.Server)
		}
	}
	if g.json {
		return out.Breaking, g.writeJSON(out)
	}
	fmt.Fprintf(g.stdout, "diff %s → %s\n", escapeLine(a), escapeLine(b))
	g.printChanges(changes)
	if len(unchanged) > 0 {
		fmt.Fprintf(g.stdout, "unchanged: %s\n", escapeLine(strings.Join(unchanged, ", ")))
	}
	for _, n := range out.NotCompared {
		session := a
		if n.Side == "to" {
			session = b
		}
		fmt.Fprintf(g.stdout, "not compared: %s listed no %s in %s\n", escapeLine(n.Server), strings.Join(n.Kinds, " or "), escapeLine(session))
	}
	fmt.Fprintln(g.stdout, summary(out.Total, out.Breaking))
	return out.Breaking, nil
}

// snapshotOf folds one session's stored events.
func snapshotOf(ctx context.Context, st store.Store, session string) (*contract.Snapshot, error) {
	snap := contract.NewSnapshot(session)
	for env, err := range st.ReadStream(ctx, session, 1) {
		if err != nil {
			return nil, err
		}
		snap.Apply(env)
	}
	return snap, nil
}

// listingServer returns the server a listing event (or a ServerConnected)
// is about, or "" for any other event.
func listingServer(env events.Envelope) string {
	switch env.Type {
	case events.TypeToolsListed, events.TypeResourcesListed, events.TypePromptsListed, events.TypeServerConnected:
	default:
		return ""
	}
	ev, err := events.Decode(env)
	if err != nil {
		return ""
	}
	return events.ServerOf(ev)
}

// diffHistory prints each change of one server's listings across
// sessions; it returns the number of breaking changes.
func diffHistory(ctx context.Context, g *globals, server string, since time.Time) (int, error) {
	st, err := g.openReadOnly()
	if err != nil {
		return 0, err
	}
	defer st.Close()
	hist := contract.NewHistory(server, since)
	listed := false
	for env, err := range st.ReadAll(ctx, 1) {
		if err != nil {
			return 0, err
		}
		if listingServer(env) == server {
			listed = true
		}
		hist.Apply(env)
	}
	if !listed {
		return 0, usagef("server %q is in no recorded session (see mcp-audit sessions)", server)
	}
	steps := hist.Steps()
	out := historyJSON{Server: server, Since: since, Steps: []stepJSON{}}
	for _, s := range steps {
		n := countBreaking(s.Changes)
		out.Steps = append(out.Steps, stepJSON{From: endOf(s.From), To: endOf(s.To), Changes: nonNil(s.Changes), Breaking: n})
		out.Total += len(s.Changes)
		out.Breaking += n
	}
	if g.json {
		return out.Breaking, g.writeJSON(out)
	}
	fmt.Fprintf(g.stdout, "history of %s", escapeLine(server))
	if !since.IsZero() {
		fmt.Fprintf(g.stdout, " since %s", since.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(g.stdout, ": %d change(s) of its listing\n", len(steps))
	for _, s := range steps {
		fmt.Fprintf(g.stdout, "\n%s (%s) → %s (%s)\n", escapeLine(s.From.Session), s.From.Time.UTC().Format(time.RFC3339),
			escapeLine(s.To.Session), s.To.Time.UTC().Format(time.RFC3339))
		g.printChanges(s.Changes)
	}
	if len(steps) > 0 {
		fmt.Fprintln(g.stdout)
	}
	fmt.Fprintln(g.stdout, summary(out.Total, out.Breaking))
	return out.Breaking, nil
}

func endOf(s *contract.Surface) diffEnd {
	return diffEnd{Session: s.Session, Time: s.Time, Seq: s.Seq}
}

// printChanges prints changes grouped by server, one line each: class,
// kind, JSON pointer, what changed.
func (g *globals) printChanges(changes []contract.Change) {
	for i := 0; i < len(changes); {
		server := changes[i].Server
		j := i
		for j < len(changes) && changes[j].Server == server {
			j++
		}
		group := changes[i:j]
		fmt.Fprintf(g.stdout, "%s: %s\n", escapeLine(server), summary(len(group), countBreaking(group)))
		tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
		for _, c := range group {
			class := string(c.Class)
			if c.Class == contract.Breaking {
				class = g.paint(colorRed, class)
			}
			ptr := c.Pointer
			if ptr == "" {
				ptr = "(server)"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", class, c.Kind, escapeLine(ptr), escapeLine(changeText(c)))
		}
		tw.Flush()
		i = j
	}
}

// changeText is a change's detail, with its values when both are short.
func changeText(c contract.Change) string {
	const short = 40
	if len(c.Before) > 0 && len(c.After) > 0 && len(c.Before) <= short && len(c.After) <= short {
		return fmt.Sprintf("%s: %s → %s", c.Detail, c.Before, c.After)
	}
	return c.Detail
}

func summary(total, breaking int) string {
	if total == 0 {
		return "no changes"
	}
	return fmt.Sprintf("%d change(s), %d breaking", total, breaking)
}

func countBreaking(changes []contract.Change) int {
	n := 0
	for _, c := range changes {
		if c.Class == contract.Breaking {
			n++
		}
	}
	return n
}

func hasServer(changes []contract.Change, server string) bool {
	for _, c := range changes {
		if c.Server == server {
			return true
		}
	}
	return false
}

// resolveSessionRef is [resolveSession] with "last~N" for the Nth session
// before the newest (last~0 is last).
func resolveSessionRef(ctx context.Context, st store.Store, ref string) (string, error) {
	rest, ok := strings.CutPrefix(ref, "last~")
	if !ok {
		return resolveSession(ctx, st, ref)
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return "", usagef("session %q: want last~N with N a number", ref)
	}
	var ids []string
	for info, err := range st.Streams(ctx) {
		if err != nil {
			return "", err
		}
		ids = append(ids, info.Stream)
	}
	if n >= len(ids) {
		return "", usagef("session %q: only %d session(s) recorded", ref, len(ids))
	}
	return ids[len(ids)-1-n], nil
}

// parseSince reads --since: an RFC 3339 time, a date (UTC midnight), or
// an age before now such as 24h.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, usagef("--since %q: want an RFC 3339 time, a date (2006-01-02) or an age such as 24h", s)
}
