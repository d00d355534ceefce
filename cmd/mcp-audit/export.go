package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mcplife/mcplife/events"
)

// exportFormat names the shape of `export -o FILE.json`; it changes only
// when a field changes meaning or goes away.
const exportFormat = "mcplife-export/1"

// exportJSON is the whole of `export -o FILE.json`, and what the HTML
// report shows. Offsets (offsetMs, atMs) are milliseconds from the
// session's first event, except in timeline, whose offsets are from the
// first ConnectStarted as in `mcp-audit timeline`.
type exportJSON struct {
	Format   string             `json:"format"`
	Session  exportSessionJSON  `json:"session"`
	Timeline exportTimelineJSON `json:"timeline"`
	Servers  []exportServerJSON `json:"servers"`
	Calls    []exportCallJSON   `json:"calls"`
	Events   []exportEventJSON  `json:"events"`
}

type exportSessionJSON struct {
	ID         string    `json:"id"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end,omitzero"`
	DurationMs float64   `json:"durationMs"`
	Closed     bool      `json:"closed"`
	Cwd        string    `json:"cwd"`
	Host       string    `json:"host"`
	Events     int       `json:"events"`
}

type exportTimelineJSON struct {
	EndMs   float64                 `json:"endMs"`
	Gates   []exportGateJSON        `json:"gates"`
	Servers []exportTimelineRowJSON `json:"servers"`
}

type exportGateJSON struct {
	Round  int64   `json:"round"`
	AtMs   float64 `json:"atMs"`
	GateMs float64 `json:"gateMs"`
}

type exportTimelineRowJSON struct {
	Server    string           `json:"server"`
	Transport string           `json:"transport"`
	Outcome   string           `json:"outcome"`
	Spans     []exportSpanJSON `json:"spans"`
	Marks     []exportMarkJSON `json:"marks"`
}

type exportSpanJSON struct {
	Kind    string  `json:"kind"` // "connect" or "list"
	StartMs float64 `json:"startMs"`
	EndMs   float64 `json:"endMs"`
	Failed  bool    `json:"failed,omitempty"`
	Cut     bool    `json:"cut,omitempty"`
	Open    bool    `json:"open,omitempty"`
}

type exportMarkJSON struct {
	Kind string  `json:"kind"` // "deferred", "failed" or "dropped"
	AtMs float64 `json:"atMs"`
	Text string  `json:"text"`
}

// exportServerJSON is one row of the server table: what the session saw
// of a server, the status it ended in and the last error.
type exportServerJSON struct {
	Name            string            `json:"name"`
	Transport       string            `json:"transport"`
	Source          events.SourceMeta `json:"source"`
	Gate            string            `json:"gate,omitempty"` // outcome at the first startup gate
	Attempts        int               `json:"attempts"`
	ConnectMs       *float64          `json:"connectMs,omitempty"`
	PeerName        string            `json:"peerName,omitempty"`
	PeerVersion     string            `json:"peerVersion,omitempty"`
	ProtocolVersion string            `json:"protocolVersion,omitempty"`
	Tools           int               `json:"tools"`
	Resources       int               `json:"resources"`
	Prompts         int               `json:"prompts"`
	Status          string            `json:"status"` // the last status: connected, failed, disconnected (reason)…
	Error           string            `json:"error,omitempty"`
}

// exportCallJSON is one tool call.
type exportCallJSON struct {
	Seq         uint64   `json:"seq"`
	OffsetMs    float64  `json:"offsetMs"`
	Server      string   `json:"server"`
	Tool        string   `json:"tool"`
	Name        string   `json:"name"`
	DurationMs  *float64 `json:"durationMs,omitempty"`
	Outcome     string   `json:"outcome"` // ok, tool-error, error, cancelled, unfinished
	Error       string   `json:"error,omitempty"`
	OutputBytes int64    `json:"outputBytes,omitempty"`
	Truncated   bool     `json:"truncated,omitempty"`
	Retried     bool     `json:"retried,omitempty"`
	Deferred    bool     `json:"deferred,omitempty"`
}

