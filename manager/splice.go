package manager

import (
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
	return t
}

// publishSplice publishes lc's point as s's connection, speaking version.
// Calls of a tool the record names otherwise than the server (scrubbing
// changed its name) are not spliced.
func (m *Manager) publishSplice(s *server, lc *liveConn, version string) {
	if lc.splice == nil {
		return
	}
	m.opts.splice.Publish(s.name, lc.splice, version, func(tool string) bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		_, renamed := lc.names.tools[tool]
		return renamed
	})
}
