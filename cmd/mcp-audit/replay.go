package main

import (
	"context"
	"fmt"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/store"
)

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
	withTranscript := fs.Bool("transcript", false, "interleave the servers' transcripts (their JSON-RPC messages) by time")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("usage: mcp-audit replay SESSION|last [--follow] [--transcript]")
	}
	st, session, err := g.openSession(ctx, pos[0])
	if err != nil {
		return err
	}
	defer st.Close()
	p := &replayPrinter{g: g}
	var tm *transcriptMerger
	if *withTranscript {
		if tm, err = loadTranscript(ctx, st, session, p); err != nil {
			return err
		}
	}
	if !g.json {
		fmt.Fprintf(g.stdout, "session %s\n", escapeLine(session))
	}
	next, seq := uint64(1), uint64(0)
	for {
		for env, err := range st.ReadStream(ctx, session, next) {
			if err != nil {
				return err
			}
			if err := tm.before(env.Time); err != nil {
				return err
			}
			if err := p.print(env); err != nil {
				return err
			}
			next, seq = env.Version+1, env.Seq
		}
		if err := tm.before(time.Time{}); err != nil {
			return err
		}
		if !*follow {
			return nil
		}
		if g.busURL() != "" {
			return followBus(ctx, g, st, session, seq+1, p)
		}
		// Without a bus, another process's appends are seen by polling the
		// store.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// followBus prints the events of session from sequence from on as they
// arrive on the fleet's bus, from any host, with the store filling what
// the bus misses, until ctx ends.
func followBus(ctx context.Context, g *globals, st store.Store, session string, from uint64, p *replayPrinter) error {
	j, closeJournal, err := g.journalOn(st, "")
	if err != nil {
		return err
	}
	defer closeJournal()
	sub, err := j.Subscribe(ctx, journal.SubscribeOptions{FromSeq: from, Session: session})
	if err != nil {
		return err
	}
	defer sub.Close()
	for env := range sub.C() {
		if err := p.print(env); err != nil {
			return err
		}
	}
	if err := sub.Err(); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
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
	case events.TypeConnectFailed, events.TypeToolsListFailed, events.TypeServerInvalid, events.TypeDiscoveryFailed, events.TypeRecordingGap:
		return g.paint(colorRed, fmt.Sprintf("%-19s", t))
	case events.TypeServerConnected, events.TypeToolsListed:
		return g.paint(colorGreen, fmt.Sprintf("%-19s", t))
	case events.TypeStartupGateElapsed, events.TypeCachedToolsServed:
		return g.paint(colorYellow, fmt.Sprintf("%-19s", t))
	}
	return escapeLine(t)
}