// exportEventJSON is one event as replay shows it, with its data.
type exportEventJSON struct {
	Seq           uint64          `json:"seq"`
	OffsetMs      float64         `json:"offsetMs"`
	Time          time.Time       `json:"time"`
	Type          string          `json:"type"`
	Server        string          `json:"server,omitempty"`
	CorrelationID string          `json:"correlationId,omitempty"`
	Summary       string          `json:"summary"`
	DurationMs    *float64        `json:"durationMs,omitempty"`
	Data          json.RawMessage `json:"data"`
}

const exportUsage = "usage: mcp-audit export SESSION -o FILE.html|FILE.json"

func runExport(ctx context.Context, g *globals, args []string) error {
	fs := newFlagSet("export", g)
	out := fs.String("o", "", "output file, .html or .json")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	ext := strings.ToLower(filepath.Ext(*out))
	if len(pos) != 1 || (ext != ".html" && ext != ".json") {
		return usagef("%s", exportUsage)
	}
	st, err := g.openReadOnly()
	if err != nil {
		return err
	}
	defer st.Close()
	session, err := resolveSessionRef(ctx, st, pos[0])
	if err != nil {
		return err
	}
	var envs []events.Envelope
	for env, err := range st.ReadStream(ctx, session, 1) {
		if err != nil {
			return err
		}
		envs = append(envs, env)
	}
	doc, tl, err := buildExport(session, envs)
	if err != nil {
		return err
	}
	var b []byte
	if ext == ".json" {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return err
		}
		b = buf.Bytes()
	} else {
		b = renderExportHTML(doc, tl)
	}
	if err := os.WriteFile(*out, b, 0o600); err != nil {
		return usagef("write %s: %v", *out, err)
	}
	if g.json {
		return g.writeJSON(map[string]any{"session": session, "file": *out, "servers": len(doc.Servers), "calls": len(doc.Calls), "events": len(doc.Events)})
	}
	fmt.Fprintf(g.stdout, "wrote %s: %d servers, %d calls, %d events\n", escapeLine(*out), len(doc.Servers), len(doc.Calls), len(doc.Events))
	return nil
}

