package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcplife/mcplife/events"
)

// DisconnectServer tears the named server down (SPEC §2 step 6): it stops a
// connect in flight, fails in-flight calls, closes the transport (a stdio
// server's whole process group), forgets the source metadata, and records
// Disconnected, which removes the server's tools from the view. It is
// idempotent: an unknown or already disconnected server is not an error.
// When ctx ends first it returns ctx.Err() and the teardown completes in
// the background.
func (m *Manager) DisconnectServer(ctx context.Context, name string) error {
	m.mu.Lock()
	delete(m.sources, name)
	m.mu.Unlock()
	return m.disconnect(ctx, []string{name}, events.ReasonRequested, "")
}

// DisconnectAll tears every server down concurrently (a failure of one does
// not stop the others), clears every registry and the tool view. Servers
// whose connect starts after DisconnectAll took its list are not affected.
// Errors of individual teardowns are joined.
func (m *Manager) DisconnectAll(ctx context.Context) error {
	return m.disconnectAll(ctx, events.ReasonRequested, "")
}

func (m *Manager) disconnectAll(ctx context.Context, reason, correlation string) error {
	m.mu.Lock()
	clear(m.sources)
	names := make([]string, 0, len(m.servers))
	for name := range m.servers {
		names = append(names, name)
	}
	m.mu.Unlock()
	return m.disconnect(ctx, names, reason, correlation)
}

// disconnect tears the named servers down concurrently and records their
// Disconnected events together, in name order. Servers already being torn
// down are waited for.
func (m *Manager) disconnect(ctx context.Context, names []string, reason, correlation string) error {
	slices.Sort(names)
	m.mu.Lock()
	var mine []*server
	var others []chan struct{}
	for _, name := range names {
		s := m.servers[name]
		switch {
		case s == nil:
		case s.closing:
			others = append(others, s.done)
		default:
			s.closing = true
			mine = append(mine, s)
		}
	}
	m.mu.Unlock()
	for _, s := range mine {
		m.yield("disconnect.marked", s.name)
	}

	finished := make(chan error, 1)
	if len(mine) > 0 {
		work := func() { finished <- m.teardown(mine, reason, correlation) }
		if !m.goOwned(work) {
			work()
		}
	} else {
		finished <- nil
	}
	var err error
	select {
	case err = <-finished:
	case <-ctx.Done():
		return ctx.Err()
	}
	for _, ch := range others {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

// goOwned runs fn in a goroutine the manager waits for on Close, and
// reports false (without running fn) once Close has started waiting.
func (m *Manager) goOwned(fn func()) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopping {
		return false
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		fn()
	}()
	return true
}

// teardown shuts servers down concurrently, then records one Disconnected
// per server (in the given order) and removes their records. Every server
// must have been marked closing by the caller.
func (m *Manager) teardown(servers []*server, reason, correlation string) error {
	discs := make([]*events.Disconnected, len(servers))
	errs := make([]error, len(servers))
	done := make(chan int, len(servers))
	for i, s := range servers {
		go func() {
			discs[i], errs[i] = m.shutdown(s, &events.Disconnected{Server: s.name, Reason: reason}, false)
			done <- i
		}()
	}
	for range servers {
		<-done
	}
	m.finish(servers, discs, correlation)
	return errors.Join(errs...)
}

// shutdown stops everything of s: the connect or list in flight, in-flight
// calls, the transport (and process group), the watcher. It returns the
// Disconnected event to record, completed with the exit status of a stdio
// server. fromWatcher is set when the drop watcher itself calls it.
func (m *Manager) shutdown(s *server, d *events.Disconnected, fromWatcher bool) (*events.Disconnected, error) {
	s.cancel()
	<-s.taskDone
	m.mu.Lock()
	lc := s.conn
	m.mu.Unlock()
	var err error
	if lc != nil {
		if cerr := lc.cs.Close(); cerr != nil && d.Reason != events.ReasonProcessExited && d.Reason != events.ReasonTransportClosed {
			err = &ServerError{Server: s.name, Op: OpDisconnect, Err: &scrubbedError{msg: fmt.Sprintf("MCP server %q: close: %s", s.name, lc.res.scrubText(cerr.Error())), cause: cerr}}
		}
		if lc.proc != nil {
			lc.proc.terminate() // done by Close already; waits for the reaper
			d.ExitStatus = lc.proc.exitStatus()
		}
		lc.closeIdle()
	}
	if !fromWatcher {
		<-s.watchDone
	}
	m.waitCalls(s)
	// A deferred server's cached tools are recorded by the gate; the
	// Disconnected must follow them.
	<-s.round.emitted
	return d, err
}

// finish records the Disconnected events of torn-down servers and removes
// their records.
func (m *Manager) finish(servers []*server, discs []*events.Disconnected, correlation string) {
	evs := make([]events.Event, len(discs))
	for i, d := range discs {
		evs[i] = d
	}
	for _, s := range servers {
		m.yield("finish.emit", s.name)
	}
	m.emitCorrelated(correlation, evs...)
	for _, s := range servers {
		m.yield("finish.remove", s.name)
	}
	m.mu.Lock()
	for _, s := range servers {
		if m.servers[s.name] == s {
			delete(m.servers, s.name)
		}
		close(s.done)
	}
	m.mu.Unlock()
}

// watch waits for the end of a live connection. When it ends on its own
// (the process exited, the stream closed) the server is torn down and
// Disconnected records the reason and the exit status; a teardown the
// manager started itself is left to its initiator.
func (m *Manager) watch(s *server, lc *liveConn) {
	defer close(s.watchDone)
	waited := make(chan error, 1)
	go func() { // ends when the session closes; every teardown closes it
		err := lc.cs.Wait()
		close(lc.ended)
		waited <- err
	}()
	var exited <-chan struct{}
	if lc.proc != nil {
		exited = lc.proc.exited
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
	if s.closing {
		m.mu.Unlock()
		<-waited
		return
	}
	s.closing = true
	m.mu.Unlock()

	d := &events.Disconnected{Server: s.name, Reason: events.ReasonTransportClosed}
	procExited := false
	if lc.proc != nil {
		select {
		case <-lc.proc.exited:
			procExited = true
		default:
		}
	}
	if werr != nil && !procExited {
		d.Error = lc.res.scrubText(werr.Error())
	}
	d, _ = m.shutdown(s, d, true)
	if procExited {
		d.Reason = events.ReasonProcessExited
		var b strings.Builder
		if d.ExitStatus != nil {
			fmt.Fprintf(&b, "process exited with status %d", *d.ExitStatus)
		} else {
			b.WriteString("process exited")
		}
		if tail := lc.proc.stderrTail(); tail != "" {
			b.WriteString("; stderr: ")
			b.WriteString(lc.res.scrubText(tailOf(tail, errStderrLimit)))
		}
		d.Error = b.String()
	} else if d.Error == "" {
		d.Error = "connection closed"
	}
	m.log.Warn("MCP server disconnected", "server", s.name, "reason", d.Reason, "err", d.Error)
	<-waited
	m.finish([]*server{s}, []*events.Disconnected{d}, "")
}
