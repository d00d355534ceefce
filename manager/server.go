package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
)

// server is the runtime record of one server from its ConnectStarted until
// its teardown finished. The fields marked (m.mu) are guarded by the
// manager's mutex; the rest are set before the record is shared.
type server struct {
	name    string
	cfg     events.ServerConfig // unresolved
	hash    string
	round   *round
	timeout time.Duration

	// ctx is cancelled when the server is torn down: it stops the connect
	// and list task, the relist loop and in-flight calls.
	ctx    context.Context
	cancel context.CancelFunc

	// connected is closed when the connect settled; connErr (set before)
	// is its error, nil on success.
	connected chan struct{}
	connErr   error

	conn     *liveConn // (m.mu) set once initialize finished
	deferred bool      // (m.mu) CachedToolsServed recorded, no live list yet
	closing  bool      // (m.mu) teardown started
	calls    callGroup // in-flight calls; joined under m.mu while !closing

	taskDone  chan struct{} // the connect/list/relist goroutine exited
	watchDone chan struct{} // the drop watcher exited (closed at once if none)
	done      chan struct{} // teardown finished and the record was removed
}

// liveConn is a connected server's go-sdk session.
type liveConn struct {
	cs     *mcp.ClientSession
	proc   *process      // stdio only
	relist chan struct{} // coalesced tools/list_changed signals (cap 1)
	ended  chan struct{} // closed when the session's Wait returned
	res    resolved
	pool   *http.Transport // HTTP and SSE only
	// progress routes progress notifications to the calls that asked.
	progress progressTokens
}

// closeIdle closes the keep-alive connections of an HTTP server's pool.
func (lc *liveConn) closeIdle() {
	if lc.pool != nil {
		lc.pool.CloseIdleConnections()
	}
}

// callGroup counts in-flight calls of a server.
type callGroup struct {
	n    int
	zero chan struct{} // closed when n drops to 0 while waited for
}

// connect resolves substitutions, builds the transport and runs initialize
// under the server's timeout. The transport is closed when initialization
// fails. Errors are scrubbed of resolved secrets.
func (m *Manager) connect(s *server) (*liveConn, error) {
	ctx := s.ctx
	res := resolveConfig(ctx, s.name, s.cfg, m.opts.Resolver, m.log)
	var t mcp.Transport
	var err error
	if tr := res.cfg.Transport(); tr == events.TransportHTTP || tr == events.TransportSSE {
		err = events.CheckURL(res.cfg.URL) // its references are expanded only now
	}
	if err == nil {
		t, err = m.dial(s.name, res.cfg, res, m.opts.Cwd)
	}
	if err != nil {
		return nil, m.connectError(s, res, nil, err)
	}
	if st, ok := t.(*stdioTransport); ok {
		st.log = m.log.With("server", s.name)
		st.server, st.maxMessage = s.name, m.opts.MaxMessageSize
	}
	lc := &liveConn{relist: make(chan struct{}, 1), ended: make(chan struct{}), res: res}
	client := mcp.NewClient(&mcp.Implementation{Name: m.opts.ClientName, Version: m.opts.ClientVersion}, &mcp.ClientOptions{
		Logger:                      m.log,
		ProgressNotificationHandler: lc.progress.notify,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case lc.relist <- struct{}{}:
			default: // a re-list is already due
			}
		},
	})
	client.AddRoots(&mcp.Root{URI: (&url.URL{Scheme: "file", Path: m.opts.Cwd}).String(), Name: filepath.Base(m.opts.Cwd)})
	pv := m.opts.ProtocolVersion
	if s.cfg.ProtocolVersion != "" {
		pv = s.cfg.ProtocolVersion
	}
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if s.timeout > 0 {
		cctx, cancel = context.WithTimeout(ctx, s.timeout)
	}
	cs, err := client.Connect(cctx, t, &mcp.ClientSessionOptions{ProtocolVersion: pv})
	timedOut := err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded)
	cancel()
	var proc *process
	if st, ok := t.(*stdioTransport); ok {
		proc = st.proc
	}
	if pt, ok := t.(*pooledTransport); ok {
		lc.pool = pt.pool
	}
	if err != nil {
		if proc != nil {
			proc.terminate() // normally done by the go-sdk already
		}
		lc.closeIdle()
		if timedOut {
			err = &scrubbedError{msg: fmt.Sprintf("Connection to MCP server %q timed out after %dms", s.name, s.timeout.Milliseconds()), cause: ErrTimeout}
		}
		return nil, m.connectError(s, res, proc, err)
	}
	lc.cs, lc.proc = cs, proc
	return lc, nil
}

