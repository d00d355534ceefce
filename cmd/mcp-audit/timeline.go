package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mcplife/mcplife/events"
)

// span is one bar of the waterfall.
type span struct {
	kind       string // "connect" or "list"
	start, end time.Duration
	failed     bool
	cut        bool // ended by a requested disconnect or a reload
	open       bool // never finished within the recorded history
}

// mark is one point event on a row.
type mark struct {
	kind string // "deferred", "failed", "dropped"
	at   time.Duration
	text string
}

type timelineRow struct {
	server    string
	transport string
	spans     []span
	marks     []mark
	outcome   string
}

type gateLine struct {
	round   int64
	at      time.Duration // when it returned
	gate    time.Duration
	elapsed time.Duration // how long it was open
}

// due is when the gate fell due: its length after it opened.
func (gl gateLine) due() time.Duration { return gl.at - gl.elapsed + gl.gate }

type timelineData struct {
	session string
	rows    []*timelineRow
	gates   []gateLine
	end     time.Duration
}

// buildTimeline folds a session's events into rows, one per server in the
// order servers started connecting. Times are offsets from the first
// ConnectStarted (or the first event).
func buildTimeline(session string, envs func(yield func(events.Envelope, error) bool)) (*timelineData, error) {
	d := &timelineData{session: session}
	rows := map[string]*timelineRow{}
	var t0 time.Time
	row := func(name string) *timelineRow {
		r := rows[name]
		if r == nil {
			r = &timelineRow{server: name}
			rows[name] = r
			d.rows = append(d.rows, r)
		}
		return r
	}
	closeOpen := func(r *timelineRow, kind string, at time.Duration, failed bool) bool {
		for i := len(r.spans) - 1; i >= 0; i-- {
			if r.spans[i].kind == kind && r.spans[i].open {
				r.spans[i].end, r.spans[i].open, r.spans[i].failed = at, false, failed
				return true
			}
		}
		return false
	}
	for env, err := range envs {
		if err != nil {
			return nil, err
		}
		ev, err := events.Decode(env)
		if err != nil {
			continue
		}
		if t0.IsZero() {
			t0 = env.Time
		}
		if cs, ok := ev.(*events.ConnectStarted); ok && len(d.rows) == 0 {
			t0 = env.Time // the picture starts at the first connect
			_ = cs
		}
		at := env.Time.Sub(t0)
		if at > d.end {
			d.end = at
		}
		switch e := ev.(type) {
		case *events.ConnectStarted:
			r := row(e.Server)
			r.transport = e.Transport
			r.spans = append(r.spans, span{kind: "connect", start: at, open: true})
			r.outcome = "connecting"
		case *events.ServerConnected:
			r := row(e.Server)
			closeOpen(r, "connect", at, false)
			r.spans = append(r.spans, span{kind: "list", start: at, open: true})
		case *events.ConnectFailed:
			r := row(e.Server)
			closeOpen(r, "connect", at, true)
			r.marks = append(r.marks, mark{kind: "failed", at: at, text: firstLine(e.Error)})
			r.outcome = "failed"
		case *events.ToolsListed:
			r := row(e.Server)
			closeOpen(r, "list", at, false)
			if r.outcome != "ready" {
				r.outcome = fmt.Sprintf("ready, %d %s", e.Count, plural(e.Count, "tool", "tools"))
			}
		case *events.ToolsListFailed:
			r := row(e.Server)
			closeOpen(r, "list", at, true)
			r.marks = append(r.marks, mark{kind: "failed", at: at, text: firstLine(e.Error)})
			r.outcome = "list failed"
		case *events.CachedToolsServed:
			r := row(e.Server)
			r.marks = append(r.marks, mark{kind: "deferred", at: at, text: fmt.Sprintf("%d cached %s", e.Count, plural(e.Count, "tool", "tools"))})
		case *events.Disconnected:
			if r, ok := rows[e.Server]; ok {
				requested := e.Reason.Chosen()
				for _, kind := range []string{"connect", "list"} {
					if closeOpen(r, kind, at, !requested) && requested {
						r.spans[len(r.spans)-1].cut = true
					}
				}
				if !requested {
					r.marks = append(r.marks, mark{kind: "dropped", at: at, text: string(e.Reason)})
				}
			}
		case *events.StartupGateElapsed:
			d.gates = append(d.gates, gateLine{round: e.Round, at: at, gate: e.Gate, elapsed: e.Elapsed})
		}
	}
	if t0.IsZero() {
		return nil, usagef("session %s has no events", session)
	}
	for _, r := range d.rows {
		for i := range r.spans {
			if r.spans[i].open {
				r.spans[i].end = d.end
			}
		}
	}
	return d, nil
}

