package main

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

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
				ID: s.ID, Start: s.Start, End: s.End, DurationMs: ms(s.Duration()), Cwd: s.Cwd, Host: s.Host,
				Servers: nonNil(s.Servers), Tools: s.Tools, PeakTools: s.PeakTools, Failures: s.Failures,
				Events: s.Events, Closed: s.Closed(),
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
	return tw.Flush()
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
