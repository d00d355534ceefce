package manager

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/internal/splice"
	"github.com/mcplife/mcplife/manager/internal/transport"
)

// The shared host splices its hosts' tool calls onto its connections to
// the servers (package splice): it gives its manager a registry, where
// each connection is published once connected.
func init() {
	splice.UseRegistry = func(opts any, r *splice.Registry) { opts.(*Options).splice = r }
}

// spliceable returns t with a splice point on its connection (kept in
// lc) when the manager publishes its connections; t itself otherwise.
// The point sits nearest the wire: spliced messages pass no middleware
// and no transcript of this manager.
func (m *Manager) spliceable(lc *liveConn, t mcp.Transport) mcp.Transport {
	if m.opts.splice == nil {
		return t
	}
	st := t
	t, lc.splice = splice.Wrap(st)
	// The responses of spliced calls are taken off a stdio server's
	// stdout as they are read, not after the connection handed them to
	// its client's reader.
	transport.OnLine(st, lc.splice.Tap)
	// And the requests written to its stdin as they came.
	if w := transport.LineWriter(st); w != nil {
		lc.splice.WriteLines(w)
	}
	return t
}

// publishSplice publishes lc's point as s's connection, speaking version.
// Calls of a tool the record names otherwise than the server (scrubbing
// changed its name) are not spliced. A spliced call that the end of lc
// cut off follows the rule of the manager's own calls: made once more
// after the reconnect when its tool is read-only or idempotent.
func (m *Manager) publishSplice(s *server, lc *liveConn, version string) {
	if lc.splice == nil {
		return
	}
	renamed := func(tool string) bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		_, renamed := lc.names.tools[tool]
		return renamed
	}
	m.opts.splice.Publish(s.name, lc.splice, version, renamed, func(ctx context.Context, tool string) bool {
		return m.spliceAgain(ctx, s, lc, tool)
	})
}

// spliceAgain reports whether a spliced call of tool that the end of lc
// cut off (its request was written) is made once more, and waits until s
// is connected again for it. As for a call of the manager's own, the
// server's call timeout bounds the wait.
func (m *Manager) spliceAgain(ctx context.Context, s *server, lc *liveConn, tool string) bool {
	m.mu.Lock()
	annotations, limit := lc.annotations[tool], toolTimeoutOf(s.cfg)
	m.mu.Unlock()
	if !m.callAgain(false, annotations) {
		return false
	}
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	return m.awaitReconnect(ctx, s, lc) && m.awaitConnect(ctx, s) == nil
}