// connectError wraps a connect failure as a [*ServerError] whose message
// names the server, carries the exit status and the stderr tail of a
// stdio server, and holds no secret.
func (m *Manager) connectError(s *server, res resolved, proc *process, err error) error {
	if errors.Is(err, ErrTimeout) {
		if proc != nil {
			if tail := proc.stderrTail(); tail != "" {
				err = &scrubbedError{msg: err.Error() + "; stderr: " + res.scrubText(tailOf(tail, errStderrLimit)), cause: err}
			}
		}
		return &ServerError{Server: s.name, Op: OpConnect, Err: err}
	}
	msg := fmt.Sprintf("MCP server %q: connect: %s", s.name, res.scrubText(err.Error()))
	if proc != nil {
		if st := proc.exitStatus(); st != nil {
			msg += fmt.Sprintf(" (process exited with status %d)", *st)
		}
		if tail := proc.stderrTail(); tail != "" {
			msg += "; stderr: " + res.scrubText(tailOf(tail, errStderrLimit))
		}
	}
	return &ServerError{Server: s.name, Op: OpConnect, Err: &scrubbedError{msg: msg, cause: err}}
}

// errStderrLimit is how much of a server's stderr an error message quotes.
const errStderrLimit = 4 << 10

// tailOf returns the last n bytes of s.
func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// listTools runs tools/list following nextCursor, bounded by the server's
// timeout.
func (m *Manager) listTools(ctx context.Context, s *server, lc *liveConn) ([]events.ToolDef, error) {
	cancel := context.CancelFunc(func() {})
	lctx := ctx
	if s.timeout > 0 {
		lctx, cancel = context.WithTimeout(ctx, s.timeout)
	}
	defer cancel()
	var defs []events.ToolDef
	for tool, err := range lc.cs.Tools(lctx, nil) {
		if err != nil {
			if ctx.Err() == nil && errors.Is(lctx.Err(), context.DeadlineExceeded) {
				return nil, &ServerError{Server: s.name, Op: OpList, Err: &scrubbedError{
					msg: fmt.Sprintf("Listing tools of MCP server %q timed out after %dms", s.name, s.timeout.Milliseconds()), cause: ErrTimeout}}
			}
			return nil, &ServerError{Server: s.name, Op: OpList, Err: &scrubbedError{
				msg: fmt.Sprintf("MCP server %q: tools/list: %s", s.name, lc.res.scrubText(err.Error())), cause: err}}
		}
		defs = append(defs, toolDef(tool))
	}
	return defs, nil
}

// toolDef converts a go-sdk tool to the recorded definition.
func toolDef(t *mcp.Tool) events.ToolDef {
	d := events.ToolDef{Name: t.Name, Title: t.Title, Description: t.Description}
	d.InputSchema = rawJSON(t.InputSchema)
	d.OutputSchema = rawJSON(t.OutputSchema)
	if t.Annotations != nil {
		d.Annotations = rawJSON(t.Annotations)
	}
	return d
}

// rawJSON marshals v, or returns nil for nil values.
func rawJSON(v any) json.RawMessage {
	switch v := v.(type) {
	case nil:
		return nil
	case json.RawMessage:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return nil
	}
	return b
}

// join adds a call to s unless s is being torn down. Requires m.mu.
func (g *callGroup) join(s *server) bool {
	if s.closing {
		return false
	}
	g.n++
	return true
}

// leave ends a call of s.
func (m *Manager) leaveCall(s *server) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s.calls.n--
	if s.calls.n == 0 && s.calls.zero != nil {
		close(s.calls.zero)
		s.calls.zero = nil
	}
}

// waitCalls waits until s has no call in flight. Only the teardown calls
// it, after marking s closing, so no call joins meanwhile.
func (m *Manager) waitCalls(s *server) {
	m.mu.Lock()
	if s.calls.n == 0 {
		m.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	s.calls.zero = ch
	m.mu.Unlock()
	<-ch
}