// buildExport folds a session's envelopes into the report, and returns
// the startup timeline for the picture.
func buildExport(session string, envs []events.Envelope) (*exportJSON, *timelineData, error) {
	if len(envs) == 0 {
		return nil, nil, usagef("session %s has no events", session)
	}
	tl, err := buildTimeline(session, func(yield func(events.Envelope, error) bool) {
		for _, env := range envs {
			if !yield(env, nil) {
				return
			}
		}
	})
	if err != nil {
		return nil, nil, err
	}
	doc := &exportJSON{Format: exportFormat, Servers: []exportServerJSON{}, Calls: []exportCallJSON{}, Events: []exportEventJSON{}}
	start := envs[0].Time
	doc.Session = exportSessionJSON{ID: session, Start: start, Host: envs[0].Host, Events: len(envs)}
	servers := map[string]*exportServerJSON{}
	var order []string
	server := func(name string) *exportServerJSON {
		s := servers[name]
		if s == nil {
			s = &exportServerJSON{Name: name}
			servers[name] = s
			order = append(order, name)
		}
		return s
	}
	open := map[string]int{} // correlation id → index in doc.Calls
	for _, env := range envs {
		ev, err := events.Decode(env)
		if err != nil {
			ev = &events.Unknown{TypeName: env.Type, Schema: env.Schema, Data: env.Data}
		}
		offset := env.Time.Sub(start)
		e := exportEventJSON{Seq: env.Seq, OffsetMs: ms(offset), Time: env.Time, Type: env.Type, Server: events.ServerOf(ev),
			CorrelationID: env.CorrelationID, Summary: events.Describe(ev), Data: env.Data}
		if d, ok := events.DurationOf(ev); ok {
			e.DurationMs = msPtr(d)
		}
		doc.Events = append(doc.Events, e)
		switch e := ev.(type) {
		case *events.SessionStarted:
			doc.Session.Cwd = e.Cwd
		case *events.SessionClosed:
			doc.Session.End, doc.Session.Closed = env.Time, true
		case *events.ServerDiscovered:
			s := server(e.Server)
			s.Transport, s.Source, s.Status = e.Transport, e.Source, "discovered"
		case *events.ServerSkipped:
			s := server(e.Server)
			s.Source, s.Status = e.Source, "skipped ("+string(e.Reason)+")"
		case *events.ServerInvalid:
			s := server(e.Server)
			s.Source, s.Status, s.Error = e.Source, "invalid", e.Error
		case *events.ConnectStarted:
			s := server(e.Server)
			s.Transport, s.Status = e.Transport, "connecting"
			s.Attempts++
		case *events.ServerConnected:
			s := server(e.Server)
			s.Status, s.PeerName, s.PeerVersion, s.ProtocolVersion = "connected", e.PeerName, e.PeerVersion, e.ProtocolVersion
			s.ConnectMs = msPtr(e.Duration)
		case *events.ConnectFailed:
			s := server(e.Server)
			s.Status, s.Error = "failed", e.Error
		case *events.ToolsListed:
			server(e.Server).Tools = e.Count
		case *events.ToolsListFailed:
			server(e.Server).Error = e.Error
		case *events.ResourcesListed:
			server(e.Server).Resources = e.Count
		case *events.PromptsListed:
			server(e.Server).Prompts = e.Count
		case *events.CachedToolsServed:
			s := server(e.Server)
			if s.Tools == 0 {
				s.Tools = e.Count
			}
		case *events.StartupGateElapsed:
			for name, outcome := range e.Outcomes {
				if s := server(name); s.Gate == "" {
					s.Gate = string(outcome)
				}
			}
		case *events.Disconnected:
			s := server(e.Server)
			s.Status = "disconnected (" + string(e.Reason) + ")"
			if e.Error != "" {
				s.Error = e.Error
			}
		case *events.ReconnectScheduled:
			server(e.Server).Status = "reconnecting"
		case *events.ReconnectGaveUp:
			s := server(e.Server)
			s.Status, s.Error = "failed (gave up)", e.LastError
		case *events.AuthRequired:
			server(e.Server).Status = "needs-auth"
		case *events.ToolCallStarted:
			c := exportCallJSON{Seq: env.Seq, OffsetMs: ms(offset), Server: e.Server, Tool: e.Tool, Name: e.Name, Outcome: "unfinished", Deferred: e.Deferred}
			doc.Calls = append(doc.Calls, c)
			open[callKey(env.CorrelationID, e.Server, e.Tool)] = len(doc.Calls) - 1
		case *events.ToolCallFinished:
			key := callKey(env.CorrelationID, e.Server, e.Tool)
			i, ok := open[key]
			if !ok {
				continue
			}
			delete(open, key)
			c := &doc.Calls[i]
			c.DurationMs, c.Error, c.OutputBytes, c.Truncated, c.Retried = msPtr(e.Duration), e.Error, e.OutputBytes, e.Truncated, e.Retried
			switch {
			case e.Cancelled:
				c.Outcome = "cancelled"
			case e.Error != "":
				c.Outcome = "error"
			case e.IsError:
				c.Outcome = "tool-error"
			default:
				c.Outcome = "ok"
			}
		}
	}
	last := envs[len(envs)-1].Time
	if doc.Session.Closed {
		last = doc.Session.End
	}
	doc.Session.DurationMs = ms(last.Sub(start))
	for _, name := range order {
		doc.Servers = append(doc.Servers, *servers[name])
	}
	doc.Timeline = exportTimelineJSON{EndMs: ms(tl.end), Gates: []exportGateJSON{}, Servers: []exportTimelineRowJSON{}}
	for _, gl := range tl.gates {
		doc.Timeline.Gates = append(doc.Timeline.Gates, exportGateJSON{Round: gl.round, AtMs: ms(gl.at), GateMs: ms(gl.gate)})
	}
	for _, r := range tl.rows {
		row := exportTimelineRowJSON{Server: r.server, Transport: r.transport, Outcome: r.outcome, Spans: []exportSpanJSON{}, Marks: []exportMarkJSON{}}
		for _, s := range r.spans {
			row.Spans = append(row.Spans, exportSpanJSON{Kind: s.kind, StartMs: ms(s.start), EndMs: ms(s.end), Failed: s.failed, Cut: s.cut, Open: s.open})
		}
		for _, m := range r.marks {
			row.Marks = append(row.Marks, exportMarkJSON{Kind: m.kind, AtMs: ms(m.at), Text: m.text})
		}
		doc.Timeline.Servers = append(doc.Timeline.Servers, row)
	}
	return doc, tl, nil
}

