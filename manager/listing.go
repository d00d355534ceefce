package manager

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
)

// Bounds on lists, the defaults of Options.MaxListPages, MaxListTools and
// MaxSessionTools. A list is paged by its server (the go-sdk pages 1000 at
// a time); these bound a server that pages forever or lists without end,
// which would otherwise grow the host's memory until the list timed out,
// or for good without a timeout.
const (
	// defaultMaxListPages bounds the pages of one list.
	defaultMaxListPages = 1000
	// defaultMaxListTools bounds the tools of one server's list (and the
	// resources, templates or prompts of one of its lists).
	defaultMaxListTools = 10_000
	// defaultMaxSessionTools bounds the tools of all servers' latest lists
	// together.
	defaultMaxSessionTools = 50_000
)

// listTools runs tools/list following nextCursor, bounded by the server's
// timeout, by Options.MaxListPages and MaxListTools, and, once complete,
// by what Options.MaxSessionTools leaves beside the other servers' latest
// lists. A list that is taken counts towards the session's tools from now
// on. The list's cache hints are its pages' (hintsFold), none for a
// connection whose results carry none.
func (m *Manager) listTools(ctx context.Context, s *server, lc *liveConn) ([]events.ToolDef, events.CacheHints, error) {
	cancel := context.CancelFunc(func() {})
	lctx := ctx
	if s.timeout > 0 {
		lctx, cancel = context.WithTimeout(ctx, s.timeout)
	}
	defer cancel()
	var defs []events.ToolDef
	hints := hintsFold{off: !carriesHints(lc.cs)}
	err := m.paginate(lctx, s, "tools/list", "tools", func(ctx context.Context, cursor string) (int, string, error) {
		res, ok := lc.sharedFirstTools(cursor)
		if !ok {
			var err error
			if res, err = lc.cs.ListTools(ctx, &mcp.ListToolsParams{Meta: m.logMeta(lc), Cursor: cursor}); err != nil {
				return 0, "", err
			}
		}
		hints.add(res.Cacheable)
		for _, t := range res.Tools {
			defs = append(defs, toolDef(t))
		}
		return len(defs), res.NextCursor, nil
	})
	if err != nil {
		if errors.Is(err, ErrListTooLong) {
			return nil, events.CacheHints{}, err
		}
		if ctx.Err() == nil && errors.Is(lctx.Err(), context.DeadlineExceeded) {
			return nil, events.CacheHints{}, &ServerError{Server: s.name, Op: OpList, Err: &scrubbedError{
				msg: fmt.Sprintf("Listing tools of MCP server %q timed out after %dms", s.name, s.timeout.Milliseconds()), cause: ErrTimeout}}
		}
		return nil, events.CacheHints{}, &ServerError{Server: s.name, Op: OpList, Err: &scrubbedError{
			msg: fmt.Sprintf("MCP server %q: tools/list: %s", s.name, lc.res.ScrubText(err.Error())), cause: err}}
	}
	return defs, hints.hints(lc), m.takeList(s, len(defs))
}

// takeList counts a complete list of n tools of s towards the session's
// tools, or returns the error of a list that would make them more than
// Options.MaxSessionTools.
func (m *Manager) takeList(s *server, n int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	others := 0
	for name, c := range m.listSizes {
		switch {
		case m.servers[name] == nil:
			delete(m.listSizes, name) // gone: its tools left the session
		case name != s.name:
			others += c
		}
	}
	if others+n > m.opts.MaxSessionTools {
		return listTooLong(s.name, "tools/list", fmt.Sprintf("its %d tools and the other servers' %d would be more than the session's %d tools (manager Options.MaxSessionTools)",
			n, others, m.opts.MaxSessionTools))
	}
	m.listSizes[s.name] = n
	return nil
}

// paginate fetches the pages of one list of s: page requests the page at
// cursor and returns how many items the list holds with it and the next
// cursor ("" after the last page). It stops with an [ErrListTooLong] error
// at the first page past Options.MaxListPages or the first page that
// makes the list hold more than Options.MaxListTools items (of kind
// what), and with page's error.
func (m *Manager) paginate(ctx context.Context, s *server, method, what string, page func(ctx context.Context, cursor string) (int, string, error)) error {
	cursor := ""
	for pages := 1; ; pages++ {
		items, next, err := page(ctx, cursor)
		if err != nil {
			return err
		}
		if items > m.opts.MaxListTools {
			return listTooLong(s.name, method, fmt.Sprintf("more than %d %s in one list (manager Options.MaxListTools)", m.opts.MaxListTools, what))
		}
		if next == "" {
			return nil
		}
		if pages == m.opts.MaxListPages {
			return listTooLong(s.name, method, fmt.Sprintf("more than %d pages in one list (manager Options.MaxListPages)", m.opts.MaxListPages))
		}
		cursor = next
	}
}

// listTooLong returns the error of a list of server over a bound.
func listTooLong(server, method, why string) error {
	return &ServerError{Server: server, Op: OpList, Err: &scrubbedError{
		msg: fmt.Sprintf("MCP server %q: %s: %s; the list was not taken", server, method, why), cause: ErrListTooLong}}
}
