package manager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/manager/internal/conn"
)

// A drop is the end of a live connection that the manager did not start:
// the server's process exited or its stream closed (or the manager closed
// it: a failed health check, a flood, a listen stream that ended). The
// server's own goroutine notices it in its select (serve) and records it
// here; calls in flight fail with [ErrDisconnected] (see
// connectionEnded) unless they may be made again after the reconnect, and
// calls made afterwards wait for the drop's decision: for the reconnect
// when one is scheduled, else they fail with [ErrNotConnected].

// drop records the end of s's connection lc that the manager did not ask
// for: it closes what is left of the connection (the process group of a
// stdio server), waits for the calls that were on it, and records
// Disconnected with the reason and the exit status. Unless reconnecting
// is off, the manager is closing, a disconnect was asked meanwhile or the
// crash-loop breaker trips, it then schedules the reconnect
// (ReconnectScheduled) and reports true: the owner's loop connects again
// after the delay, and calls made meanwhile wait for it. Otherwise the
// record ends (the disconnects asked are answered). A disconnect asked
// before the drop was noticed tears the server down instead: drop
// reports false then.
func (m *Manager) drop(s *server, lc *liveConn) bool {
	if s.stops.Asked() {
		m.tearDown(s)
		return false
	}
	// decided is new before the state says dropped: whoever sees the
	// state waits for this drop's decision.
	m.mu.Lock()
	s.decided = make(chan struct{})
	m.mu.Unlock()
	m.setState(s, stDropped)
	m.mu.Lock()
	calls := s.calls
	s.calls = &callGroup{}
	unresponsive, flooded, eraChanged, listenCut := lc.unresponsive, lc.flooded, lc.eraChanged, lc.listenCut
	m.mu.Unlock()
	m.yield("watch.ended", s.name)

	d := &events.Disconnected{Server: s.name, Reason: events.ReasonTransportClosed}
	procExited := false
	if lc.proc != nil {
		select {
		case <-lc.proc.Exited():
			procExited = true
		default:
		}
	}
	var werr error
	select {
	case <-lc.ended:
		werr = lc.waitErr
	default:
	}
	// A read that failed because this side closed the connection says no
	// more than that it closed: a shared server's stream is closed here
	// when the shared host's control stream ends, which may be seen
	// before or after the stream's own end.
	if werr != nil && !procExited && !errors.Is(werr, net.ErrClosed) {
		d.Error = lc.res.ScrubText(werr.Error())
	}
	m.closeConn(s, lc, d)
	m.waitCalls(calls)
	m.mu.Lock()
	r := s.round
	m.mu.Unlock()
	// A deferred server's cached tools are recorded by the gate; the
	// Disconnected must follow them.
	<-r.emitted
	if unresponsive {
		d.Reason, d.Error = events.ReasonUnresponsive, "no answer to a health check within "+m.opts.Health.Timeout.String()
	} else if eraChanged {
		d.Reason, d.Error = events.ReasonError, "server/discover answered with an error of another protocol era: connecting again to probe the era"
	} else if listenCut {
		d.Error = "the subscriptions/listen stream ended without its final response"
	} else if procExited {
		d.Reason = events.ReasonProcessExited
		var b strings.Builder
		if d.ExitStatus != nil {
			fmt.Fprintf(&b, "process exited with status %d", *d.ExitStatus)
		} else {
			b.WriteString("process exited")
		}
		if tail := lc.proc.StderrTail(); tail != "" {
			b.WriteString("; stderr: ")
			b.WriteString(stderrExcerpt(lc.res, tail))
		}
		d.Error = b.String()
	} else if d.Error == "" {
		d.Error = "connection closed"
	}
	if flooded {
		d.Error = fmt.Sprintf("disconnected: the server sent more than %d requests in a second beyond its limits", maxDeclinedRequests)
	}
	m.log.Warn("MCP server disconnected", "server", s.name, "reason", d.Reason, "err", d.Error)

	m.mu.Lock()
	if m.reconnect.Disabled || m.closed || m.stopping || s.stops.Asked() {
		m.setState(s, stClosing, conn.Failed(d.Error))
		close(s.decided)
		m.mu.Unlock()
		m.emitCorrelated("", d)
		m.endRecord(s)
		return false
	}
	n, tripped, count := 1, false, 0
	if m.now().Sub(s.connectedAt) < m.reconnect.StableAfter {
		// Not stable yet: counts as a failed attempt, and the next delay
		// continues the backoff.
		tripped, count = m.noteFailure(s.name)
		if s.retry != nil {
			n = s.retry.n + 1
		}
	}
	if tripped {
		m.setState(s, stClosing, conn.Failed(d.Error))
		close(s.decided)
		m.emitDeferred("", d, &events.ReconnectGaveUp{Server: s.name, Attempts: count, LastError: d.Error})
		m.log.Warn("MCP server keeps failing; reconnecting stopped", "server", s.name, "attempts", count)
		m.mu.Unlock()
		m.endRecord(s)
		return false
	}
	// The record stands for the server until its next connection: same
	// config, its tools served deferred, connecting after the delay.
	d.Reconnecting = true
	s.retry = newRetry(m.reconnect.delay(n), n)
	m.setState(s, stBackoff, conn.Retry(s.retry.delay, m.now()), conn.Failed(d.Error))
	s.conn, s.deferred = nil, true
	s.cachedResources, s.cachedPrompts = false, false
	s.connected = make(chan struct{})
	s.round = gatelessRound(s)
	close(s.decided)
	// Recorded under m.mu, so nothing of the next attempt comes before them.
	m.emitDeferred("", d, &events.ReconnectScheduled{
		Server: s.name, Attempt: m.attempts[s.name] + 1, DelayMs: s.retry.delay.Milliseconds(), Cause: string(d.Reason),
	})
	m.mu.Unlock()
	lc.release()
	return true
}

