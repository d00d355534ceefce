package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/projector"
)

// Tool is one MCP tool exposed to agent sessions. Its fields describe the
// tool as the session's view had it when [Manager.Tools] returned; Call
// always goes through the manager's current connection to the server.
// A Tool is safe for concurrent use.
type Tool struct {
	// Name is the exposed name, mcp_<server>_<tool> ([projector.ToolName];
	// hash-suffixed when another tool held that name first), which means
	// this tool for the rest of the session ([projector.NameClaims]).
	Name string
	// Title and Description as the server sent them; Description falls
	// back to "MCP tool from <server>".
	Title       string
	Description string
	// InputSchema, OutputSchema, Annotations and Icons as the server sent
	// them (Icons: the tool's icons array, nil when it sent none).
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Annotations  json.RawMessage
	Icons        json.RawMessage
	// Server is the server's configured name; Original the tool's own
	// name on that server.
	Server   string
	Original string
	// Provider and ProviderName say where the server's config came from
	// (empty when unknown).
	Provider     string
	ProviderName string
	// Deferred is set when the tool was served from the tool cache while
	// its server is still connecting: a call waits for the connection.
	Deferred bool

	m *Manager
}

func (m *Manager) newTool(t projector.Tool) *Tool {
	desc := t.Def.Description
	if desc == "" {
		desc = "MCP tool from " + t.Server
	}
	return &Tool{
		Name: t.Name, Title: t.Def.Title, Description: desc,
		InputSchema: t.Def.InputSchema, OutputSchema: t.Def.OutputSchema, Annotations: t.Def.Annotations, Icons: t.Def.Icons,
		Server: t.Server, Original: t.Original,
		Provider: t.Source.Provider, ProviderName: t.Source.ProviderName,
		Deferred: t.Deferred, m: m,
	}
}

// Path returns the tool's display path: "mcp:<server> via <providerName>"
// when the provider is known, else "mcp:<server>".
func (t *Tool) Path() string {
	if strings.TrimSpace(t.ProviderName) != "" {
		return "mcp:" + t.Server + " via " + t.ProviderName
	}
	return "mcp:" + t.Server
}

// Call calls the tool with args (a json.RawMessage, a map[string]any, any
// value that marshals to a JSON object, or nil for none) and returns the
// full result, every content kind as the server sent it. Only a result
// whose text is over the server's output budget (config MaxOutputBytes,
// default 256 KiB) is changed: its text is cut, a marker
// item names the file holding the whole result, and Truncated is set.
//
// Transport and protocol errors, a server that is not connected, a
// server that drops during the call and the call's own timeout all become
// a result with Err set (match it with [errors.Is]: ErrNotConnected,
// ErrDisconnected, ErrTimeout) and a Result with IsError set whose text
// starts with [ErrorPrefix], for the agent; the error return is then nil.
// A tool's own failure is the server's result with IsError set and Err
// nil. When ctx is cancelled or expires, Call returns ctx.Err()
// (context.Canceled), never a result.
//
// A deferred tool first waits for its server's connection, bounded by
// that server's connect timeout. ToolCallStarted and ToolCallFinished,
// sharing one correlation id, are recorded around each call that reaches a
// connected or deferred server; arguments only when
// Options.CaptureArguments is set (redacted), results never. They are
// recorded without waiting for the store: Call returns without a commit,
// and the journal stores them in order right after (Manager.Close, and the
// journal's Flush and Close, wait for them).
func (t *Tool) Call(ctx context.Context, args any) (*CallResult, error) {
	return t.m.call(ctx, t, args)
}

