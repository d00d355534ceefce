package main

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/mcplife/mcplife/projector"
)

// serverStatus is the status a server reads in every table and JSON
// object: failed, as the startup gate says, for a server whose latest
// connect attempt never reached initialize's end (its connect failed or
// its config was invalid), rather than the view's plain disconnected; a
// server that was connected and then went away stays disconnected.
func serverStatus(st projector.ServerState) projector.Status {
	if st.Status == projector.StatusDisconnected && st.Error != "" && st.ConnectedAt.IsZero() {
		return projector.StatusFailed
	}
	return st.Status
}

// reStartPrefix is the "start "COMMAND": " that a failed process start
// puts before its reason.
var reStartPrefix = regexp.MustCompile(`^start "(?:[^"\\]|\\.)*": `)

// errorCause is the first line of a server's error without what a table
// row already says: the `MCP server "NAME": connect: ` prefix and the
// `start "COMMAND": ` before a start's reason go; the reason stays.
func errorCause(server, msg string) string {
	msg = firstLine(msg)
	q := strconv.Quote(server)
	for _, p := range []string{"MCP server " + q + ": connect: ", "MCP server " + q + ": "} {
		if rest, ok := strings.CutPrefix(msg, p); ok {
			msg = rest
			break
		}
	}
	if rest, ok := strings.CutPrefix(msg, "Connection to MCP server "+q+" "); ok {
		msg = "connect " + rest // "connect timed out after 30000ms"
	}
	if rest, ok := strings.CutPrefix(msg, "Listing tools of MCP server "+q+" "); ok {
		msg = "tools/list " + rest
	}
	return reStartPrefix.ReplaceAllString(msg, "")
}
