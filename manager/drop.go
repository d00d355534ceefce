package manager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
)

// A drop is the end of a live connection that the manager did not start:
// the server's process exited or its stream closed. The drop watcher of
// each connected server notices it and tears the server down; calls in
// flight fail with [ErrDisconnected] (see connectionEnded), and calls made
// afterwards with [ErrNotConnected].

// watchDrop is the drop watcher of a connected server: it waits for the
// end of the live connection. When it ends on its own (the process
// exited, the stream closed) the server is torn down and Disconnected
// records the reason and the exit status; a teardown the manager started
// itself is left to its initiator.
func (m *Manager) watchDrop(s *server, lc *liveConn) {
	defer close(s.watchDone)
	waited := make(chan error, 1)
	go func() { // ends when the session closes; every teardown closes it
		err := lc.cs.Wait()
		close(lc.ended)
		waited <- err
	}()
	var exited <-chan struct{}
	if lc.proc != nil {
		exited = lc.proc.Exited()
	}
	var werr error
	select {
	case werr = <-waited:
		waited <- werr // keep it for the final receive
	case <-exited:
	case <-s.ctx.Done():
	}
	m.yield("watch.ended", s.name)
	m.mu.Lock()
	if s.ending() {
		m.mu.Unlock()
		<-waited
		return
	}
	m.setState(s, stClosing)
	m.mu.Unlock()

	d := &events.Disconnected{Server: s.name, Reason: events.ReasonTransportClosed}
	m.mu.Lock()
	unresponsive, flooded := s.unresponsive, s.flooded
	m.mu.Unlock()
	procExited := false
	if lc.proc != nil {
		select {
		case <-lc.proc.Exited():
			procExited = true
		default:
		}
	}
	if werr != nil && !procExited {
		d.Error = lc.res.scrubText(werr.Error())
	}
	d, _ = m.shutdown(s, d, true)
	if unresponsive {
		d.Reason, d.Error = events.ReasonUnresponsive, "no answer to a health check within "+m.opts.Health.Timeout.String()
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
	<-waited
	m.dropped(s, d)
}

// dropped records the end of s that the manager did not ask for and, unless
// reconnecting is off, the manager is closing or the crash-loop breaker
// trips, puts a reconnecting record in its place before s is removed, so
// calls made meanwhile wait for the reconnect.
func (m *Manager) dropped(s *server, d *events.Disconnected) {
	m.mu.Lock()
	if m.reconnect.Disabled || m.closed || m.stopping {
		m.mu.Unlock()
		m.finish([]*server{s}, []*events.Disconnected{d}, "")
		return
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
	evs := []events.Event{d}
	var s2 *server
	if tripped {
		evs = append(evs, &events.ReconnectGaveUp{Server: s.name, Attempts: count, LastError: d.Error})
		m.log.Warn("MCP server keeps failing; reconnecting stopped", "server", s.name, "attempts", count)
		if m.servers[s.name] == s {
			delete(m.servers, s.name)
		}
	} else {
		d.Reconnecting = true
		s2 = m.successor(s, n)
		evs = append(evs, &events.ReconnectScheduled{
			Server: s.name, Attempt: m.attempts[s.name] + 1, DelayMs: s2.retry.delay.Milliseconds(), Cause: string(d.Reason),
		})
	}
	// Recorded under m.mu, so nothing of the successor comes before them.
	m.emitDeferred("", evs...)
	if s2 != nil {
		m.wg.Go(func() { m.run(s2) })
	}
	m.mu.Unlock()
	m.yield("finish.remove", s.name)
	m.mu.Lock()
	m.setState(s, stDone)
	close(s.done)
	m.mu.Unlock()
}

// endGrace bounds how long a failed call waits for its connection to end
// before it reports the failure as it is (see [connectionEnded]).
const endGrace = time.Second

// connectionEnded reports whether the call failure cerr came from the end
// of the connection: the transport was closed or failed, the process
// exited, or the server is being torn down.
//
// The go-sdk fails the calls in flight when its reader stops, just before
// the session's Wait returns and the drop watcher notices; so a failure
// that is not the server's own JSON-RPC error waits (at most endGrace) for
// the connection's end to become visible. An end-of-stream or
// closed-connection error is conclusive at once: a stdio session's Wait
// returns only once the process group was torn down.
func connectionEnded(ctx context.Context, s *server, lc *liveConn, cerr error) bool {
	if s.ctx.Err() != nil {
		return true
	}
	if _, ok := errors.AsType[*jsonrpc.Error](cerr); ok {
		return false // the server answered
	}
	if errors.Is(cerr, mcp.ErrConnectionClosed) || errors.Is(cerr, io.EOF) || errors.Is(cerr, io.ErrUnexpectedEOF) {
		return true
	}
	var exited <-chan struct{}
	if lc.proc != nil {
		exited = lc.proc.Exited()
	}
	t := time.NewTimer(endGrace)
	defer t.Stop()
	select {
	case <-lc.ended:
	case <-exited:
	case <-s.ctx.Done():
	case <-ctx.Done():
		return false
	case <-t.C:
		return false
	}
	return true
}
