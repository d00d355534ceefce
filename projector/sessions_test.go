package projector

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mcplife/mcplife/events"
)

func TestSessionIndex(t *testing.T) {
	// Two sessions interleaved in one global order, as a store holds them.
	var seq uint64
	at := func(s string, d time.Duration, ev events.Event) events.Envelope {
		seq++
		env := events.MustNew(s, ev, t0.Add(d))
		env.Seq = seq
		return env
	}
	raw := func(s string, d time.Duration, typ string) events.Envelope {
		seq++
		return events.Envelope{Seq: seq, Stream: s, SessionID: s, Type: typ, Schema: 1, Time: t0.Add(d), Data: []byte(`{}`)}
	}
	filtered := events.ServerConfig{Command: "fs", DisabledTools: []string{"fs_1"}}
	envs := []events.Envelope{
		at("late", 5*time.Second, &events.SessionStarted{Cwd: "/late"}),
		at("early", 1*time.Second, &events.SessionStarted{Cwd: "/early"}),
		at("early", 1*time.Second, &events.DiscoveryFailed{Path: ".mcp.json", Error: "bad json"}),
		at("early", 1*time.Second, discovered("fs", filtered)),
		at("early", 1*time.Second, discovered("git", events.ServerConfig{Command: "git"})),
		at("early", 1*time.Second, &events.ServerInvalid{Server: "bad", Error: "no command"}),
		at("early", 1*time.Second, &events.ServerSkipped{Server: "off", Reason: events.SkipDisabled}),
		at("early", 1*time.Second, &events.ConnectStarted{Server: "fs"}),
		at("early", 1*time.Second, &events.ConnectStarted{Server: "git"}),
		at("late", 6*time.Second, &events.ConnectStarted{Server: "web"}),
		at("early", 2*time.Second, &events.ServerConnected{Server: "fs"}),
		at("early", 2*time.Second, listed("fs", defs("fs", 3))),
		at("early", 2*time.Second, &events.ConnectFailed{Server: "git", Error: "timeout"}),
		at("early", 3*time.Second, &events.ToolsListFailed{Server: "fs", Error: "later"}),
		at("early", 3*time.Second, &events.ToolCallStarted{Server: "fs", Tool: "fs_0"}),
		raw("early", 3*time.Second, "SomethingNew"),
		at("early", 3*time.Second, &events.ToolCallFinished{Server: "fs", Tool: "fs_0"}),
		at("late", 7*time.Second, &events.CachedToolsServed{Server: "web", Tools: defs("web", 4)}),
		at("early", 4*time.Second, &events.Disconnected{Server: "fs", Reason: events.ReasonRequested}),
		at("early", 9*time.Second, &events.SessionClosed{}),
		// A session without SessionStarted starts at its first event.
		at("orphan", 500*time.Millisecond, &events.ConnectStarted{Server: "x"}),
	}
	x := NewSessionIndex()
	for _, env := range envs {
		x.Apply(env)
	}
	x.Apply(envs[3]) // redelivery

	want := []SessionSummary{
		{ID: "orphan", Start: t0.Add(500 * time.Millisecond), Last: t0.Add(500 * time.Millisecond), Servers: []string{"x"}, Events: 1, LastSeq: 21},
		{ID: "early", Start: t0.Add(time.Second), End: t0.Add(9 * time.Second), Last: t0.Add(9 * time.Second), Cwd: "/early",
			Servers: []string{"fs", "git"}, Tools: 0, PeakTools: 2, Failures: 4, Events: 17, LastSeq: 20},
		{ID: "late", Start: t0.Add(5 * time.Second), Last: t0.Add(7 * time.Second), Cwd: "/late",
			Servers: []string{"web"}, Tools: 4, PeakTools: 4, Events: 3, LastSeq: 18},
	}
	if diff := cmp.Diff(want, x.Sessions(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Sessions mismatch (-want +got):\n%s", diff)
	}
	early, ok := x.Session("early")
	if !ok || !early.Closed() || early.Duration() != 8*time.Second {
		t.Errorf("early: ok %v closed %v duration %v; want closed after 8s", ok, early.Closed(), early.Duration())
	}
	if late, _ := x.Session("late"); late.Closed() || late.Duration() != 2*time.Second {
		t.Errorf("late: closed %v duration %v; want open, 2s so far", late.Closed(), late.Duration())
	}
	if _, ok := x.Session("nope"); ok {
		t.Error("Session(nope) reported ok")
	}
	if c := x.Counts(); c.Unknown != 1 || c.Stale != 1 || c.Undecodable != 0 {
		t.Errorf("counts = %+v, want 1 unknown and 1 stale", c)
	}
	if x.LastSeq() != 21 {
		t.Errorf("LastSeq = %d, want 21", x.LastSeq())
	}
}

func TestSessionIndexToolsMatchToolView(t *testing.T) {
	envs := realisticSession("s", 10, 15, 5000)
	x := NewSessionIndex()
	v := NewToolView("s")
	peak := 0
	for _, env := range envs {
		x.Apply(env)
		v.Apply(env)
		peak = max(peak, len(v.Tools()))
	}
	s, _ := x.Session("s")
	if s.Tools != len(v.Tools()) || s.PeakTools != peak {
		t.Errorf("index counts %d tools (peak %d), the view %d (peak %d)", s.Tools, s.PeakTools, len(v.Tools()), peak)
	}
	if s.Events != len(envs) || s.Failures != 1 || len(s.Servers) != 10 {
		t.Errorf("summary = %+v", s)
	}
}
