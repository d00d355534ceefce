package otel

import (
	"context"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcplife/mcplife/events"
)

// translator is the fold from envelopes to spans and measurements that
// the live Observer and Replay share, so a replayed session gives the
// spans the live one gave. It is not safe for concurrent use: one
// goroutine applies envelopes in sequence order.
type translator struct {
	tracer   trace.Tracer
	inst     *instruments
	sessions map[string]*sessionState
	// now is the end time of spans still open when the translator is
	// closed without their events.
	now func() time.Time
}

// sessionState is what the translator holds of one recorded session.
type sessionState struct {
	id      string
	ctx     context.Context // carries the session span
	span    trace.Span
	last    time.Time // time of the session's latest event
	servers map[string]*serverState
	calls   map[string]*callState // by correlation id
	reload  trace.Span
}

// serverState is what the translator knows of one server of a session.
type serverState struct {
	name      string
	transport string // events.Transport*
	address   string
	port      int
	protocol  string
	// connect and initialize are the spans of the attempt in progress.
	connect, initialize trace.Span
	// connectedAt is when the live connection began; zero when none.
	connectedAt time.Time
}

// callState is a tool call between its ToolCallStarted and its
// ToolCallFinished.
type callState struct {
	span    trace.Span
	started *events.ToolCallStarted
}

func newTranslator(tracer trace.Tracer, inst *instruments, now func() time.Time) *translator {
	return &translator{tracer: tracer, inst: inst, sessions: map[string]*sessionState{}, now: now}
}

// session returns the state of id, starting its span at t when the
// stream did not show its SessionStarted (a subscription that began in
// the middle of it).
func (tr *translator) session(id string, t time.Time) *sessionState {
	if s, ok := tr.sessions[id]; ok {
		return s
	}
	ctx, span := tr.tracer.Start(context.Background(), SpanSession, trace.WithTimestamp(t),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(KeySession.String(id), KeyPartial.Bool(true)))
	s := &sessionState{id: id, ctx: ctx, span: span, servers: map[string]*serverState{}, calls: map[string]*callState{}}
	tr.sessions[id] = s
	return s
}

func (s *sessionState) server(name string) *serverState {
	sv, ok := s.servers[name]
	if !ok {
		sv = &serverState{name: name}
		s.servers[name] = sv
	}
	return sv
}

// peer returns the attributes that name sv's end of the connection.
func (sv *serverState) peer() []attribute.KeyValue {
	var kv []attribute.KeyValue
	if nt := networkTransport(sv.transport); nt != "" {
		kv = append(kv, KeyNetworkTransport.String(nt))
	}
	if sv.address != "" {
		kv = append(kv, KeyServerAddress.String(sv.address))
		if sv.port != 0 {
			kv = append(kv, KeyServerPort.Int(sv.port))
		}
	}
	if sv.protocol != "" {
		kv = append(kv, KeyProtocolVersion.String(sv.protocol))
	}
	return kv
}