func (m *Manager) call(ctx context.Context, t *Tool, args any) (*CallResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	s := m.servers[t.Server]
	for s != nil && s.mach.State() == stDropped && !s.stops.Asked() {
		// Its drop is being recorded: whether it reconnects (and the call
		// waits for that) is decided at the end of it.
		decided := s.decided
		m.mu.Unlock()
		m.yield("call.wait", t.Server)
		select {
		case <-decided:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		m.mu.Lock()
		s = m.servers[t.Server]
	}
	if s != nil && !s.ending() && s.conn == nil && !s.deferred {
		// Still connecting and not served from the cache: wait for the
		// connection before the call is recorded.
		m.mu.Unlock()
		if err := m.awaitConnect(ctx, s); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return errorResult(err), nil
		}
		m.mu.Lock()
	}
	var g *callGroup
	if s != nil {
		g = s.joinCall()
	}
	if g == nil {
		m.mu.Unlock()
		return errorResult(notConnected(t.Server)), nil
	}
	deferred := s.conn == nil
	m.mu.Unlock()
	recordDeferred := deferred || t.Deferred

	id := "call-" + strconv.FormatUint(m.callSeq.Add(1), 10)
	started := &events.ToolCallStarted{Server: t.Server, Tool: t.Original, Name: t.Name, Deferred: recordDeferred}
	if m.opts.CaptureArguments {
		started.Arguments = redactArguments(args)
	}
	// Recorded before the call (and, for a deferred tool, before waiting:
	// the server is connecting and deferred now, which a later
	// ConnectFailed would no longer allow), so live observers see calls in
	// progress. Both events are deferred and handed over: the journal
	// encodes and stores them in order, off the call's path.
	m.emitHandedOver(id, started)
	begin := m.now()
	// The call's timeout bounds waiting for a (re)connect, the call and a
	// retry after a reconnect; when it fires the go-sdk sends
	// notifications/cancelled for the request in flight.
	limit := toolTimeoutOf(s.cfg)
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if limit > 0 {
		cctx, cancel = context.WithTimeout(ctx, limit)
	}
	defer cancel()
	cctx, rounds := withInputRounds(cctx)
	res, errText, cut, unsent, err := m.doCall(cctx, s, t, args, deferred)
	// The call leaves its group only once ToolCallFinished is recorded: a
	// teardown or a drop waits for the calls of its connection, so its
	// Disconnected always follows them.
	retried := false
	if cut != nil && m.callAgain(unsent, t.Annotations) {
		m.leaveCall(g)
		g = nil
		if m.awaitReconnect(cctx, s, cut) {
			m.mu.Lock()
			g = s.joinCall()
			m.mu.Unlock()
			if g != nil {
				retried = !unsent
				res, errText, _, _, err = m.doCall(cctx, s, t, args, true)
			}
		}
	}
	if g != nil {
		defer m.leaveCall(g)
	}
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		// The call's own timeout, not the caller's context.
		res = errorResult(&ServerError{Server: t.Server, Op: OpCall, Err: &scrubbedError{
			msg: fmt.Sprintf("Tool call %s of MCP server %q timed out after %dms", t.Original, t.Server, limit.Milliseconds()), cause: ErrTimeout}})
		errText, err = res.Text(), nil
	}
	fin := &events.ToolCallFinished{Server: t.Server, Tool: t.Original, Duration: m.now().Sub(begin), Retried: retried,
		InputRounds: rounds.count()}
	if err == nil && errText == "" { // the server's own result
		fin.OutputBytes, fin.Truncated = m.applyBudget(t.Server, t.Original, res, maxOutputOf(s.cfg))
	}
	switch {
	case err != nil:
		fin.Cancelled, fin.Error = true, err.Error()
	case res.Result.IsError:
		fin.IsError, fin.Error = true, errText
	}
	m.emitHandedOver(id, fin)
	return res, err
}

// toolTimeoutOf returns the tool-call timeout of cfg; 0 means none.
func toolTimeoutOf(cfg events.ServerConfig) time.Duration {
	if cfg.ToolTimeoutMs == nil {
		return defaultToolTimeout
	}
	if *cfg.ToolTimeoutMs <= 0 {
		return 0
	}
	return time.Duration(*cfg.ToolTimeoutMs) * time.Millisecond
}

