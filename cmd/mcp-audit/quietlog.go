package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// Log messages of the library that repeat what run prints on stdout: the
// gate line and the tables carry each load error, failed connect and
// drop, and the discovery warnings, so on stderr they would be said
// twice (a broken config file three times, by the loader, the session
// and the gate line).
var shownByRun = map[string]bool{
	"mcp config file skipped":                        true, // loader: a config file that did not read
	msgDiscoveryWarning:                              true, // loader: a discovery warning, printed under the gate line
	"MCP tool load failed":                           true, // session: each load error
	"MCP server failed to connect":                   true, // manager: a failed connect
	"MCP server disconnected":                        true, // manager: a drop; the change line says it
	"MCP server keeps failing; reconnecting stopped": true, // manager: the change line reads failed
}

// shownBySearch: search prints no table, so only the loader's line on a
// broken file goes, which the session's load error repeats.
var shownBySearch = map[string]bool{"mcp config file skipped": true}

const (
	msgDiscoveryWarning = "mcp config"
	msgValueOmitted     = "MCP config value omitted"
)

// skipShown is a slog.Handler that drops the records whose message is in
// skip and passes the others on. It also drops a "value omitted" record
// of a connect when a dropped discovery warning already named that
// server's value ("server "a": env.K: …"): the gate line shows that
// warning.
type skipShown struct {
	slog.Handler
	skip  map[string]bool
	attrs []slog.Attr // from WithAttrs, for matching
	seen  *seenWarnings
}

type seenWarnings struct {
	mu   sync.Mutex
	list []string
}

func newSkipShown(h slog.Handler, skip map[string]bool) skipShown {
	return skipShown{Handler: h, skip: skip, seen: &seenWarnings{}}
}

func (h skipShown) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == msgDiscoveryWarning && h.skip[r.Message] {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "warning" {
				h.seen.mu.Lock()
				h.seen.list = append(h.seen.list, a.Value.String())
				h.seen.mu.Unlock()
			}
			return true
		})
	}
	if h.skip[r.Message] || (r.Message == msgValueOmitted && h.warned(r)) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

// warned reports whether a discovery warning named the server and value
// of the "value omitted" record r.
func (h skipShown) warned(r slog.Record) bool {
	var server, value string
	visit := func(a slog.Attr) bool {
		switch a.Key {
		case "server":
			server = a.Value.String()
		case "env":
			value = "env." + a.Value.String()
		case "header":
			value = "headers." + a.Value.String()
		}
		return true
	}
	for _, a := range h.attrs {
		visit(a)
	}
	r.Attrs(visit)
	if server == "" || value == "" {
		return false
	}
	needle := fmt.Sprintf("server %q: %s:", server, value)
	h.seen.mu.Lock()
	defer h.seen.mu.Unlock()
	for _, w := range h.seen.list {
		if strings.Contains(w, needle) {
			return true
		}
	}
	return false
}

func (h skipShown) WithAttrs(attrs []slog.Attr) slog.Handler {
	return skipShown{Handler: h.Handler.WithAttrs(attrs), skip: h.skip, attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], attrs...), seen: h.seen}
}

func (h skipShown) WithGroup(name string) slog.Handler {
	return skipShown{Handler: h.Handler.WithGroup(name), skip: h.skip, attrs: h.attrs, seen: h.seen}
}