// apply folds one envelope. Events it cannot decode, and those of no
// interest to a trace, are skipped.
func (tr *translator) apply(env events.Envelope) {
	ev, err := events.Decode(env)
	if err != nil {
		return
	}
	t := env.Time
	if started, ok := ev.(*events.SessionStarted); ok {
		if _, seen := tr.sessions[env.SessionID]; !seen {
			ctx, span := tr.tracer.Start(context.Background(), SpanSession, trace.WithTimestamp(t),
				trace.WithSpanKind(trace.SpanKindInternal),
				trace.WithAttributes(KeySession.String(env.SessionID)))
			if started.Gate > 0 {
				span.SetAttributes(KeyGateBudget.Int64(started.Gate.Milliseconds()))
			}
			tr.sessions[env.SessionID] = &sessionState{id: env.SessionID, ctx: ctx, span: span,
				servers: map[string]*serverState{}, calls: map[string]*callState{}}
		}
	}
	if _, open := tr.sessions[env.SessionID]; !open {
		switch ev.(type) {
		case *events.SessionClosed, *events.SessionAbandoned, *events.OrphansReaped:
			// The end of a session this translator never saw begin (or
			// saw end already): nothing of it is open.
			return
		}
	}
	s := tr.session(env.SessionID, t)
	s.last = t
	switch e := ev.(type) {
	case *events.ServerDiscovered:
		sv := s.server(e.Server)
		sv.transport = e.Transport
		sv.address, sv.port = hostPort(e.Config.URL)
		s.event("mcplife.server.discovered", t, KeyServer.String(e.Server), KeyTransport.String(e.Transport))
	case *events.ServerSkipped:
		s.event("mcplife.server.skipped", t, KeyServer.String(e.Server), KeyReason.String(string(e.Reason)))
	case *events.ServerInvalid:
		s.event("mcplife.server.invalid", t, KeyServer.String(e.Server), KeyError.String(e.Error))
	case *events.ConnectStarted:
		tr.connectStarted(s, e, t)
	case *events.ServerConnected:
		tr.connected(s, e, t)
	case *events.ConnectFailed:
		tr.connectFailed(s, e, t)
	case *events.ToolsListed:
		tr.listed(s, "tools/list", e.Server, e.Cause, e.Count, e.Duration, t, "")
	case *events.ToolsListFailed:
		tr.listed(s, "tools/list", e.Server, "", 0, e.Duration, t, e.Error)
	case *events.ResourcesListed:
		if e.Cause == events.CauseCache {
			s.event("mcplife.cache.served", t, KeyServer.String(e.Server), KeyMethodName.String("resources/list"),
				KeyListCount.Int(e.Count), KeyCacheAgeMs.Int64(e.CacheAge.Milliseconds()))
			break
		}
		tr.listed(s, "resources/list", e.Server, e.Cause, e.Count, e.Duration, t, "")
	case *events.PromptsListed:
		if e.Cause == events.CauseCache {
			s.event("mcplife.cache.served", t, KeyServer.String(e.Server), KeyMethodName.String("prompts/list"),
				KeyListCount.Int(e.Count), KeyCacheAgeMs.Int64(e.CacheAge.Milliseconds()))
			break
		}
		tr.listed(s, "prompts/list", e.Server, e.Cause, e.Count, e.Duration, t, "")
	case *events.ResourceRead:
		tr.request(s, "resources/read", e.URI, e.Server, e.Duration, t, e.Error, KeyResourceURI.String(e.URI))
	case *events.PromptRetrieved:
		tr.request(s, "prompts/get", e.Prompt, e.Server, e.Duration, t, e.Error, KeyPromptName.String(e.Prompt))
	case *events.CachedToolsServed:
		s.event("mcplife.cache.served", t, KeyServer.String(e.Server), KeyMethodName.String("tools/list"),
			KeyListCount.Int(e.Count), KeyCacheAgeMs.Int64(e.CacheAge.Milliseconds()))
	case *events.StartupGateElapsed:
		tr.gate(s, e, t)
	case *events.ToolListChanged:
		s.event("mcplife.tools.list_changed", t, KeyServer.String(e.Server))
	case *events.ToolCallStarted:
		tr.callStarted(s, env.CorrelationID, e, t)
	case *events.ToolCallFinished:
		tr.callFinished(s, env.CorrelationID, e, t)
	case *events.Disconnected:
		tr.disconnected(s, e, t)
	case *events.ReconnectScheduled:
		s.event("mcplife.reconnect.scheduled", t, KeyServer.String(e.Server), KeyAttempt.Int(e.Attempt),
			KeyDelayMs.Int64(e.DelayMs), KeyReason.String(e.Cause))
	case *events.ReconnectGaveUp:
		// The crash-loop breaker opened: no more attempts until an
		// explicit connect, a reload or a config change.
		s.event("mcplife.reconnect.gave_up", t, KeyServer.String(e.Server), KeyBreakerTripped.Int(e.Attempts),
			KeyError.String(e.LastError))
	case *events.AuthRequired:
		s.event("mcplife.auth.required", t, KeyServer.String(e.Server), attribute.String("mcplife.auth.issuer", e.Issuer),
			attribute.StringSlice("mcplife.auth.scopes", e.Scopes))
	case *events.AuthCompleted:
		s.event("mcplife.auth.completed", t, KeyServer.String(e.Server), attribute.String("mcplife.auth.issuer", e.Issuer),
			attribute.String("mcplife.auth.grant", e.Grant))
	case *events.AuthFailed:
		s.event("mcplife.auth.failed", t, KeyServer.String(e.Server), KeyError.String(e.Error))
	case *events.ConfigChanged:
		kv := []attribute.KeyValue{attribute.StringSlice("mcplife.config.paths", e.Paths),
			attribute.StringSlice("mcplife.config.added", e.Added),
			attribute.StringSlice("mcplife.config.changed", e.Changed),
			attribute.StringSlice("mcplife.config.removed", e.Removed)}
		if e.Error != "" {
			kv = append(kv, KeyError.String(e.Error))
		}
		s.event("mcplife.config.changed", t, kv...)
	case *events.ReloadRequested:
		if s.reload == nil {
			_, s.reload = tr.tracer.Start(s.ctx, SpanReload, trace.WithTimestamp(t),
				trace.WithAttributes(attribute.Int("mcplife.reload.servers", e.Servers)))
		}
	case *events.ReloadCompleted:
		if s.reload != nil {
			s.reload.SetAttributes(attribute.Int("mcplife.reload.failed", e.Failed), attribute.Int("mcplife.reload.tools", e.Tools))
			if e.Failed > 0 {
				s.reload.SetStatus(codes.Error, "servers failed")
			}
			s.reload.End(trace.WithTimestamp(t))
			s.reload = nil
		}
	case *events.HostResumed:
		s.event("mcplife.host.resumed", t, attribute.Int64("mcplife.host.slept_ms", e.SleptMs))
	case *events.RecordingGap:
		s.event("mcplife.recording.gap", t, attribute.Int("mcplife.recording.dropped", e.Dropped))
	case *events.SessionClosed:
		tr.endSession(s, t, e.Reason, false)
	case *events.SessionAbandoned:
		tr.endSession(s, t, "abandoned", true)
	}
}