func runTimeline(ctx context.Context, g *globals, args []string) error {
	fs := newFlagSet("timeline", g)
	out := fs.String("o", "", "output file, .svg or .html")
	window := fs.Duration("window", 0, "show only the first WINDOW of the session (default: up to the last connect, list or gate event)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	ext := strings.ToLower(filepath.Ext(*out))
	if len(pos) != 1 || (ext != ".svg" && ext != ".html") {
		return usagef("usage: mcp-audit timeline SESSION -o FILE.svg|FILE.html")
	}
	st, session, err := g.openSession(ctx, pos[0])
	if err != nil {
		return err
	}
	defer st.Close()
	d, err := buildTimeline(session, st.ReadStream(ctx, session, 1))
	if err != nil {
		return err
	}
	if *window > 0 {
		d.end = *window
	}
	svg := renderSVG(d)
	var doc []byte
	if ext == ".html" {
		var b bytes.Buffer
		fmt.Fprintf(&b, "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head><meta charset=\"utf-8\"/><title>mcplife timeline %s</title>\n", xmlText(session))
		b.WriteString("<style>body{font-family:system-ui,sans-serif;margin:24px;color:#222}</style></head>\n<body>\n")
		fmt.Fprintf(&b, "<h1>Startup of session %s</h1>\n", xmlText(session))
		b.WriteString("<p>One row per server. Blue bar: connect + initialize. Green bar: tools/list. Red: failed. Grey: cut short by a requested disconnect or a reload. Amber: the startup gate, a thin dashed line where it fell due and a thick one where it returned (it waits past its length for servers without cached tools). Diamond: tools served from the cache (deferred). Cross: failure.</p>\n")
		b.Write(svg)
		b.WriteString("\n</body>\n</html>\n")
		doc = b.Bytes()
	} else {
		doc = append([]byte(xml.Header), svg...)
	}
	if err := os.WriteFile(*out, doc, 0o644); err != nil {
		return usagef("write %s: %v", *out, err)
	}
	if g.json {
		return g.writeJSON(map[string]any{"session": session, "file": *out, "servers": len(d.rows), "gates": len(d.gates)})
	}
	fmt.Fprintf(g.stdout, "wrote %s: %d server %s, %d %s\n", *out, len(d.rows), plural(len(d.rows), "row", "rows"), len(d.gates), plural(len(d.gates), "gate", "gates"))
	return nil
}

const (
	tlLabelW = 200
	tlPlotW  = 760
	tlRightW = 340
	tlRowH   = 34
	tlTop    = 92 // room for two rows of gate labels above the plot
	tlMinBar = 4  // the narrowest bar drawn, in pixels, so a 1 ms step still shows
)

// tickStep returns the step of an axis spanning end: a round number of
// milliseconds (1, 2 or 5 × 10^k, k may be negative) that gives at most
// about eight intervals.
func tickStep(end time.Duration) time.Duration {
	step := 100 * time.Microsecond
	for {
		for _, m := range []time.Duration{1, 2, 5} {
			if end/(step*m) <= 8 {
				return step * m
			}
		}
		step *= 10
	}
}

// fmtTick labels an axis tick: 0, 500ms, 1s, 1.5s, 0.2ms.
func fmtTick(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Second:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64) + "ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

// renderSVG draws the waterfall. Every element carries a class and a
// <title>, so the picture reads without a legend and parses as XML.
func renderSVG(d *timelineData) []byte {
	end := d.end
	for _, gl := range d.gates {
		end = max(end, gl.at, gl.due())
	}
	if end <= 0 {
		end = time.Millisecond
	}
	// The axis ends on a round tick at or after the last event.
	step := tickStep(end)
	end = (end + step - 1) / step * step
	x := func(t time.Duration) float64 {
		if t > end {
			t = end
		}
		return tlLabelW + float64(t)/float64(end)*tlPlotW
	}
	height := tlTop + len(d.rows)*tlRowH + 40
	width := tlLabelW + tlPlotW + tlRightW
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<title>Startup timeline of session %s</title>`+"\n", xmlText(d.session))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="8" y="18" font-size="14" font-weight="bold">Session %s — startup waterfall (0 = first connect)</text>`+"\n", xmlText(d.session))
	fmt.Fprintf(&b, `<text x="8" y="36" fill="#555">blue = connect + initialize, green = tools/list, red = failed, grey = cut short by a disconnect or reload; amber: the startup gate, thin where it fell due, thick where it returned; ◆ = deferred (cached tools), ✕ = failure</text>`+"\n")
	// Time axis, a tick per step.
	axisY := tlTop + len(d.rows)*tlRowH + 8
	fmt.Fprintf(&b, `<g class="axis"><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>`, tlLabelW, axisY, tlLabelW+tlPlotW, axisY)
	for t := time.Duration(0); t <= end; t += step {
		fmt.Fprintf(&b, `<line class="tick" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/><text x="%.1f" y="%d" text-anchor="middle" fill="#555">%s</text>`,
			x(t), tlTop-4, x(t), axisY, x(t), axisY+16, xmlText(fmtTick(t)))
	}
	b.WriteString("</g>\n")
	// The gates go under the rows' bars, each a band from where it fell
	// due to where it returned.
	for _, gl := range d.gates {
		due, ret := x(gl.due()), x(gl.at)
		fmt.Fprintf(&b, `<g class="gate"><title>startup gate %s (round %d): fell due at %s, returned at %s</title>`, fmtDur(gl.gate), gl.round, fmtDur(gl.due()), fmtDur(gl.at))
		if ret-due >= 1 {
			fmt.Fprintf(&b, `<rect class="gate-wait" x="%.1f" y="%d" width="%.1f" height="%d" fill="#e0a800" fill-opacity="0.08"/>`, due, tlTop-4, ret-due, axisY-tlTop+4)
		}
		fmt.Fprintf(&b, `<line class="gate-due" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e0a800" stroke-width="1" stroke-dasharray="3 3"/>`, due, tlTop-30, due, axisY)
		fmt.Fprintf(&b, `<line class="gate-returned" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e0a800" stroke-width="2.5" stroke-dasharray="6 4"/>`, ret, tlTop-14, ret, axisY)
		// Labels on two heights, so a gate that returned soon after it
		// fell due keeps both legible.
		fmt.Fprintf(&b, `<text class="gate-due" x="%.1f" y="%d" fill="#a07800" font-size="11">%s</text>`, due+3, tlTop-32,
			xmlText(fmt.Sprintf("gate %s (round %d) due at %s", fmtDur(gl.gate), gl.round, fmtDur(gl.due()))))
		fmt.Fprintf(&b, `<text class="gate-returned" x="%.1f" y="%d" fill="#a07800" font-size="11" font-weight="bold">%s</text>`, ret+3, tlTop-16,
			xmlText("returned at "+fmtDur(gl.at)))
		b.WriteString("</g>\n")
	}
	for i, r := range d.rows {
		y := tlTop + i*tlRowH
		fmt.Fprintf(&b, `<g class="row" data-server="%s">`, xmlAttr(r.server))
		if i%2 == 0 {
			fmt.Fprintf(&b, `<rect x="0" y="%d" width="%d" height="%d" fill="#000" fill-opacity="0.03"/>`, y, width, tlRowH)
		}
		fmt.Fprintf(&b, `<text x="8" y="%d" font-weight="bold">%s</text><text x="8" y="%d" fill="#666" font-size="10">%s</text>`,
			y+15, xmlText(clip(r.server, 28)), y+27, xmlText(r.transport))
		// Bars and marks first, then the notes of the connect attempts
		// (a connect and the list after it) whose bars are too narrow
		// for a label inside, placed where they overlap nothing.
		var taken []extent
		var attempts []attempt
		for _, s := range r.spans {
			bx := x(s.start)
			w := max(x(s.end)-bx, tlMinBar)
			if s.kind == "connect" || len(attempts) == 0 {
				attempts = append(attempts, attempt{from: bx, to: bx})
			}
			a := &attempts[len(attempts)-1]
			a.to = max(a.to, bx+w)
			a.bars = append(a.bars, bar{span: s, x: bx, w: w})
			label := s.kind + " " + fmtBar(s.end-s.start)
			a.labels = append(a.labels, label)
			if w < float64(len(label))*6+6 {
				a.narrow = true
			}
		}
		for _, a := range attempts {
			taken = append(taken, extent{a.from, a.to})
			for _, br := range a.bars {
				s := br.span
				color := "#3b7dd8"
				if s.kind == "list" {
					color = "#2e9e5b"
				}
				if s.failed {
					color = "#d64545"
				}
				if s.cut {
					color = "#9aa0a6"
				}
				by := y + 6
				if s.kind == "list" {
					by = y + 16
				}
				fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%d" width="%.1f" height="12" rx="2" fill="%s"><title>%s %s: %s → %s (%s)</title></rect>`,
					s.kind, br.x, by, br.w, color, xmlText(r.server), s.kind, fmtDur(s.start), fmtDur(s.end), fmtDur(s.end-s.start))
				if !a.narrow {
					fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#fff" font-size="10">%s</text>`, br.x+3, by+10, xmlText(s.kind+" "+fmtBar(s.end-s.start)))
				}
			}
		}
		for _, m := range r.marks {
			mx, my := x(m.at), y+tlRowH/2
			taken = append(taken, extent{mx - 9, mx + 9})
			switch m.kind {
			case "deferred":
				fmt.Fprintf(&b, `<path class="deferred" d="M%.1f %d l6 6 l-6 6 l-6 -6 z" fill="#e0a800"><title>deferred: %s at %s</title></path>`, mx, my-6, xmlText(m.text), fmtDur(m.at))
			default:
				fmt.Fprintf(&b, `<path class="%s" d="M%.1f %d l10 10 m0 -10 l-10 10" stroke="#d64545" stroke-width="2.5"><title>%s at %s: %s</title></path>`, m.kind, mx-5, my-5, m.kind, fmtDur(m.at), xmlText(m.text))
			}
		}
		for _, a := range attempts {
			if !a.narrow {
				continue
			}
			note := strings.Join(a.labels, ", ")
			if nx, anchor, ok := placeNote(a, float64(len(note))*5.6, taken); ok {
				taken = append(taken, noteExtent(nx, anchor, float64(len(note))*5.6))
				fmt.Fprintf(&b, `<text class="note" x="%.1f" y="%d" fill="#555" font-size="10" text-anchor="%s">%s</text>`, nx, y+21, anchor, xmlText(note))
			}
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#333">%s</text>`, tlLabelW+tlPlotW+10, y+21, xmlText(clip(rowOutcome(r), 52)))
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// extent is a horizontal stretch of a row that something occupies, in
// pixels.
type extent struct{ from, to float64 }

// bar is one drawn span.
type bar struct {
	span span
	x, w float64
}

// attempt is one connect of a row and the list after it, as drawn.
type attempt struct {
	from, to float64
	bars     []bar
	labels   []string
	narrow   bool // a bar is too narrow for its label
}

// placeNote finds where a note of width w about a goes: after it, or
// else before it, within the plot and over nothing in taken; ok is false
// when neither fits (the bars' tooltips still say it).
func placeNote(a attempt, w float64, taken []extent) (x float64, anchor string, ok bool) {
	free := func(e extent) bool {
		if e.from < tlLabelW || e.to > tlLabelW+tlPlotW {
			return false
		}
		for _, t := range taken {
			if t.from < e.to && e.from < t.to && !(t.from >= a.from && t.to <= a.to) {
				return false
			}
		}
		return true
	}
	// After the attempt, stepping past a mark at its end (a failure's ✕).
	for nx := a.to + 6; nx <= a.to+36; nx += 6 {
		if free(extent{nx, nx + w}) {
			return nx, "start", true
		}
	}
	if nx := a.from - 6; free(extent{nx - w, nx}) {
		return nx, "end", true
	}
	return 0, "", false
}

// noteExtent is where a note placed at x with anchor lies.
func noteExtent(x float64, anchor string, w float64) extent {
	if anchor == "end" {
		return extent{x - w, x}
	}
	return extent{x, x + w}
}

// fmtBar is a bar's duration: fmtDur, with "<0.1ms" for what would read
// 0.0ms.
func fmtBar(d time.Duration) string {
	if d < 50*time.Microsecond {
		return "<0.1ms"
	}
	return fmtDur(d)
}

// rowOutcome is the text at the right of a row: "ready, 3 tools",
// "deferred (2 cached tools)", "failed: <cause>".
func rowOutcome(r *timelineRow) string {
	outcome := r.outcome
	for _, m := range r.marks {
		if m.kind == "deferred" && !strings.HasPrefix(outcome, "ready") {
			outcome = "deferred (" + m.text + ")"
		}
		if m.kind == "failed" {
			outcome = "failed: " + errorCause(r.server, m.text)
		}
	}
	return outcome
}

func xmlText(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

func xmlAttr(s string) string { return xmlText(s) }