// callKey matches a call's end to its start: by correlation id, else by
// server and tool.
func callKey(correlation, server, tool string) string {
	if correlation != "" {
		return "c\x00" + correlation
	}
	return "t\x00" + server + "\x00" + tool
}

func msPtr(d time.Duration) *float64 {
	v := ms(d)
	return &v
}

// exportDataLimit bounds the event data the HTML report shows per event;
// the JSON export keeps all of it.
const exportDataLimit = 4 << 10

// renderExportHTML writes the report as one HTML file: inline style and
// script, no URL to load, and a policy that forbids loading any.
func renderExportHTML(doc *exportJSON, tl *timelineData) []byte {
	var b bytes.Buffer
	h := html.EscapeString
	s := doc.Session
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString(`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">` + "\n")
	fmt.Fprintf(&b, "<title>mcplife session %s</title>\n<style>%s</style>\n</head>\n<body>\n", h(s.ID), exportCSS)
	fmt.Fprintf(&b, "<h1>Session <code>%s</code></h1>\n<dl class=\"meta\">", h(s.ID))
	status := "open"
	if s.Closed {
		status = "closed"
	}
	for _, kv := range [][2]string{
		{"started", s.Start.UTC().Format(time.RFC3339Nano)},
		{"duration", fmtDur(time.Duration(s.DurationMs*float64(time.Millisecond))) + " (" + status + ")"},
		{"cwd", s.Cwd},
		{"host", cmp.Or(s.Host, "-")},
		{"events", strconv.Itoa(s.Events)},
		{"servers", strconv.Itoa(len(doc.Servers))},
		{"tool calls", strconv.Itoa(len(doc.Calls))},
	} {
		fmt.Fprintf(&b, "<dt>%s</dt><dd>%s</dd>", h(kv[0]), h(kv[1]))
	}
	b.WriteString("</dl>\n")

	b.WriteString("<h2 id=\"startup\">Startup</h2>\n<div class=\"timeline\">")
	b.Write(renderSVG(tl))
	b.WriteString("</div>\n")

	b.WriteString("<h2 id=\"servers\">Servers</h2>\n<table class=\"servers\"><thead><tr><th>server</th><th>transport</th><th>source</th><th>gate</th><th>connect</th><th>peer</th><th>protocol</th><th>tools</th><th>resources</th><th>prompts</th><th>last status</th><th>error</th></tr></thead><tbody>\n")
	for _, sv := range doc.Servers {
		connect := "-"
		if sv.ConnectMs != nil {
			connect = fmtDur(time.Duration(*sv.ConnectMs * float64(time.Millisecond)))
		}
		peer := strings.TrimSpace(sv.PeerName + " " + sv.PeerVersion)
		fmt.Fprintf(&b, "<tr><td><b>%s</b></td><td>%s</td><td>%s</td><td class=\"st %s\">%s</td><td class=\"num\">%s</td><td>%s</td><td>%s</td><td class=\"num\">%d</td><td class=\"num\">%d</td><td class=\"num\">%d</td><td class=\"st %s\">%s</td><td class=\"err\">%s</td></tr>\n",
			h(sv.Name), h(sv.Transport), h(sourceLabel(sv.Source)), statusClass(sv.Gate), h(cmp.Or(sv.Gate, "-")), h(connect), h(cmp.Or(peer, "-")),
			h(cmp.Or(sv.ProtocolVersion, "-")), sv.Tools, sv.Resources, sv.Prompts, statusClass(sv.Status), h(sv.Status), h(firstLine(sv.Error)))
	}
	b.WriteString("</tbody></table>\n")

	b.WriteString("<h2 id=\"calls\">Tool calls</h2>\n")
	if len(doc.Calls) == 0 {
		b.WriteString("<p class=\"note\">No tool calls.</p>\n")
	} else {
		b.WriteString("<table class=\"calls\"><thead><tr><th>#</th><th>at</th><th>server</th><th>tool</th><th>exposed as</th><th>duration</th><th>outcome</th><th>output</th><th>error</th></tr></thead><tbody>\n")
		for _, c := range doc.Calls {
			dur := "-"
			if c.DurationMs != nil {
				dur = fmtDur(time.Duration(*c.DurationMs * float64(time.Millisecond)))
			}
			output := "-"
			if c.OutputBytes > 0 {
				output = strconv.FormatInt(c.OutputBytes, 10) + " B"
			}
			var flags []string
			if c.Truncated {
				flags = append(flags, "truncated")
			}
			if c.Retried {
				flags = append(flags, "retried")
			}
			if c.Deferred {
				flags = append(flags, "deferred")
			}
			if len(flags) > 0 {
				output += " (" + strings.Join(flags, ", ") + ")"
			}
			fmt.Fprintf(&b, "<tr><td class=\"num\">%d</td><td class=\"num\">%s</td><td>%s</td><td>%s</td><td><code>%s</code></td><td class=\"num\">%s</td><td class=\"st %s\">%s</td><td>%s</td><td class=\"err\">%s</td></tr>\n",
				c.Seq, h(fmtOffset(time.Duration(c.OffsetMs*float64(time.Millisecond)))), h(c.Server), h(c.Tool), h(c.Name), h(dur),
				statusClass(c.Outcome), h(c.Outcome), h(output), h(firstLine(c.Error)))
		}
		b.WriteString("</tbody></table>\n")
	}

	b.WriteString("<h2 id=\"events\">Events</h2>\n<div class=\"filter\"><label>filter <input id=\"filter\" type=\"search\" placeholder=\"text in the event line\"></label> ")
	b.WriteString("<label>type <select id=\"type-filter\"><option value=\"\">all</option>")
	types := map[string]bool{}
	serverNames := map[string]bool{}
	for _, e := range doc.Events {
		types[e.Type] = true
		if e.Server != "" {
			serverNames[e.Server] = true
		}
	}
	for _, t := range sortedKeys(types) {
		fmt.Fprintf(&b, "<option>%s</option>", h(t))
	}
	b.WriteString("</select></label> <label>server <select id=\"server-filter\"><option value=\"\">all</option>")
	for _, n := range sortedKeys(serverNames) {
		fmt.Fprintf(&b, "<option>%s</option>", h(n))
	}
	fmt.Fprintf(&b, "</select></label> <span id=\"event-count\" class=\"note\" data-total=\"%d\"></span></div>\n", len(doc.Events))
	b.WriteString("<table id=\"events\" class=\"events\"><thead><tr><th>#</th><th>at</th><th>type</th><th>server</th><th>summary</th></tr></thead><tbody>\n")
	for _, e := range doc.Events {
		summary := h(e.Summary)
		if e.DurationMs != nil {
			summary += " <span class=\"note\">(" + h(fmtDur(time.Duration(*e.DurationMs*float64(time.Millisecond)))) + ")</span>"
		}
		data := string(e.Data)
		if len(data) > exportDataLimit {
			data = data[:exportDataLimit] + "… (" + strconv.Itoa(len(e.Data)) + " bytes, cut; the JSON export has all of it)"
		}
		fmt.Fprintf(&b, "<tr data-type=\"%s\" data-server=\"%s\"><td class=\"num\">%d</td><td class=\"num\">%s</td><td class=\"type %s\">%s</td><td>%s</td><td>%s<details><summary>data</summary><pre>%s</pre></details></td></tr>\n",
			h(e.Type), h(e.Server), e.Seq, h(fmtOffset(time.Duration(e.OffsetMs*float64(time.Millisecond)))), typeClass(e.Type), h(e.Type), h(e.Server), summary, h(data))
	}
	b.WriteString("</tbody></table>\n")
	fmt.Fprintf(&b, "<p class=\"note\">Written by mcp-audit export (%s). Values of env and headers are never recorded.</p>\n", exportFormat)
	fmt.Fprintf(&b, "<script>%s</script>\n</body>\n</html>\n", exportJS)
	return b.Bytes()
}