// event adds a span event at t to the session span.
func (s *sessionState) event(name string, t time.Time, kv ...attribute.KeyValue) {
	s.span.AddEvent(name, trace.WithTimestamp(t), trace.WithAttributes(kv...))
}

// methodOf returns the method that opened a connection of the protocol
// version: the stateless server/discover from 2026-07-28 on, initialize
// before.
func methodOf(protocol string) string {
	if protocol >= "2026-07-28" {
		return "server/discover"
	}
	return "initialize"
}

func (tr *translator) connectStarted(s *sessionState, e *events.ConnectStarted, t time.Time) {
	sv := s.server(e.Server)
	if e.Transport != "" {
		sv.transport = e.Transport
	}
	if sv.connect != nil { // an attempt whose end was not recorded
		sv.connect.SetAttributes(KeyUnfinished.Bool(true))
		sv.initialize.End(trace.WithTimestamp(t))
		sv.connect.End(trace.WithTimestamp(t))
	}
	kv := append([]attribute.KeyValue{KeyServer.String(e.Server), KeyTransport.String(sv.transport),
		KeyAttempt.Int(e.Attempt), KeyRound.Int64(e.Round)}, sv.peer()...)
	ctx, span := tr.tracer.Start(s.ctx, SpanConnect+" "+e.Server, trace.WithTimestamp(t),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(kv...))
	// The method is known once the protocol is: the span is renamed then.
	_, ini := tr.tracer.Start(ctx, "initialize", trace.WithTimestamp(t),
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(append([]attribute.KeyValue{KeyMethodName.String("initialize"), KeyServer.String(e.Server)}, sv.peer()...)...))
	sv.connect, sv.initialize = span, ini
}

