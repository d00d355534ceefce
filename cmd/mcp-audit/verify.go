package main

import (
	"context"
	"fmt"

	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/verify"
)

// verifyJSON is the output of `verify --json`.
type verifyJSON struct {
	Sessions   int                `json:"sessions"`
	Events     int                `json:"events"`
	Violations []verify.Violation `json:"violations"`
}

func runVerify(ctx context.Context, g *globals, args []string) error {
	fs := newFlagSet("verify", g)
	all := fs.Bool("all", false, "verify every session")
	chain := fs.Bool("chain", false, "check the hash chain of the log instead of the ordering invariants")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 || (*all && len(pos) == 1) {
		return usagef("usage: mcp-audit verify [--chain] [SESSION|--all]")
	}
	st, err := g.openReadOnly()
	if err != nil {
		return err
	}
	defer st.Close()
	if *chain {
		return runVerifyChain(ctx, g, st, pos)
	}
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

// verifyOne checks one session's invariants and prints the verdict.
func verifyOne(ctx context.Context, g *globals, st store.Store, id string) error {
	n, violations, err := checkSession(ctx, st, id)
	if err != nil {
		return err
	}
	if len(violations) == 0 {
		fmt.Fprintf(g.stdout, "\nverify: %d events, ordering invariants %s\n", n, g.paint(colorGreen, "hold"))
		return nil
	}
	for _, v := range violations {
		fmt.Fprintf(g.stdout, "%s %s\n", g.paint(colorRed, "FAIL"), v)
	}
	return errCheckFailed
}
