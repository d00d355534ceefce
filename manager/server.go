package manager

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/proc"
	"github.com/mcplife/mcplife/internal/splice"
	"github.com/mcplife/mcplife/manager/internal/conn"
	"github.com/mcplife/mcplife/manager/internal/transport"
)

// server is the runtime record of one server, from its first
// ConnectStarted until its teardown finished. One goroutine owns it (run):
// it connects, lists, serves the connection and, when the connection ends
// on its own, records the drop and connects again after a delay, in a
// loop, so one record stands for the server across its reconnects. The
// fields marked (m.mu) are guarded by the manager's mutex; the rest are
// set before the record is shared.
type server struct {
	name    string
	cfg     events.ServerConfig // unresolved
	hash    string
	timeout time.Duration
	// round is the startup round of the current attempt: the first
	// connect's, then, after a drop, one without a gate (m.mu).
	round *round

	// stops carries disconnects to the owner (disconnect.go); ctx is its
	// context, which ends with the first one: it stops the connect and
	// list in flight, the owner's waits and in-flight calls, so the owner
	// takes the disconnect wherever it was.
	stops *conn.Inbox[*stopCmd]
	ctx   context.Context

	// connected is closed when the current connect settled; connErr (set
	// before) is its error, nil on success. After a drop a new channel
	// stands for the next connect (m.mu).
	connected chan struct{}
	connErr   error

	// retry is set once the server dropped: the owner waits out its delay
	// before each attempt (m.mu).
	retry *retry

	conn        *liveConn // (m.mu) set once initialize finished; cleared when a drop was recorded
	connectedAt time.Time // (m.mu) when conn was set
	deferred    bool      // (m.mu) CachedToolsServed recorded, no live list yet
	// mach is where the record is in its lifecycle (state.go): changed
	// by the owner alone, read by anyone without a lock.
	mach *conn.Machine
	// decided is closed when the owner leaves the dropped state, having
	// recorded the drop and decided to reconnect or not (m.mu).
	decided chan struct{}
	// cachedResources and cachedPrompts: (m.mu) lists of that kind were
	// served from the cache at the gate, so the server's own listing must
	// replace them even when it has none.
	cachedResources, cachedPrompts bool
	// authContext is the authorization context of the current connect
	// (events.CacheHints AuthContext), once authKnown (m.mu): the tool
	// cache's viewer of s is this host under it.
	authContext string
	authKnown   bool
	// calls are the in-flight calls of the current connection, or of the
	// connect they wait for; a drop waits for its connection's group and
	// starts a new one (m.mu).
	calls *callGroup
	// subs are the session's resource subscriptions, which each new
	// connection is subscribed to again (subscriptions.go).
	subs resourceSubs

	// eraProbe: the server contradicted its recorded era after its
	// connect; the next connect probes it (era.go).
	eraProbe atomic.Bool

	done chan struct{} // the record ended and was removed
}

// liveConn is a connected server's go-sdk session.
type liveConn struct {
	cs   *mcp.ClientSession
	proc *proc.Process // stdio only
	// attach is the transport of a shared server's attach, whose answer
	// may stand for the first tools/list (share.go); nil otherwise.
	attach mcp.Transport
	// ctx ends with the connection: when the server is torn down, when the
	// session's Wait returned, when the process exited, or when the
	// manager closed the connection (a failed health check, a flood, a
	// listen stream that ended).
	// Requests on the connection use it, and the owner's select notices
	// the end through it.
	ctx    context.Context
	cancel context.CancelFunc
	relist chan struct{} // coalesced tools/list_changed signals (cap 1)
	// checkNow asks for a health check at once.
	checkNow conn.Kick
	// resourcesChanged and promptsChanged are coalesced list_changed
	// signals of resources and prompts (cap 1 each).
	resourcesChanged, promptsChanged chan struct{}
	// surfaceReady is closed once the first resource and prompt lists
	// are recorded (or failed, or the server has none).
	surfaceReady chan struct{}
	surface      surfaceState
	// ended is closed when the session's Wait returned, with waitErr
	// (set before) its error.
	ended   chan struct{}
	waitErr error
	// gone is closed once the manager is done with the connection: its
	// Disconnected is recorded and, after a drop, the reconnect (if any)
	// is scheduled. A call cut off by the drop waits for it before it is
	// made again.
	gone     chan struct{}
	goneOnce sync.Once
	res      transport.Resolved
	pool     *http.Transport // HTTP and SSE only
	// authContext is the authorization context the connection uses, that
	// its private lists are recorded under ("" without OAuth).
	authContext string
	// progress routes progress notifications to the calls that asked.
	progress progressTokens
	// splice is the connection's point for spliced calls (nil unless
	// the shared host runs the manager).
	splice *splice.Point
	// acks are the resource subscriptions waiting for the server's
	// acknowledgement of their subscriptions/listen stream.
	acks listenAcks
	// annotations holds the tool annotations of the latest tools/list,
	// by the server's own tool name, when lc has a splice point (m.mu).
	annotations map[string]json.RawMessage
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
	// unresponsive: the health check closed the connection (m.mu).
	unresponsive bool
	// eraChanged: a health check's server/discover was answered with an
	// error of another protocol era, so the connection was closed for a
	// connect that probes the era again (m.mu).
	eraChanged bool
	// listenCut: the subscriptions/listen stream ended without its final
	// response, and the connection with it (m.mu).
	listenCut bool
	// wire keeps when the server last answered a request other than a
	// health check, and sends health checks past the client's middleware.
	wire wireTap
	// flooded: the connection was closed for sending more than
	// maxDeclinedRequests a second (m.mu).
	flooded bool
	// writesTapped: a call learns whether its request was written
	// (tapWrites).
	writesTapped bool
	// era is the ServerEraDetected the connect recorded before
	// ServerConnected (nil: none); first, the tools/list the connect made
	// itself (era.go).
	era   *events.ServerEraDetected
	first *firstList
}

// release closes lc.gone, once.
func (lc *liveConn) release() { lc.goneOnce.Do(func() { close(lc.gone) }) }

// closeIdle closes the keep-alive connections of an HTTP server's pool.
func (lc *liveConn) closeIdle() {
	if lc.pool != nil {
		lc.pool.CloseIdleConnections()
	}
}

// callGroup counts in-flight calls of one connection of a server.
type callGroup struct {
	n    int
	zero chan struct{} // closed when n drops to 0 while waited for
}

// joinCall adds a call to s's current group unless s is leaving (dropped,
// asked to disconnect, being torn down), and returns the group the call
// must leave. Requires m.mu, for the group: the owner leaves the state
// that takes calls before it takes the group to wait for under m.mu, so
// a call that joined is waited for and one that comes later sees the
// record ending.
func (s *server) joinCall() *callGroup {
	if s.ending() {
		return nil
	}
	s.calls.n++
	return s.calls
}

// leaveCall ends a call of the group g.
func (m *Manager) leaveCall(g *callGroup) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g.n--
	if g.n == 0 && g.zero != nil {
		close(g.zero)
		g.zero = nil
	}
}

// waitCalls waits until the group g has no call in flight. Only a
// teardown or a drop calls it, after the group stopped taking calls.
func (m *Manager) waitCalls(g *callGroup) {
	m.mu.Lock()
	if g.n == 0 {
		m.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	g.zero = ch
	m.mu.Unlock()
	<-ch
}