func (tr *translator) connected(s *sessionState, e *events.ServerConnected, t time.Time) {
	sv := s.server(e.Server)
	sv.protocol = e.ProtocolVersion
	sv.connectedAt = t
	if sv.connect == nil {
		return
	}
	method := methodOf(e.ProtocolVersion)
	sv.initialize.SetName(method)
	sv.initialize.SetAttributes(KeyMethodName.String(method))
	if e.ProtocolVersion != "" {
		sv.initialize.SetAttributes(KeyProtocolVersion.String(e.ProtocolVersion))
	}
	if e.PeerName != "" {
		sv.connect.SetAttributes(attribute.String("mcplife.server.peer", e.PeerName+" "+e.PeerVersion))
	}
	sv.connect.SetAttributes(KeyOutcome.String("connected"))
	tr.inst.operation(e.Duration, append(sv.peer(), KeyMethodName.String(method)))
	tr.inst.live(+1)
	sv.initialize.End(trace.WithTimestamp(t))
	sv.connect.End(trace.WithTimestamp(t))
	sv.connect, sv.initialize = nil, nil
}

func (tr *translator) connectFailed(s *sessionState, e *events.ConnectFailed, t time.Time) {
	sv := s.server(e.Server)
	if sv.connect == nil {
		return
	}
	class := classify(e.Error)
	outcome := "failed"
	if e.TimedOut {
		class, outcome = ErrorTimeout, "timed out"
	}
	for _, span := range []trace.Span{sv.initialize, sv.connect} {
		span.SetAttributes(KeyErrorType.String(class))
		span.SetStatus(codes.Error, e.Error)
	}
	sv.connect.SetAttributes(KeyOutcome.String(outcome))
	tr.inst.operation(e.Duration, append(sv.peer(), KeyMethodName.String("initialize"), KeyErrorType.String(class)))
	sv.initialize.End(trace.WithTimestamp(t))
	sv.connect.End(trace.WithTimestamp(t))
	sv.connect, sv.initialize = nil, nil
}

// listed records one list request as a client span that ended at t after
// d; errText, when set, is its failure.
func (tr *translator) listed(s *sessionState, method, server string, cause events.ListCause, count int, d time.Duration, t time.Time, errText string) {
	sv := s.server(server)
	kv := append([]attribute.KeyValue{KeyMethodName.String(method), KeyServer.String(server)}, sv.peer()...)
	metricKV := kv[:len(kv):len(kv)]
	if cause != "" {
		kv = append(kv, KeyListCause.String(string(cause)))
	}
	if errText == "" {
		kv = append(kv, KeyListCount.Int(count))
	}
	_, span := tr.tracer.Start(s.ctx, method, trace.WithTimestamp(t.Add(-d)),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(kv...))
	if errText != "" {
		class := classify(errText)
		span.SetAttributes(KeyErrorType.String(class))
		span.SetStatus(codes.Error, errText)
		metricKV = append(metricKV, KeyErrorType.String(class))
	}
	tr.inst.operation(d, metricKV)
	span.End(trace.WithTimestamp(t))
}

// request makes the client span "METHOD TARGET" of one request that
// finished at t after d (a resource read, a prompt get), with the
// operation histogram's measurement.
func (tr *translator) request(s *sessionState, method, target, server string, d time.Duration, t time.Time, errText string, extra ...attribute.KeyValue) {
	sv := s.server(server)
	kv := append([]attribute.KeyValue{KeyMethodName.String(method), KeyServer.String(server)}, sv.peer()...)
	metricKV := kv[:len(kv):len(kv)]
	kv = append(kv, extra...)
	_, span := tr.tracer.Start(s.ctx, method+" "+target, trace.WithTimestamp(t.Add(-d)),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(kv...))
	if errText != "" {
		class := classify(errText)
		span.SetAttributes(KeyErrorType.String(class))
		span.SetStatus(codes.Error, errText)
		metricKV = append(metricKV, KeyErrorType.String(class))
	}
	tr.inst.operation(d, metricKV)
	span.End(trace.WithTimestamp(t))
}

