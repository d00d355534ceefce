package main

import (
	"fmt"
	"strings"

	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/session"
)

// toolByName returns the server and original name of the session's tool
// whose exposed name (mcp_<server>_<tool>, as the tables show it) is
// name, held back by the tool budget or not; "" when there is none.
func toolByName(s *session.Session, name string) (server, tool string) {
	for _, t := range s.Manager().Tools() {
		if t.Name == name {
			return t.Server, t.Original
		}
	}
	return "", ""
}

// strictCheck is `run --once --strict`: errCheckFailed, with a line on
// stderr saying which, when a server is not connected after settling or
// a config file could not be read.
func strictCheck(g *globals, view *projector.ToolView, res *session.LoadResult) error {
	servers := view.Servers()
	var bad []string
	for _, st := range servers {
		if status := serverStatus(st); status != projector.StatusConnected {
			bad = append(bad, escapeLine(st.Name)+" "+string(status))
		}
	}
	files := 0
	for _, e := range res.Errors {
		if !strings.HasPrefix(e.Path, "mcp:") {
			files++
		}
	}
	if len(bad) == 0 && files == 0 {
		return nil
	}
	if !g.json {
		var parts []string
		if len(bad) > 0 {
			parts = append(parts, fmt.Sprintf("%d of %d %s not connected (%s)", len(bad), len(servers), plural(len(servers), "server", "servers"), strings.Join(bad, ", ")))
		}
		if files > 0 {
			parts = append(parts, fmt.Sprintf("%d config %s could not be read", files, plural(files, "file", "files")))
		}
		fmt.Fprintf(g.stderr, "mcp-audit: --strict: %s\n", strings.Join(parts, "; "))
	}
	return errCheckFailed
}

// plural picks the singular for n == 1.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
