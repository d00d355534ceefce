package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/verify"
)

// chainJSON is the output of `verify --chain --json`.
type chainJSON struct {
	OK bool `json:"ok"`
	// Session is the session whose history was checked ("" for the whole
	// log).
	Session string `json:"session,omitempty"`
	// FirstBad is the first bad event, the first of Breaks.
	FirstBad *verify.ChainBreak `json:"firstBad"`
	verify.ChainReport
}

// runVerifyChain checks the hash chain of the store's log: the whole log,
// or with a session the log up to the session's last event (the history
// its events follow). pos is the session argument, if any.
func runVerifyChain(ctx context.Context, g *globals, st store.Store, pos []string) error {
	cr, ok := st.(store.ChainReader)
	if !ok {
		return usagef("verify --chain: the store at %s keeps no hash chain", mustPath(g))
	}
	var (
		opts    verify.ChainOptions
		session string
	)
	if len(pos) == 1 {
		id, err := resolveSession(ctx, st, pos[0])
		if err != nil {
			return err
		}
		session = id
		for info, err := range st.Streams(ctx) {
			if err != nil {
				return err
			}
			if info.Stream == id {
				opts.UpTo = info.LastSeq
			}
		}
	}
	rep, err := verify.CheckChain(ctx, cr, &opts)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return err
		}
		return usagef("verify --chain: %s", firstLine(err.Error()))
	}
	out := chainJSON{OK: rep.OK(), Session: session, ChainReport: rep}
	if len(rep.Breaks) > 0 {
		out.FirstBad = &rep.Breaks[0]
	}
	if g.json {
		if err := g.writeJSON(out); err != nil {
			return err
		}
	} else {
		printChain(g, out)
	}
	if !out.OK {
		return errCheckFailed
	}
	return nil
}

func printChain(g *globals, out chainJSON) {
	for _, b := range out.Breaks {
		where := ""
		if b.Type != "" {
			where = "  " + escapeLine(b.Type)
		}
		if b.Session != "" {
			where += "  session " + escapeLine(b.Session)
		}
		fmt.Fprintf(g.stdout, "%s  seq %d  %s%s: %s\n", g.paint(colorRed, "FAIL"), b.Seq, b.Kind, where, escapeLine(b.Message))
	}
	if out.Unexamined > 0 {
		fmt.Fprintf(g.stdout, "%s  %d more event(s) whose chain value does not match, not examined\n", g.paint(colorRed, "FAIL"), out.Unexamined)
	}
	scope := "the whole log"
	if out.Session != "" {
		scope = "the log up to session " + escapeLine(out.Session) + "'s last event"
	}
	head := "empty"
	if out.HeadHash != "" {
		head = fmt.Sprintf("seq %d %s…", out.HeadSeq, out.HeadHash[:16])
	}
	verdict := g.paint(colorGreen, "intact")
	if out.FirstBad != nil {
		verdict = g.paint(colorRed, fmt.Sprintf("first bad event seq %d (%s), %d break(s)", out.FirstBad.Seq, out.FirstBad.Kind, len(out.Breaks)))
	} else if !out.OK {
		verdict = g.paint(colorRed, "broken")
	}
	fmt.Fprintf(g.stdout, "chain of %s: %d events to seq %d, head %s: %s\n", scope, out.Events, out.LastSeq, head, verdict)
}
