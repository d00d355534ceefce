package projector

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcplife/mcplife/events"
)

// t0 is the fixed start of every fixture.
var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// recorder builds envelopes as a store would: sequential Seq and Version,
// times from a fake clock advanced explicitly.
type recorder struct {
	session string
	seq     uint64
	version uint64
	now     time.Time
	envs    []events.Envelope
}

func newRecorder(session string, seqStart uint64) *recorder {
	return &recorder{session: session, seq: seqStart, now: t0}
}

func (r *recorder) after(d time.Duration) *recorder {
	r.now = r.now.Add(d)
	return r
}

func (r *recorder) add(ev events.Event) events.Envelope {
	env := events.MustNew(r.session, ev, r.now)
	r.seq++
	r.version++
	env.Seq, env.Version = r.seq, r.version
	r.envs = append(r.envs, env)
	return env
}

// raw appends an envelope with an arbitrary type, schema and data.
func (r *recorder) raw(typ string, schema int, data string) events.Envelope {
	r.seq++
	r.version++
	env := events.Envelope{Seq: r.seq, Stream: r.session, Version: r.version, Type: typ, Schema: schema,
		Time: r.now, SessionID: r.session, Data: json.RawMessage(data)}
	r.envs = append(r.envs, env)
	return env
}

// defs returns n tool definitions with realistic schemas.
func defs(prefix string, n int) []events.ToolDef {
	out := make([]events.ToolDef, n)
	for i := range out {
		name := fmt.Sprintf("%s_%d", prefix, i)
		out[i] = events.ToolDef{
			Name:        name,
			Description: "Does " + name + " on the given path and returns a structured report of what changed.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"file path"},"recursive":{"type":"boolean"},"limit":{"type":"integer","minimum":1}},"required":["path"]}`),
		}
	}
	return out
}

func names(ds []events.ToolDef) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Name
	}
	return out
}

// realisticSession records a session with the given number of servers
// (each with toolsPerServer tools) and fills it with tool calls until it
// holds total envelopes. One server is slow and served from the cache at
// the gate, one fails, one drops mid-session and reconnects, one sends a
// list-changed; unknown event types appear among the calls.
func realisticSession(session string, servers, toolsPerServer, total int) []events.Envelope {
	r := newRecorder(session, 0)
	r.add(&events.SessionStarted{Cwd: "/home/dev/project", Gate: 250 * time.Millisecond})
	name := func(i int) string { return fmt.Sprintf("srv-%02d", i) }
	cfg := func(i int) events.ServerConfig {
		c := events.ServerConfig{Command: "node", Args: []string{fmt.Sprintf("server-%d.js", i)}, Env: map[string]string{"TOKEN": "secret"}}
		if i%5 == 4 {
			c.DisabledTools = []string{"*_0"}
		}
		return c
	}
	for i := range servers {
		c := cfg(i)
		r.add(&events.ServerDiscovered{Server: name(i), Transport: events.TransportStdio, ConfigHash: c.Hash(), Config: c.Redact(),
			Source: events.SourceMeta{Provider: "claude-code", ProviderName: "Claude Code", Path: "/home/dev/project/.mcp.json", Level: events.LevelProject}})
	}
	for i := range servers {
		r.add(&events.ConnectStarted{Server: name(i), Transport: events.TransportStdio, Attempt: 1, Round: 1})
	}
	outcomes := map[string]events.Outcome{}
	for i := range servers {
		r.after(3 * time.Millisecond)
		switch {
		case i == 1:
			r.add(&events.ConnectFailed{Server: name(i), Error: `Connection to MCP server "srv-01" timed out after 30000ms`, TimedOut: true})
			outcomes[name(i)] = events.OutcomeFailed
		case i == 2:
			outcomes[name(i)] = events.OutcomeDeferred
		default:
			r.add(&events.ServerConnected{Server: name(i), PeerName: "fixture", ProtocolVersion: "2025-11-25", Instructions: "Use carefully."})
			ds := defs(fmt.Sprintf("t%02d", i), toolsPerServer)
			r.add(&events.ToolsListed{Server: name(i), ConfigHash: cfg(i).Hash(), Tools: ds, ToolsHash: events.HashTools(ds), Count: len(ds), Cause: events.CauseInitial})
			outcomes[name(i)] = events.OutcomeReady
		}
	}
	if servers > 2 {
		ds := defs("t02", toolsPerServer)
		r.add(&events.CachedToolsServed{Server: name(2), ConfigHash: cfg(2).Hash(), Tools: ds, Count: len(ds), CacheAge: time.Hour})
	}
	r.after(200 * time.Millisecond)
	r.add(&events.StartupGateElapsed{Round: 1, Gate: 250 * time.Millisecond, Elapsed: 250 * time.Millisecond, Outcomes: outcomes})
	if servers > 2 {
		r.after(2 * time.Second)
		r.add(&events.ServerConnected{Server: name(2), PeerName: "slow"})
		ds := defs("t02", toolsPerServer)
		r.add(&events.ToolsListed{Server: name(2), ConfigHash: cfg(2).Hash(), Tools: ds, ToolsHash: events.HashTools(ds), Count: len(ds), Cause: events.CauseLate})
	}
	// Rare events recur with a period that scales with the session.
	p := max(total/20, 10)
	for i := 0; len(r.envs) < total; i++ {
		r.after(time.Millisecond)
		srv := i % servers
		if srv == 1 {
			srv = 0
		}
		switch {
		case i%(2*p) == p/2 && servers > 3:
			r.add(&events.ToolListChanged{Server: name(3)})
			ds := defs("t03", toolsPerServer+i%3)
			r.add(&events.ToolsListed{Server: name(3), ConfigHash: cfg(3).Hash(), Tools: ds, ToolsHash: events.HashTools(ds), Count: len(ds), Cause: events.CauseListChanged})
		case i%(4*p) == p && servers > 4:
			code := 1
			r.add(&events.Disconnected{Server: name(4), Reason: events.ReasonProcessExited, ExitStatus: &code})
			r.add(&events.ConnectStarted{Server: name(4), Transport: events.TransportStdio, Attempt: 2, Round: 2})
			r.add(&events.ServerConnected{Server: name(4)})
			ds := defs("t04", toolsPerServer)
			r.add(&events.ToolsListed{Server: name(4), ConfigHash: cfg(4).Hash(), Tools: ds, ToolsHash: events.HashTools(ds), Count: len(ds), Cause: events.CauseReconnect})
		case i%p == p/4:
			r.raw("ToolResultCaptured", 1, `{"server":"srv-00"}`)
		default:
			tool := fmt.Sprintf("t%02d_%d", srv, i%toolsPerServer)
			r.add(&events.ToolCallStarted{Server: name(srv), Tool: tool, Name: ToolName(name(srv), tool)})
			r.add(&events.ToolCallFinished{Server: name(srv), Tool: tool, Duration: 2 * time.Millisecond})
		}
	}
	return r.envs
}