// callAgain is the rule for a call cut off by a drop: a read-only or
// idempotent call is made once more on the reconnected server. A call
// whose request never left (unsent: the connection was gone before it was
// written) waits for the reconnect as a call made during it does: it
// cannot run twice. Nothing is made again when the manager does not
// reconnect. The caller then waits for the reconnect (awaitReconnect).
func (m *Manager) callAgain(unsent bool, annotations json.RawMessage) bool {
	return !m.reconnect.Disabled && (unsent || retryable(annotations))
}

// retryable reports whether a tool's annotations say it is read-only or
// idempotent, so a call cut off by a drop may be made again.
func retryable(annotations json.RawMessage) bool {
	if len(annotations) == 0 {
		return false
	}
	var a struct {
		ReadOnly   bool `json:"readOnlyHint"`
		Idempotent bool `json:"idempotentHint"`
	}
	if json.Unmarshal(annotations, &a) != nil {
		return false
	}
	return a.ReadOnly || a.Idempotent
}

// doCall performs the call. errText is the recorded error of a
// client-side failure (empty for the tool's own error results, which are
// not recorded); cut is the connection whose end cut the call off, nil
// when it was not, and unsent then says that the request never left for
// the server (see [neverSent]).
func (m *Manager) doCall(ctx context.Context, s *server, t *Tool, args any, deferred bool) (res *CallResult, errText string, cut *liveConn, unsent bool, err error) {
	fail := func(e error) (*CallResult, string, *liveConn, bool, error) {
		r := errorResult(e)
		return r, r.Text(), nil, false, nil
	}
	disconnected := func(lc *liveConn, unsent bool) (*CallResult, string, *liveConn, bool, error) {
		r := errorResult(&ServerError{Server: s.name, Op: OpCall, Err: fmt.Errorf("%w: %s", ErrDisconnected, s.name)})
		return r, r.Text(), lc, unsent, nil
	}
	if deferred {
		if err := m.awaitConnect(ctx, s); err != nil {
			if ctx.Err() != nil {
				return nil, "", nil, false, ctx.Err()
			}
			return fail(err)
		}
	}
	m.mu.Lock()
	lc := s.conn
	name := t.Original // as recorded; the server's own name when scrubbing changed it
	if lc != nil {
		name = own(lc.names.tools, name)
	}
	m.mu.Unlock()
	if lc == nil {
		return fail(notConnected(s.name))
	}
	if lc.ctx.Err() != nil {
		// The connection ended before the request was sent; its drop is
		// being recorded.
		return disconnected(lc, true)
	}
	// The end of the connection (a teardown included) ends in-flight calls
	// at once.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(lc.ctx, cancel)
	defer stop()
	if raw, ok := args.(json.RawMessage); ok && len(raw) == 0 {
		args = nil
	}
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	params.Meta = m.logMeta(lc)
	if fn, ok := ctx.Value(progressKey{}).(func(Progress)); ok && fn != nil {
		forget := lc.progress.register(params, fn)
		// The go-sdk may deliver a notification just after the result.
		defer time.AfterFunc(progressGrace, forget)
	}
	if m.opts.CallMeta != nil {
		addCallMeta(params, m.opts.CallMeta(ctx))
	}
	note := &sendNote{}
	r, cerr := lc.cs.CallTool(context.WithValue(cctx, sendNoteKey{}, note), params)
	if cerr != nil {
		if ctx.Err() != nil {
			return nil, "", nil, false, ctx.Err()
		}
		if connectionEnded(ctx, lc, cerr) {
			return disconnected(lc, neverSent(lc, note, cerr))
		}
		if ctx.Err() != nil {
			return nil, "", nil, false, ctx.Err()
		}
		return fail(&ServerError{Server: s.name, Op: OpCall, Err: &scrubbedError{msg: lc.res.ScrubText(cerr.Error()), cause: cerr}})
	}
	return &CallResult{Result: r}, "", nil, false, nil
}