// closeConn closes what is left of s's connection lc: the go-sdk session,
// the process group of a stdio server (completing d with its exit
// status), the idle connections of a remote one. It waits until the
// session's Wait returned. The error is that of a close that failed for
// another reason than the end d records.
func (m *Manager) closeConn(s *server, lc *liveConn, d *events.Disconnected) error {
	lc.cancel()
	// The go-sdk's Close first waits for the requests the server sent to
	// be answered, and an answer cannot be written to a server that
	// stopped reading its stdin (one that floods requests): after the
	// stdin grace the process is terminated, which ends those writes.
	var force *time.Timer
	if lc.proc != nil {
		force = time.AfterFunc(stdinGrace, func() { lc.proc.Terminate() })
	}
	cerr := lc.cs.Close()
	if force != nil {
		force.Stop()
	}
	var err error
	if cerr != nil && d.Reason != events.ReasonProcessExited && d.Reason != events.ReasonTransportClosed {
		err = &ServerError{Server: s.name, Op: OpDisconnect, Err: &scrubbedError{msg: fmt.Sprintf("MCP server %q: close: %s", s.name, lc.res.ScrubText(cerr.Error())), cause: cerr}}
	}
	if lc.proc != nil {
		lc.proc.Terminate() // done by Close already; waits for the reaper
		d.ExitStatus = lc.proc.ExitStatus()
	}
	lc.closeIdle()
	<-lc.ended
	return err
}

// endGrace bounds how long a failed call waits for its connection to end
// before it reports the failure as it is (see [connectionEnded]).
const endGrace = time.Second

// connectionEnded reports whether the call failure cerr came from the end
// of the connection: the transport was closed or failed, the process
// exited, or the server is being torn down.
//
// The go-sdk fails the calls in flight when its reader stops, just before
// the session's Wait returns and the server's goroutine notices; so a failure
// that is not the server's own JSON-RPC error waits (at most endGrace) for
// the connection's end to become visible. An end-of-stream or
// closed-connection error is conclusive at once: a stdio session's Wait
// returns only once the process group was torn down.
func connectionEnded(ctx context.Context, lc *liveConn, cerr error) bool {
	if lc.ctx.Err() != nil {
		return true
	}
	if _, ok := errors.AsType[*jsonrpc.Error](cerr); ok {
		return false // the server answered
	}
	if errors.Is(cerr, mcp.ErrConnectionClosed) || errors.Is(cerr, io.EOF) || errors.Is(cerr, io.ErrUnexpectedEOF) {
		return true
	}
	t := time.NewTimer(endGrace)
	defer t.Stop()
	select {
	case <-lc.ctx.Done():
	case <-ctx.Done():
		return false
	case <-t.C:
		return false
	}
	return true
}
