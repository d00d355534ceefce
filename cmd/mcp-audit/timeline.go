package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
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
	round int64
	at    time.Duration
	gate  time.Duration
}

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
				r.outcome = fmt.Sprintf("ready, %d tools", e.Count)
			}
		case *events.ToolsListFailed:
			r := row(e.Server)
			closeOpen(r, "list", at, true)
			r.marks = append(r.marks, mark{kind: "failed", at: at, text: firstLine(e.Error)})
			r.outcome = "list failed"
		case *events.CachedToolsServed:
			r := row(e.Server)
			r.marks = append(r.marks, mark{kind: "deferred", at: at, text: fmt.Sprintf("%d cached tools", e.Count)})
		case *events.Disconnected:
			if r, ok := rows[e.Server]; ok {
				requested := e.Reason == events.ReasonRequested || e.Reason == events.ReasonReload || e.Reason == events.ReasonConfigChanged
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
			d.gates = append(d.gates, gateLine{round: e.Round, at: at, gate: e.Gate})
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
		b.WriteString("<p>One row per server. Blue bar: connect + initialize. Green bar: tools/list. Red: failed. Grey: cut short by a requested disconnect or a reload. Dashed line: the startup gate. Diamond: tools served from the cache (deferred). Cross: failure.</p>\n")
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
	fmt.Fprintf(g.stdout, "wrote %s: %d server rows, %d gate line(s)\n", *out, len(d.rows), len(d.gates))
	return nil
}

const (
	tlLabelW = 230
	tlPlotW  = 720
	tlRightW = 250
	tlRowH   = 34
	tlTop    = 72
)

// renderSVG draws the waterfall. Every element carries a class and a
// <title>, so the picture reads without a legend and parses as XML.
func renderSVG(d *timelineData) []byte {
	end := d.end
	for _, gl := range d.gates {
		end = max(end, gl.at+gl.at/10)
	}
	if end <= 0 {
		end = time.Millisecond
	}
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
	fmt.Fprintf(&b, `<text x="8" y="36" fill="#555">blue = connect + initialize, green = tools/list, red = failed, grey = cut short by a disconnect or reload, dashed = startup gate, ◆ = deferred (cached tools), ✕ = failure</text>`+"\n")
	// Time axis.
	axisY := tlTop + len(d.rows)*tlRowH + 8
	fmt.Fprintf(&b, `<g class="axis"><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>`, tlLabelW, axisY, tlLabelW+tlPlotW, axisY)
	for i := 0; i <= 5; i++ {
		t := end * time.Duration(i) / 5
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/><text x="%.1f" y="%d" text-anchor="middle" fill="#555">%s</text>`,
			x(t), tlTop-4, x(t), axisY, x(t), axisY+16, xmlText(fmtDur(t)))
	}
	b.WriteString("</g>\n")
	for i, r := range d.rows {
		y := tlTop + i*tlRowH
		fmt.Fprintf(&b, `<g class="row" data-server="%s">`, xmlAttr(r.server))
		if i%2 == 0 {
			fmt.Fprintf(&b, `<rect x="0" y="%d" width="%d" height="%d" fill="#f7f7f9"/>`, y, width, tlRowH)
		}
		fmt.Fprintf(&b, `<text x="8" y="%d" font-weight="bold">%s</text><text x="8" y="%d" fill="#666" font-size="10">%s</text>`,
			y+15, xmlText(r.server), y+27, xmlText(r.transport))
		for _, s := range r.spans {
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
			w := max(x(s.end)-x(s.start), 2)
			by := y + 8
			if s.kind == "list" {
				by = y + 14
			}
			fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%d" width="%.1f" height="12" rx="2" fill="%s"><title>%s %s: %s → %s (%s)</title></rect>`,
				s.kind, x(s.start), by, w, color, xmlText(r.server), s.kind, fmtDur(s.start), fmtDur(s.end), fmtDur(s.end-s.start))
			if w > 60 {
				fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#fff" font-size="10">%s %s</text>`, x(s.start)+3, by+10, s.kind, xmlText(fmtDur(s.end-s.start)))
			}
		}
		for _, m := range r.marks {
			mx, my := x(m.at), y+tlRowH/2
			switch m.kind {
			case "deferred":
				fmt.Fprintf(&b, `<path class="deferred" d="M%.1f %d l6 6 l-6 6 l-6 -6 z" fill="#e0a800"><title>deferred: %s at %s</title></path>`, mx, my-6, xmlText(m.text), fmtDur(m.at))
			default:
				fmt.Fprintf(&b, `<path class="%s" d="M%.1f %d l10 10 m0 -10 l-10 10" stroke="#d64545" stroke-width="2.5"><title>%s at %s: %s</title></path>`, m.kind, mx-5, my-5, m.kind, fmtDur(m.at), xmlText(m.text))
			}
		}
		outcome := r.outcome
		for _, m := range r.marks {
			if m.kind == "deferred" && !strings.HasPrefix(outcome, "ready") {
				outcome = "deferred (" + m.text + ")"
			}
			if m.kind == "failed" {
				outcome = "failed: " + m.text
			}
		}
		if len(outcome) > 40 {
			outcome = outcome[:39] + "…"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#333">%s</text>`, tlLabelW+tlPlotW+10, y+20, xmlText(outcome))
		b.WriteString("</g>\n")
	}
	for _, gl := range d.gates {
		gx := x(gl.at)
		fmt.Fprintf(&b, `<g class="gate"><line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e0a800" stroke-width="2" stroke-dasharray="6 4"/><text x="%.1f" y="%d" fill="#a07800" font-size="11">gate %s (round %d) returned at %s</text><title>startup gate</title></g>`+"\n",
			gx, tlTop-10, gx, axisY, gx+4, tlTop-12, fmtDur(gl.gate), gl.round, fmtDur(gl.at))
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

func xmlText(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

func xmlAttr(s string) string { return xmlText(s) }
