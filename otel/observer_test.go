package otel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/snippettest"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/otel"
	"github.com/mcplife/mcplife/session"
	"github.com/mcplife/mcplife/store/memory"
)

// scenario is one recorded session traced live: three servers, "fast"
// (stdio, connects at once), "late" (http, connects after the gate decided) and
// "broken" (its transport cannot be opened), a successful call, a call
// whose result is an error, and a call to the late server.
type scenario struct {
	id       string
	events   []recordedEvent
	spans    tracetest.SpanStubs
	metrics  metricdata.ResourceMetrics // after the close
	live     int64                      // connected servers, by the gauge, before the close
	after    int64                      // and after it
	metas    []map[string]any
	callers  []trace.SpanContext
	replayed tracetest.SpanStubs // the spans Replay made of the store
	missing  error               // Replay's error for a session the store lacks
}

// runScenario runs the scenario on a fake clock (testing/synctest), so
// the startup gate gives up on "late" only once "fast" and "broken" have
// settled, whatever the machine's load.
// failWork is how long the fail tool works, on the fake clock.
const failWork = 30 * time.Millisecond

func runScenario(t *testing.T) *scenario {
	var sc *scenario
	synctest.Test(t, func(t *testing.T) { sc = scenarioIn(t) })
	return sc
}

func scenarioIn(t *testing.T) *scenario {
	ctx := t.Context()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })

	st := memory.New()
	j, err := journal.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	id := journal.NewSessionID()
	obs, err := otel.Observe(ctx, j, &otel.Options{TracerProvider: tp, MeterProvider: mp, Session: id})
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()

	metas := make(chan map[string]any, 8)
	srv := fixtureServer(metas, failWork)
	release := make(chan struct{})
	var releaseOnce sync.Once
	dial := func(ctx context.Context, cfg events.ServerConfig) (mcp.Transport, error) {
		switch cfg.Name {
		case "broken":
			return nil, errors.New("no such server")
		case "late":
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return inProcess(srv)(ctx, cfg)
	}
	s, err := session.Start(ctx, j, &session.Options{
		ID: id,
		Servers: []events.ServerConfig{
			{Name: "fast", Command: "in-process"},
			{Name: "late", Type: events.TransportHTTP, URL: "http://127.0.0.1:8931/mcp"},
			{Name: "broken", Command: "in-process"},
		},
		Manager: &manager.Options{ProtocolVersion: "2025-11-25", Dial: dial, Gate: 20 * time.Millisecond, CallMeta: otel.CallMetaWith(nil),
			// late connects once the gate has given up on it: it is
			// awaited, and the gate span ends when it is connected.
			OnGate: func(manager.GateOutcome) { releaseOnce.Do(func() { close(release) }) }},
		KeepAbandoned: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}

	// The caller's own trace: its span context must reach the server.
	caller := sdktrace.NewTracerProvider().Tracer("caller")
	sc := &scenario{id: id}
	for _, name := range []string{"mcp_fast_greet", "mcp_fast_fail", "mcp_late_greet"} {
		tool, ok := s.Tool(name)
		if !ok {
			t.Fatalf("no tool %s in %v", name, toolNames(s))
		}
		cctx, span := caller.Start(ctx, "agent step")
		res, err := tool.Call(cctx, json.RawMessage(`{"name":"Ada"}`))
		if err != nil {
			t.Fatal(err)
		}
		span.End()
		sc.callers = append(sc.callers, span.SpanContext())
		// The server's handler sent its _meta before it answered.
		select {
		case meta := <-metas:
			sc.metas = append(sc.metas, meta)
		default:
			t.Fatalf("%s: the server saw no call; result %q", name, res.Text())
		}
	}
	if err := obs.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	sc.live = gauge(t, reader, otel.MetricConnectedServers)
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := obs.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	sc.spans = exp.GetSpans()
	sc.after = gauge(t, reader, otel.MetricConnectedServers)
	if err := reader.Collect(ctx, &sc.metrics); err != nil {
		t.Fatal(err)
	}
	for env, err := range st.ReadStream(ctx, id, 1) {
		if err != nil {
			t.Fatal(err)
		}
		ev, err := events.Decode(env)
		if err != nil {
			t.Fatal(err)
		}
		sc.events = append(sc.events, recordedEvent{env, ev})
	}
	rexp := tracetest.NewInMemoryExporter()
	rtp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(rexp))
	defer rtp.Shutdown(context.Background())
	if err := otel.Replay(ctx, st, id, &otel.Options{TracerProvider: rtp}); err != nil {
		t.Fatal(err)
	}
	sc.replayed = rexp.GetSpans()
	sc.missing = otel.Replay(ctx, st, "no-such-session", &otel.Options{TracerProvider: rtp})
	return sc
}

