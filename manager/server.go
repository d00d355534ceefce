package manager

import (
	"context"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/proc"
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

	// retry is set on a record that reconnects a server after a drop: its
	// run goroutine waits out the delay before each attempt.
	retry *retry

	conn        *liveConn // (m.mu) set once initialize finished
	connectedAt time.Time // (m.mu) when conn was set
	deferred    bool      // (m.mu) CachedToolsServed recorded, no live list yet
	state       state     // (m.mu) where the record is in its lifecycle (state.go)
	// cachedResources and cachedPrompts: (m.mu) lists of that kind were
	// served from the cache at the gate, so the server's own listing must
	// replace them even when it has none.
	cachedResources, cachedPrompts bool
	// unresponsive: the health check closed the connection (m.mu).
	unresponsive bool
	// flooded: the connection was closed for sending more than
	// maxDeclinedRequests a second (m.mu).
	flooded bool
	calls   callGroup // in-flight calls; joined under m.mu while !closing

	taskDone  chan struct{} // the connect/list/relist goroutine exited
	watchDone chan struct{} // the drop watcher exited (closed at once if none)
	done      chan struct{} // teardown finished and the record was removed
}

// liveConn is a connected server's go-sdk session.
type liveConn struct {
	cs     *mcp.ClientSession
	proc   *proc.Process // stdio only
	relist chan struct{} // coalesced tools/list_changed signals (cap 1)
	// checkNow asks the health check to ping at once (cap 1).
	checkNow chan struct{}
	// resourcesChanged and promptsChanged are coalesced list_changed
	// signals of resources and prompts (cap 1 each).
	resourcesChanged, promptsChanged chan struct{}
	// surfaceReady is closed once the first resource and prompt lists
	// are recorded (or failed, or the server has none).
	surfaceReady chan struct{}
	surface      surfaceState
	ended        chan struct{} // closed when the session's Wait returned
	res          resolved
	pool         *http.Transport // HTTP and SSE only
	// progress routes progress notifications to the calls that asked.
	progress progressTokens
	// logs rate-limits the server's log messages (fields under m.mu);
	// setLevel: logging/setLevel asks the server for logs once connected;
	// logsPerRequest: the log level goes in each request's _meta instead.
	logs                     logLimiter
	setLevel, logsPerRequest bool
	// names maps recorded (scrubbed) tool names, resource URIs and prompt
	// names back to the server's own (m.mu).
	names liveNames
	// flood bounds the server's requests to the host and its resource
	// updates (fields under m.mu).
	flood floodLimiter
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

// join adds a call to s unless s is being torn down. Requires m.mu.
func (g *callGroup) join(s *server) bool {
	if s.ending() {
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
