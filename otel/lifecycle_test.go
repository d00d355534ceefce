package otel_test

import (
	"context"
	"slices"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/otel"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
)

// recording appends events to a store at the times given, as a session
// would have recorded them.
type recording struct {
	t  *testing.T
	st store.Store
	id string
	at time.Time
}

func (r *recording) add(d time.Duration, correlation string, ev events.Event) {
	r.t.Helper()
	r.at = r.at.Add(d)
	env := events.MustNew(r.id, ev, r.at).WithCorrelation(correlation)
	if _, err := r.st.Append(r.t.Context(), r.id, store.AnyVersion, []events.Envelope{env}); err != nil {
		r.t.Fatal(err)
	}
}

func replayed(t *testing.T, st store.Store, id string) tracetest.SpanStubs {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	if err := otel.Replay(t.Context(), st, id, &otel.Options{TracerProvider: tp}); err != nil {
		t.Fatal(err)
	}
	return exp.GetSpans()
}

// The lifecycle the conventions do not cover becomes span events on the
// session span; a session recorded without its end (its host was killed)
// still ends, at its last event, marked unfinished, as do its open spans.
func TestLifecycleEvents(t *testing.T) {
	st := memory.New()
	defer st.Close()
	r := &recording{t: t, st: st, id: "s-lifecycle", at: time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)}
	ms := time.Millisecond
	r.add(0, "", &events.SessionStarted{Cwd: "/work", Gate: 250 * ms})
	r.add(ms, "", &events.ServerDiscovered{Server: "remote", Transport: events.TransportHTTP,
		Config: events.ServerConfig{Type: events.TransportHTTP, URL: "https://api.example.com/mcp"}})
	r.add(ms, "", &events.ServerDiscovered{Server: "local", Transport: events.TransportStdio})
	r.add(ms, "", &events.ConnectStarted{Server: "remote", Transport: events.TransportHTTP, Attempt: 1, Round: 1})
	r.add(0, "", &events.ConnectStarted{Server: "local", Transport: events.TransportStdio, Attempt: 1, Round: 1})
	r.add(5*ms, "", &events.AuthRequired{Server: "remote", Issuer: "https://auth.example.com", Scopes: []string{"read"}})
	r.add(0, "", &events.ConnectFailed{Server: "remote", Error: `MCP server needs authorization: "remote"`, Duration: 5 * ms})
	r.add(10*ms, "", &events.ServerConnected{Server: "local", ProtocolVersion: "2026-07-28", Duration: 15 * ms})
	r.add(0, "", &events.ToolsListed{Server: "local", Count: 2, Duration: 2 * ms, Cause: events.CauseInitial})
	r.add(0, "", &events.CachedToolsServed{Server: "remote", Count: 3, CacheAge: time.Hour})
	r.add(ms, "", &events.StartupGateElapsed{Round: 1, Gate: 250 * ms, Elapsed: 18 * ms,
		Outcomes: map[string]events.Outcome{"local": events.OutcomeReady, "remote": events.OutcomeNeedsAuth}})
	r.add(100*ms, "", &events.Disconnected{Server: "local", Reason: events.ReasonProcessExited, Reconnecting: true})
	r.add(0, "", &events.ReconnectScheduled{Server: "local", Attempt: 2, DelayMs: 100, Cause: "process exited"})
	r.add(100*ms, "", &events.ConnectStarted{Server: "local", Transport: events.TransportStdio, Attempt: 2})
	r.add(30*ms, "", &events.ConnectFailed{Server: "local", Error: "Connection to MCP server \"local\" timed out after 30ms", Duration: 30 * ms, TimedOut: true})
	r.add(0, "", &events.ReconnectGaveUp{Server: "local", Attempts: 2, LastError: "timed out"})
	r.add(ms, "", &events.ConfigChanged{Paths: []string{"/work/.mcp.json"}, Changed: []string{"remote"}})
	r.add(ms, "call-1", &events.ToolCallStarted{Server: "remote", Tool: "search", Name: "mcp_remote_search", Deferred: true})
	last := r.at

	spans := replayed(t, st, r.id)
	root := named(spans, otel.SpanSession)[0]
	if !root.EndTime.Equal(last) || str(t, root, "mcplife.unfinished") != "true" {
		t.Errorf("session span ends %v unfinished=%q, want %v and true", root.EndTime, str(t, root, "mcplife.unfinished"), last)
	}
	var names []string
	for _, e := range root.Events {
		names = append(names, e.Name)
	}
	for _, want := range []string{"mcplife.server.discovered", "mcplife.auth.required", "mcplife.cache.served",
		"mcplife.disconnected", "mcplife.reconnect.scheduled", "mcplife.reconnect.gave_up", "mcplife.config.changed"} {
		if !slices.Contains(names, want) {
			t.Errorf("session span events %v lack %s", names, want)
		}
	}

	remote := named(spans, otel.SpanConnect+" remote")[0]
	for key, want := range map[string]string{"error.type": otel.ErrorNeedsAuth, "server.address": "api.example.com",
		"server.port": "443", "network.transport": "tcp"} {
		if got := str(t, remote, key); got != want {
			t.Errorf("connect remote: %s = %q, want %q", key, got, want)
		}
	}
	local := named(spans, otel.SpanConnect+" local")
	if len(local) != 2 {
		t.Fatalf("%d connect spans of local, want 2 (the first attempt and the reconnect)", len(local))
	}
	slices.SortFunc(local, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
	if got := str(t, local[1], "error.type"); got != otel.ErrorTimeout {
		t.Errorf("reconnect attempt: error.type %q, want timeout", got)
	}
	if got := str(t, local[1], "mcplife.connect.attempt"); got != "2" {
		t.Errorf("reconnect attempt: attempt %q, want 2", got)
	}
	if d := named(spans, "server/discover"); len(d) != 1 || d[0].Parent.SpanID() != local[0].SpanContext.SpanID() {
		t.Errorf("server/discover spans %d, want one, under local's first attempt (protocol 2026-07-28)", len(d))
	}
	call := named(spans, "tools/call search")
	if len(call) != 1 || str(t, call[0], "mcplife.unfinished") != "true" || !call[0].EndTime.Equal(last) {
		t.Errorf("the call in flight: %d spans, want one ended with the session, unfinished", len(call))
	}
	list := named(spans, "tools/list")
	if len(list) != 1 || list[0].EndTime.Sub(list[0].StartTime) != 2*ms {
		t.Errorf("tools/list spans %d, want one of 2ms", len(list))
	}
	gate := named(spans, otel.SpanGate)[0]
	if got := str(t, gate, "mcplife.gate.needs_auth"); got != `["remote"]` {
		t.Errorf("gate needs_auth %q", got)
	}
}