func (tr *translator) gate(s *sessionState, e *events.StartupGateElapsed, t time.Time) {
	byOutcome := map[events.Outcome][]string{}
	names := make([]string, 0, len(e.Outcomes))
	for name, o := range e.Outcomes {
		byOutcome[o] = append(byOutcome[o], name)
		names = append(names, name)
	}
	sort.Strings(names)
	kv := []attribute.KeyValue{KeyRound.Int64(e.Round), KeyGateBudget.Int64(e.Gate.Milliseconds())}
	outcomes := make([]string, 0, len(byOutcome))
	for o := range byOutcome {
		outcomes = append(outcomes, string(o))
	}
	sort.Strings(outcomes)
	for _, o := range outcomes {
		list := byOutcome[events.Outcome(o)]
		sort.Strings(list)
		kv = append(kv, attribute.StringSlice("mcplife.gate."+strings.ReplaceAll(o, "-", "_"), list))
	}
	_, span := tr.tracer.Start(s.ctx, SpanGate, trace.WithTimestamp(t.Add(-e.Elapsed)),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(kv...))
	for _, name := range names {
		span.AddEvent("mcplife.gate.outcome", trace.WithTimestamp(t),
			trace.WithAttributes(KeyServer.String(name), KeyOutcome.String(string(e.Outcomes[name]))))
	}
	span.End(trace.WithTimestamp(t))
}

func (tr *translator) callStarted(s *sessionState, correlation string, e *events.ToolCallStarted, t time.Time) {
	sv := s.server(e.Server)
	kv := append([]attribute.KeyValue{KeyMethodName.String("tools/call"), KeyToolName.String(e.Tool),
		KeyOperationName.String("execute_tool"), KeyServer.String(e.Server), KeyExposedName.String(e.Name)}, sv.peer()...)
	if e.Deferred {
		kv = append(kv, KeyDeferred.Bool(true))
	}
	_, span := tr.tracer.Start(s.ctx, "tools/call "+e.Tool, trace.WithTimestamp(t),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(kv...))
	if old, ok := s.calls[correlation]; ok { // a correlation id seen twice
		old.span.SetAttributes(KeyUnfinished.Bool(true))
		old.span.End(trace.WithTimestamp(t))
	}
	s.calls[correlation] = &callState{span: span, started: e}
}

func (tr *translator) callFinished(s *sessionState, correlation string, e *events.ToolCallFinished, t time.Time) {
	c, ok := s.calls[correlation]
	if !ok {
		return
	}
	delete(s.calls, correlation)
	sv := s.server(e.Server)
	metricKV := append([]attribute.KeyValue{KeyMethodName.String("tools/call"), KeyToolName.String(e.Tool),
		KeyOperationName.String("execute_tool")}, sv.peer()...)
	if e.Retried {
		c.span.SetAttributes(KeyRetried.Bool(true))
	}
	if e.OutputBytes > 0 {
		c.span.SetAttributes(KeyOutputBytes.Int64(e.OutputBytes))
	}
	if e.Truncated {
		c.span.SetAttributes(KeyTruncated.Bool(true))
	}
	if class := callErrorType(e); class != "" {
		c.span.SetAttributes(KeyErrorType.String(class))
		msg := e.Error
		if msg == "" {
			msg = ErrorToolError
		}
		c.span.SetStatus(codes.Error, msg)
		metricKV = append(metricKV, KeyErrorType.String(class))
	}
	// The span runs between the two events' recorded times; the
	// histogram takes the duration the manager measured around the
	// request, which the journal's write delays do not stretch.
	tr.inst.operation(e.Duration, metricKV)
	c.span.End(trace.WithTimestamp(t))
}