func toolNames(s *session.Session) []string {
	var names []string
	for _, t := range s.Tools() {
		names = append(names, t.Name)
	}
	return names
}

type recordedEvent struct {
	env events.Envelope
	ev  events.Event
}

// named returns the spans called name.
func named(spans tracetest.SpanStubs, name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// take removes and returns the span of list that starts and ends at the
// given times.
func take(t *testing.T, list *tracetest.SpanStubs, what string, start, end time.Time) tracetest.SpanStub {
	t.Helper()
	for i, s := range *list {
		if s.StartTime.Equal(start) && s.EndTime.Equal(end) {
			*list = slices.Delete(*list, i, i+1)
			return s
		}
	}
	t.Fatalf("%s: no span from %s to %s among %d", what, start.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano), len(*list))
	return tracetest.SpanStub{}
}

func str(t *testing.T, s tracetest.SpanStub, key string) string {
	t.Helper()
	v, ok := attr(s, key)
	if !ok {
		return ""
	}
	return v.Emit()
}

// Every call, connect attempt and gate of the recorded session has its
// span, timed by the events' recorded times; failures carry error.type;
// every span is in the session's trace.
func TestSpansFollowTheEvents(t *testing.T) {
	sc := runScenario(t)
	recorded := sc.events
	sessions := named(sc.spans, otel.SpanSession)
	if len(sessions) != 1 {
		t.Fatalf("%d session spans, want 1", len(sessions))
	}
	root := sessions[0]
	if !root.StartTime.Equal(recorded[0].env.Time) || !root.EndTime.Equal(recorded[len(recorded)-1].env.Time) {
		t.Errorf("session span %v..%v, want the first and last event's times", root.StartTime, root.EndTime)
	}
	for _, s := range sc.spans {
		if s.SpanContext.TraceID() != root.SpanContext.TraceID() {
			t.Errorf("span %s is in trace %s, not the session's", s.Name, s.SpanContext.TraceID())
		}
	}

	calls := map[string]recordedEvent{} // correlation → ToolCallStarted
	connects := map[string]recordedEvent{}
	var nCalls, nConnects, nGates int
	for _, r := range recorded {
		switch e := r.ev.(type) {
		case *events.ToolCallStarted:
			calls[r.env.CorrelationID] = r
		case *events.ToolCallFinished:
			start := calls[r.env.CorrelationID]
			list := named(sc.spans, "tools/call "+e.Tool)
			span := take(t, &list, "tools/call "+e.Tool, start.env.Time, r.env.Time)
			nCalls++
			if got := str(t, span, "gen_ai.tool.name"); got != e.Tool {
				t.Errorf("gen_ai.tool.name %q, want %q", got, e.Tool)
			}
			if got := str(t, span, "mcp.method.name"); got != "tools/call" {
				t.Errorf("mcp.method.name %q", got)
			}
			if got := str(t, span, "gen_ai.operation.name"); got != "execute_tool" {
				t.Errorf("gen_ai.operation.name %q", got)
			}
			wantErr := ""
			if e.IsError {
				wantErr = otel.ErrorToolError
			}
			if got := str(t, span, "error.type"); got != wantErr {
				t.Errorf("%s: error.type %q, want %q", span.Name, got, wantErr)
			}
			if span.SpanKind != trace.SpanKindClient || span.Parent.SpanID() != root.SpanContext.SpanID() {
				t.Errorf("%s: kind %v parent %v, want a client span under the session", span.Name, span.SpanKind, span.Parent.SpanID())
			}
		case *events.ConnectStarted:
			connects[e.Server] = r
		case *events.ServerConnected, *events.ConnectFailed:
			server := events.ServerOf(e)
			start := connects[server]
			list := named(sc.spans, otel.SpanConnect+" "+server)
			span := take(t, &list, "connect "+server, start.env.Time, r.env.Time)
			nConnects++
			var ini tracetest.SpanStub
			for _, s := range named(sc.spans, "initialize") {
				if s.Parent.SpanID() == span.SpanContext.SpanID() {
					ini = s
				}
			}
			if !ini.StartTime.Equal(start.env.Time) || !ini.EndTime.Equal(r.env.Time) {
				t.Errorf("initialize of %s: %v..%v under its connect span, want %v..%v", server, ini.StartTime, ini.EndTime, start.env.Time, r.env.Time)
			}
			_, failed := e.(*events.ConnectFailed)
			if got := str(t, span, "error.type"); (got != "") != failed {
				t.Errorf("connect %s: error.type %q, failed %v", server, got, failed)
			}
			if got := str(t, ini, "error.type"); (got != "") != failed {
				t.Errorf("initialize %s: error.type %q, failed %v", server, got, failed)
			}
			if c, ok := e.(*events.ServerConnected); ok {
				if got := str(t, ini, "mcp.protocol.version"); got != c.ProtocolVersion || got == "" {
					t.Errorf("initialize %s: mcp.protocol.version %q, want %q", server, got, c.ProtocolVersion)
				}
			}
		case *events.StartupGateElapsed:
			list := named(sc.spans, otel.SpanGate)
			span := take(t, &list, "gate", r.env.Time.Add(-e.Elapsed), r.env.Time)
			nGates++
			for server, outcome := range e.Outcomes {
				key := "mcplife.gate." + strings.ReplaceAll(string(outcome), "-", "_")
				if got := str(t, span, key); !strings.Contains(got, server) {
					t.Errorf("gate: %s = %q, want it to name %s", key, got, server)
				}
			}
			if got := len(span.Events); got != len(e.Outcomes) {
				t.Errorf("gate: %d events, want one per server (%d)", got, len(e.Outcomes))
			}
		}
	}
	if nCalls != 3 || nConnects != 3 || nGates != 1 {
		t.Errorf("matched %d calls, %d connects, %d gates; want 3, 3, 1", nCalls, nConnects, nGates)
	}
	if got := len(named(sc.spans, "tools/call greet")) + len(named(sc.spans, "tools/call fail")); got != nCalls {
		t.Errorf("%d tools/call spans for %d recorded calls", got, nCalls)
	}

	// The servers' ends of the connection.
	for _, s := range named(sc.spans, "tools/call greet") {
		server := str(t, s, "mcplife.server.name")
		want := map[string][3]string{"fast": {"pipe", "", ""}, "late": {"tcp", "127.0.0.1", "8931"}}[server]
		got := [3]string{str(t, s, "network.transport"), str(t, s, "server.address"), str(t, s, "server.port")}
		if got != want {
			t.Errorf("%s call: transport, address, port %v, want %v", server, got, want)
		}
	}
	// The late server was still connecting at the gate, and awaited.
	gate := named(sc.spans, otel.SpanGate)[0]
	for key, want := range map[string]string{"mcplife.gate.awaited": `["late"]`, "mcplife.gate.failed": `["broken"]`, "mcplife.gate.ready": `["fast"]`} {
		if got := str(t, gate, key); got != want {
			t.Errorf("gate %s = %q, want %s", key, got, want)
		}
	}
}