func statusClass(s string) string {
	switch {
	case s == "ready" || s == "ok" || s == "connected":
		return "good"
	case s == "deferred" || s == "awaited" || s == "connecting" || s == "reconnecting" || s == "needs-auth" || s == "unfinished" || s == "cancelled":
		return "warn"
	case strings.HasPrefix(s, "failed") || s == "error" || s == "tool-error" || s == "invalid":
		return "bad"
	}
	return ""
}

func typeClass(t string) string {
	switch t {
	case events.TypeConnectFailed, events.TypeToolsListFailed, events.TypeServerInvalid, events.TypeDiscoveryFailed, events.TypeRecordingGap, events.TypeReconnectGaveUp:
		return "bad"
	case events.TypeServerConnected, events.TypeToolsListed:
		return "good"
	case events.TypeStartupGateElapsed, events.TypeCachedToolsServed:
		return "warn"
	}
	return ""
}

const exportCSS = `body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ddd;padding-bottom:4px}
code{font-family:ui-monospace,Menlo,Consolas,monospace}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:2px 16px;font-size:13px}dl.meta dt{color:#666}dl.meta dd{margin:0}
table{border-collapse:collapse;font-size:12px;width:100%}th,td{border-bottom:1px solid #eee;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f4f4f6;position:sticky;top:0}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.good{color:#1f7a43}.warn{color:#9a6b00}.bad{color:#c0392b}td.err{color:#c0392b;max-width:30em;overflow-wrap:anywhere}
.note{color:#666;font-size:12px}.timeline{overflow-x:auto}
.filter{margin:8px 0;font-size:13px}.filter input{width:20em}
table.events td:nth-child(5){overflow-wrap:anywhere}details summary{color:#888;cursor:pointer;font-size:11px}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f7f7f9;padding:6px;margin:4px 0;max-height:20em;overflow:auto}
tr[hidden]{display:none}`

// exportJS filters the event list by text, type and server, and says how
// many events show; it runs once on load, so the count is there at once.
const exportJS = `(function(){
var q=document.getElementById('filter'),ty=document.getElementById('type-filter'),sv=document.getElementById('server-filter'),
count=document.getElementById('event-count'),rows=Array.prototype.slice.call(document.querySelectorAll('#events tbody tr'));
function apply(){var s=q.value.toLowerCase(),t=ty.value,v=sv.value,n=0;
rows.forEach(function(r){var ok=(!t||r.getAttribute('data-type')===t)&&(!v||r.getAttribute('data-server')===v)&&(!s||r.textContent.toLowerCase().indexOf(s)>=0);
r.hidden=!ok;if(ok){n++;}});
count.textContent=n+' of '+rows.length+' events shown';count.setAttribute('data-shown',String(n));}
q.addEventListener('input',apply);ty.addEventListener('change',apply);sv.addEventListener('change',apply);
var p=new URLSearchParams(location.hash.slice(1));if(p.get('type')){ty.value=p.get('type');}if(p.get('server')){sv.value=p.get('server');}if(p.get('q')){q.value=p.get('q');}
apply();document.body.setAttribute('data-filter-ready','1');})();`