// neverSent reports whether the request of a call that the end of its
// connection lc cut off, failing with cerr, was never written: lc's write
// tap, when it has one, saw no write of it succeed; without one, the
// go-sdk refused it because the connection was already broken (or the
// peer, closing, answered it without handling it). A request that was
// written may have reached the server, whatever happened to its answer.
func neverSent(lc *liveConn, note *sendNote, cerr error) bool {
	if lc.writesTapped {
		return !note.written.Load()
	}
	return errors.Is(cerr, mcp.ErrConnectionClosed)
}

// sendNote is what the write tap of a connection learned about one
// call's request (see [writeTap]): whether a write of it succeeded.
type sendNote struct{ written atomic.Bool }

type sendNoteKey struct{}

// tapWrites wraps the transport of a stdio server (run here or shared)
// so that a call learns whether its request was written (neverSent). The
// other transports stay as they are: a streamable-HTTP connection takes
// the session's state through a method a wrapper cannot forward.
func (m *Manager) tapWrites(cfg events.ServerConfig, t mcp.Transport) (mcp.Transport, bool) {
	if m.opts.Dial != nil || cfg.Transport() != events.TransportStdio {
		return t, false
	}
	return writeTap{t}, true
}

// writeTap notes, in the sendNote of a request's context, whether the
// request was written.
type writeTap struct{ mcp.Transport }

func (t writeTap) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return writeTapConn{c}, nil
}

type writeTapConn struct{ mcp.Connection }

func (c writeTapConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if err == nil {
		if n, ok := ctx.Value(sendNoteKey{}).(*sendNote); ok {
			if r, ok := msg.(*jsonrpc.Request); ok && r.IsCall() {
				n.written.Store(true)
			}
		}
	}
	return err
}

// awaitConnect waits for s's connect to settle and returns its error. It
// is bounded by ctx and, for a first connect, by the server's connect
// timeout; a reconnecting server is waited for as long as ctx (the call's
// timeout) allows, across its attempts.
func (m *Manager) awaitConnect(ctx context.Context, s *server) error {
	m.mu.Lock()
	connected, reconnecting := s.connected, s.retry != nil
	m.mu.Unlock()
	wctx := ctx
	if s.timeout > 0 && !reconnecting {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	select {
	case <-connected:
	case <-wctx.Done():
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &ServerError{Server: s.name, Op: OpConnect, Err: &scrubbedError{
			msg: fmt.Sprintf("Connection to MCP server %q timed out after %dms", s.name, s.timeout.Milliseconds()), cause: ErrTimeout}}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.connErr != nil {
		return s.connErr
	}
	if s.ending() || s.conn == nil {
		return notConnected(s.name)
	}
	return nil
}

// redactArguments encodes args for ToolCallStarted with credential-like
// keys and name=value pairs redacted.
func redactArguments(args any) json.RawMessage {
	var v any
	switch a := args.(type) {
	case nil:
		return nil
	case json.RawMessage:
		if err := json.Unmarshal(a, &v); err != nil {
			return nil
		}
	default:
		b, err := json.Marshal(a)
		if err != nil || json.Unmarshal(b, &v) != nil {
			return nil
		}
	}
	b, err := json.Marshal(redactValue(v))
	if err != nil {
		return nil
	}
	return b
}

func redactValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if events.IsCredentialName(k) {
				v[k] = events.Redacted
			} else {
				v[k] = redactValue(x)
			}
		}
		return v
	case []any:
		for i, x := range v {
			v[i] = redactValue(x)
		}
		return v
	case string:
		return events.RedactText(v)
	}
	return v
}

// addCallMeta adds the keys of extra that params' _meta does not hold yet:
// the manager's own keys win.
func addCallMeta(params *mcp.CallToolParams, extra map[string]any) {
	for k, v := range extra {
		if _, ok := params.Meta[k]; ok {
			continue
		}
		if params.Meta == nil {
			params.Meta = mcp.Meta{}
		}
		params.Meta[k] = v
	}
}
