package manager

// liveNames maps the recorded form of a connection's tool names, resource
// URIs and prompt names back to the server's own, for those that
// scrubbing changed. Its maps are replaced, never modified, under m.mu.
type liveNames struct {
	tools, resources, prompts map[string]string
}

// own returns the server's own form of recorded in names, or recorded
// itself when scrubbing did not change it.
func own(names map[string]string, recorded string) string {
	if v, ok := names[recorded]; ok {
		return v
	}
	return recorded
}

// liveName returns the server's own form of a tool name, resource URI or
// prompt name (picked by which) that the session knows from the record.
func (m *Manager) liveName(lc *liveConn, which func(*liveNames) map[string]string, recorded string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return own(which(&lc.names), recorded)
}

func resourceNames(n *liveNames) map[string]string { return n.resources }
func promptNames(n *liveNames) map[string]string   { return n.prompts }
