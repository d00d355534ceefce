package loader

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcplife/mcplife/events"
)

// NormalizeType returns the canonical transport type for a configured
// "type": "streamable-http", "streamableHttp" and "streamable_http" become
// "http"; other values are returned unchanged.
func NormalizeType(t string) string {
	switch t {
	case "streamable-http", "streamableHttp", "streamable_http":
		return events.TransportHTTP
	}
	return t
}

// validate returns the validation messages for cfg: those of
// [events.ServerConfig.Validate], the one validation the manager applies
// too, with problems (the mapping's, given without prefix) after the
// name's and before the transport's.
func validate(cfg events.ServerConfig, problems []string) []string {
	var found []string
	if ce, ok := errors.AsType[*events.ConfigError](cfg.Validate()); ok {
		found = ce.Problems
	}
	at := 0
	if !events.ValidServerName(cfg.Name) {
		at = 1 // the name's problem comes first
	}
	found = slices.Insert(found, at, problems...)
	prefix := fmt.Sprintf("Server %q: ", cfg.Name)
	msgs := make([]string, len(found))
	for i, p := range found {
		msgs[i] = prefix + p
	}
	return msgs
}

// checkPlaces checks what validate cannot see in the entry alone: that a
// stdio server's working directory exists (relative to cwd) and that an
// http or sse server's URL is an http(s) URL with a host. References are
// expanded for the check only (an unset one skips it; discovery warned
// about it); messages quote the value as written, never expanded.
func checkPlaces(cfg events.ServerConfig, lookup EnvLookup, cwd string) []string {
	prefix := fmt.Sprintf("Server %q: ", cfg.Name)
	trial := func(v string) (string, bool) {
		x := expandRefs(v, lookup, nil)
		return x, !strings.Contains(x, "${")
	}
	var msgs []string
	switch cfg.Transport() {
	case events.TransportStdio:
		if cfg.Cwd == "" || cfg.Command == "" {
			break
		}
		dir, ok := trial(cfg.Cwd)
		if !ok {
			break
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(cwd, dir)
		}
		fi, err := os.Stat(dir)
		switch {
		case errors.Is(err, os.ErrNotExist):
			msgs = append(msgs, fmt.Sprintf(`%s"cwd" %q does not exist`, prefix, cfg.Cwd))
		case err != nil:
			msgs = append(msgs, fmt.Sprintf(`%s"cwd" %q cannot be used: %v`, prefix, cfg.Cwd, unwrapPathError(err)))
		case !fi.IsDir():
			msgs = append(msgs, fmt.Sprintf(`%s"cwd" %q is not a directory`, prefix, cfg.Cwd))
		}
	case events.TransportHTTP, events.TransportSSE:
		if !strings.Contains(cfg.URL, "${") {
			break // checked by validate
		}
		raw, ok := trial(cfg.URL)
		if !ok {
			break
		}
		if ue, ok := errors.AsType[*events.URLError](events.CheckURL(raw)); ok {
			ue.URL = cfg.URL // quote it as written, never expanded
			msgs = append(msgs, prefix+ue.Error())
		}
	}
	return msgs
}
