package manager

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/internal/splice"
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
	t, lc.splice = splice.Wrap(t)
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