// callErrorType returns the error.type of a finished call, empty for a
// success: tool_error for the tool's own error result, the class of the
// client-side failure otherwise.
func callErrorType(e *events.ToolCallFinished) string {
	switch {
	case e.Cancelled:
		return ErrorCancelled
	case e.IsError && e.Error == "":
		return ErrorToolError
	case e.Error != "":
		return classify(e.Error)
	}
	return ""
}

// classify returns the error class of a recorded client-side error. The
// texts are the manager's own (its sentinel errors' messages), the only
// thing a recording keeps of an error.
func classify(text string) string {
	switch t := strings.ToLower(text); {
	case strings.Contains(t, "timed out"):
		return ErrorTimeout
	case strings.Contains(t, "not connected"):
		return ErrorNotConnected
	case strings.Contains(t, "disconnected"):
		return ErrorDisconnected
	case strings.Contains(t, "cancel"):
		return ErrorCancelled
	case strings.Contains(t, "needs authorization"):
		return ErrorNeedsAuth
	}
	return ErrorOther
}

func (tr *translator) disconnected(s *sessionState, e *events.Disconnected, t time.Time) {
	sv := s.server(e.Server)
	kv := []attribute.KeyValue{KeyServer.String(e.Server), KeyReason.String(string(e.Reason))}
	if e.Reconnecting {
		kv = append(kv, KeyReconnecting.Bool(true))
	}
	if e.Error != "" {
		kv = append(kv, KeyError.String(e.Error))
	}
	s.event("mcplife.disconnected", t, kv...)
	tr.endConnection(sv, t, e.Reason)
}

// endConnection records the MCP session of sv, if live, as ended at t.
func (tr *translator) endConnection(sv *serverState, t time.Time, reason events.DisconnectReason) {
	if sv.connectedAt.IsZero() {
		return
	}
	kv := sv.peer()
	if reason != "" && !reason.Chosen() {
		kv = append(kv, KeyErrorType.String(strings.ReplaceAll(string(reason), " ", "_")))
	}
	tr.inst.session(t.Sub(sv.connectedAt), kv)
	tr.inst.live(-1)
	sv.connectedAt = time.Time{}
}

// endSession ends every span of s still open at t, then the session span.
func (tr *translator) endSession(s *sessionState, t time.Time, reason string, failed bool) {
	names := make([]string, 0, len(s.servers))
	for name := range s.servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		sv := s.servers[name]
		if sv.connect != nil {
			for _, span := range []trace.Span{sv.initialize, sv.connect} {
				span.SetAttributes(KeyUnfinished.Bool(true))
				span.End(trace.WithTimestamp(t))
			}
			sv.connect, sv.initialize = nil, nil
		}
		tr.endConnection(sv, t, "")
	}
	for id, c := range s.calls {
		c.span.SetAttributes(KeyUnfinished.Bool(true))
		c.span.End(trace.WithTimestamp(t))
		delete(s.calls, id)
	}
	if s.reload != nil {
		s.reload.SetAttributes(KeyUnfinished.Bool(true))
		s.reload.End(trace.WithTimestamp(t))
		s.reload = nil
	}
	if reason != "" {
		s.span.SetAttributes(KeyReason.String(reason))
	}
	if failed {
		s.span.SetStatus(codes.Error, reason)
	}
	s.span.End(trace.WithTimestamp(t))
	delete(tr.sessions, s.id)
}

// close ends the spans of every session still open, at its latest event
// (or now, when it has none), marked unfinished.
func (tr *translator) close() {
	ids := make([]string, 0, len(tr.sessions))
	for id := range tr.sessions {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		s := tr.sessions[id]
		t := s.last
		if t.IsZero() {
			t = tr.now()
		}
		s.span.SetAttributes(KeyUnfinished.Bool(true))
		tr.endSession(s, t, "", false)
	}
}
