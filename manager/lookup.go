package manager

import (
	"slices"
	"strings"

	"github.com/mcplife/mcplife/projector"
)

// toolIndex is the session view's tool list as of one view version, kept
// so that [Manager.Tool] finds a tool without rebuilding the list on every
// call. It is rebuilt at most once per change of the view.
type toolIndex struct {
	valid   bool
	version uint64           // the view's Version when tools was taken
	tools   []projector.Tool // sorted by exposed name
}

// Tool returns the tool exposed under name (mcp_<server>_<tool>), as
// [Manager.Tools] would list it at this moment, and false when the
// session's view has no such tool.
//
// It does not rebuild the tool list: the list of the view's current
// version is kept, sorted by name, and searched; it is taken again only
// after the view changed (a connect, a list, a drop). Safe for concurrent
// use.
func (m *Manager) Tool(name string) (*Tool, bool) {
	m.viewMu.Lock()
	if v := m.view.Version(); !m.lookup.valid || m.lookup.version != v {
		m.lookup = toolIndex{valid: true, version: v, tools: m.view.Tools()}
	}
	tools := m.lookup.tools
	m.viewMu.Unlock()
	i, ok := slices.BinarySearchFunc(tools, name, func(t projector.Tool, name string) int {
		return strings.Compare(t.Name, name)
	})
	if !ok {
		return nil, false
	}
	return m.newTool(tools[i]), true
}