// A tool call's _meta carries the caller's trace context, as the server
// received it.
func TestCallMetaCarriesCallersTrace(t *testing.T) {
	sc := runScenario(t)
	for i, meta := range sc.metas {
		want := fmt.Sprintf("00-%s-%s-01", sc.callers[i].TraceID(), sc.callers[i].SpanID())
		if got := meta["traceparent"]; got != want {
			t.Errorf("call %d: _meta.traceparent %v, want %s", i, got, want)
		}
	}
}

// The histograms have the conventions' names, unit and buckets, one
// measurement per operation and per MCP session; the gauge counts the
// servers connected.
func TestMetrics(t *testing.T) {
	sc := runScenario(t)
	if sc.live != 2 {
		t.Errorf("%s = %d while fast and late were connected, want 2", otel.MetricConnectedServers, sc.live)
	}
	rm := sc.metrics
	ops := histogram(t, rm, otel.MetricOperationDuration)
	methods := map[string]uint64{}
	for _, dp := range ops.DataPoints {
		if !slices.Equal(dp.Bounds, otel.DurationBuckets) {
			t.Errorf("bounds %v, want %v", dp.Bounds, otel.DurationBuckets)
		}
		m, _ := dp.Attributes.Value("mcp.method.name")
		methods[m.AsString()] += dp.Count
	}
	if methods["tools/call"] != 3 || methods["initialize"] != 3 || methods["tools/list"] < 2 {
		t.Errorf("operations by method %v, want 3 tools/call, 3 initialize, 2 or more tools/list", methods)
	}
	// The histogram takes the call's duration as the manager measured it.
	for _, dp := range ops.DataPoints {
		if tool, _ := dp.Attributes.Value("gen_ai.tool.name"); tool.AsString() == "fail" && dp.Sum < failWork.Seconds() {
			t.Errorf("tools/call fail measured %vs, want the tool's %v of work at least", dp.Sum, failWork)
		}
	}
	var sessions uint64
	for _, dp := range histogram(t, rm, otel.MetricSessionDuration).DataPoints {
		sessions += dp.Count
	}
	if sessions != 2 {
		t.Errorf("%d MCP sessions measured, want 2 (fast and late)", sessions)
	}
	if sc.after != 0 {
		t.Errorf("%s = %d after the close, want 0", otel.MetricConnectedServers, sc.after)
	}
}