// Events that follow a session's end (orphans reaped after it was found
// abandoned) open no new session span.
func TestNothingAfterTheEnd(t *testing.T) {
	st := memory.New()
	defer st.Close()
	r := &recording{t: t, st: st, id: "s-abandoned", at: time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)}
	r.add(0, "", &events.SessionStarted{Cwd: "/work"})
	r.add(time.Second, "", &events.SessionAbandoned{Session: "s-abandoned", DetectedBy: "s-next"})
	r.add(time.Millisecond, "", &events.OrphansReaped{Session: "s-abandoned"})
	spans := replayed(t, st, r.id)
	if len(spans) != 1 {
		t.Fatalf("%d spans, want the session's alone", len(spans))
	}
	if spans[0].Status.Code.String() != "Error" || str(t, spans[0], "mcplife.reason") != "abandoned" {
		t.Errorf("abandoned session: status %v reason %q", spans[0].Status, str(t, spans[0], "mcplife.reason"))
	}
}

// A resource read and a prompt get become client spans named by their
// method and target, timed from the event's duration, with error.type on
// a failure.
func TestReadAndGetSpans(t *testing.T) {
	st := memory.New()
	defer st.Close()
	r := &recording{t: t, st: st, id: "s-surface", at: time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)}
	ms := time.Millisecond
	r.add(0, "", &events.SessionStarted{Cwd: "/work", Gate: 250 * ms})
	r.add(ms, "", &events.ServerConnected{Server: "docs", ProtocolVersion: "2025-11-25", Duration: ms})
	r.add(5*ms, "", &events.ResourceRead{Server: "docs", URI: "file:///readme.md", Contents: 1, Duration: 4 * ms})
	r.add(5*ms, "", &events.PromptRetrieved{Server: "docs", Prompt: "summarize", Messages: 2, Duration: 3 * ms})
	r.add(5*ms, "", &events.PromptRetrieved{Server: "docs", Prompt: "missing", Duration: ms, Error: `MCP server "docs": prompts/get: unknown prompt`})
	spans := replayed(t, st, r.id)
	read := named(spans, "resources/read file:///readme.md")
	if len(read) != 1 || read[0].EndTime.Sub(read[0].StartTime) != 4*ms || str(t, read[0], "mcp.resource.uri") != "file:///readme.md" ||
		str(t, read[0], "mcp.method.name") != "resources/read" {
		t.Fatalf("resources/read spans: %d %+v", len(read), read)
	}
	got := named(spans, "prompts/get summarize")
	if len(got) != 1 || got[0].EndTime.Sub(got[0].StartTime) != 3*ms || str(t, got[0], "gen_ai.prompt.name") != "summarize" {
		t.Fatalf("prompts/get spans: %d", len(got))
	}
	failed := named(spans, "prompts/get missing")
	if len(failed) != 1 || str(t, failed[0], "error.type") == "" {
		t.Fatalf("a failed prompts/get: %d spans, error.type %q", len(failed), str(t, failed[0], "error.type"))
	}
}