// Replay makes the spans the live Observer made, from the store alone.
func TestReplayMatchesLive(t *testing.T) {
	sc := runScenario(t)
	replayed := sc.replayed
	key := func(s tracetest.SpanStub) string {
		return fmt.Sprintf("%s %d %d %v %v", s.Name, s.StartTime.UnixNano(), s.EndTime.UnixNano(), s.Attributes, len(s.Events))
	}
	var live, again []string
	for _, s := range sc.spans {
		live = append(live, key(s))
	}
	for _, s := range replayed {
		again = append(again, key(s))
	}
	slices.Sort(live)
	slices.Sort(again)
	if !slices.Equal(live, again) {
		t.Errorf("replayed spans differ from the live ones:\nlive:\n%s\nreplay:\n%s", strings.Join(live, "\n"), strings.Join(again, "\n"))
	}
	if !errors.Is(sc.missing, otel.ErrNoSession) {
		t.Errorf("Replay of a missing session: %v, want ErrNoSession", sc.missing)
	}
}

func histogram(t *testing.T, rm metricdata.ResourceMetrics, name string) metricdata.Histogram[float64] {
	t.Helper()
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				if m.Unit != "s" {
					t.Errorf("%s: unit %q, want s", name, m.Unit)
				}
				h, ok := m.Data.(metricdata.Histogram[float64])
				if !ok {
					t.Fatalf("%s is a %T", name, m.Data)
				}
				return h
			}
		}
	}
	t.Fatalf("no metric %s", name)
	return metricdata.Histogram[float64]{}
}

func gauge(t *testing.T, reader *sdkmetric.ManualReader, name string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				g, ok := m.Data.(metricdata.Gauge[int64])
				if !ok || len(g.DataPoints) != 1 {
					t.Fatalf("%s: %#v", name, m.Data)
				}
				return g.DataPoints[0].Value
			}
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// The README's span tree is the scenario's.
func TestREADMESpanTree(t *testing.T) {
	sc := runScenario(t)
	var b strings.Builder
	printTree(&b, sc.spans)
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Span tree\n")
	if !ok {
		t.Fatal("README has no Span tree section")
	}
	_, tree, ok := strings.Cut(section, "```text\n")
	if !ok {
		t.Fatal("the Span tree section has no text block")
	}
	tree, _, _ = strings.Cut(tree, "```")
	if diff := cmp.Diff(b.String(), tree); diff != "" {
		t.Errorf("README span tree differs from the scenario's (-scenario +README):\n%s", diff)
	}
}

// The README's snippet is the body of traced in example_test.go, which
// Example compiles and runs.
func TestREADMESnippet(t *testing.T) {
	snippettest.Check(t, "README.md", "Tracing a session", "example_test.go")
}

// An Observer started on a journal with history traces what follows
// (FromSeq 0) or the whole history (FromSeq 1), and Flush returns in
// either case.
func TestObserveFrom(t *testing.T) {
	ctx := t.Context()
	j, err := journal.New(memory.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := j.Append(ctx, "before", &events.SessionStarted{Cwd: "/work"}, &events.SessionClosed{}); err != nil {
		t.Fatal(err)
	}
	// Each case appends the session "after" once more: FromSeq 1 sees the
	// one of the first case too.
	for _, tc := range []struct {
		from uint64
		want []string
	}{{0, []string{"after"}}, {1, []string{"after", "after", "before"}}} {
		from, want := tc.from, tc.want
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		obs, err := otel.Observe(ctx, j, &otel.Options{TracerProvider: tp, FromSeq: from})
		if err != nil {
			t.Fatal(err)
		}
		if err := obs.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := j.Append(ctx, "after", &events.SessionStarted{Cwd: "/work"}, &events.SessionClosed{}); err != nil {
			t.Fatal(err)
		}
		if err := obs.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		obs.Close()
		var got []string
		for _, s := range exp.GetSpans() {
			v, _ := attr(s, "mcplife.session.id")
			got = append(got, v.AsString())
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("FromSeq %d: sessions traced %v, want %v", from, got, want)
		}
		tp.Shutdown(ctx)
	}
}
