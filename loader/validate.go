package loader

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcplife/mcplife/events"
)

// ValidName reports whether name is a valid server name, that is, matches
// ^[A-Za-z0-9_.:-]{1,100}$.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > 100 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

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

// Validate checks a server configuration and returns nil or an error whose
// text is every problem found, joined with "; ":
//
//	Server "<n>": both "command" and "url" are set - server should be either stdio (command) OR http/sse (url), not both
//	Server "<n>": stdio server requires "command" field
//	Server "<n>": <http|sse> server requires "url" field
//	Server "<n>": unknown server type "<t>"
//
// plus a message for an invalid name and for a negative timeout. A missing
// type is inferred: command means stdio, else url means http.
func Validate(cfg events.ServerConfig) error {
	msgs := validate(cfg, nil)
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}

// validate returns the validation messages for cfg, after the mapping
// problems (already without prefix).
func validate(cfg events.ServerConfig, problems []string) []string {
	n := cfg.Name
	prefix := fmt.Sprintf("Server %q: ", n)
	var msgs []string
	if !ValidName(n) {
		msgs = append(msgs, prefix+`invalid name: use 1 to 100 letters, digits, "_", ".", ":" or "-"`)
	}
	for _, p := range problems {
		msgs = append(msgs, prefix+p)
	}
	t := NormalizeType(cfg.Type)
	if t == "" {
		t = cfg.Transport()
	}
	if cfg.Command != "" && cfg.URL != "" {
		msgs = append(msgs, prefix+`both "command" and "url" are set - server should be either stdio (command) OR http/sse (url), not both`)
	}
	switch t {
	case events.TransportStdio:
		if cfg.Command == "" {
			msgs = append(msgs, prefix+`stdio server requires "command" field`)
		}
	case events.TransportHTTP, events.TransportSSE:
		if cfg.URL == "" {
			msgs = append(msgs, prefix+t+` server requires "url" field`)
		}
	default:
		msgs = append(msgs, fmt.Sprintf("%sunknown server type %q", prefix, cfg.Type))
	}
	if cfg.TimeoutMs != nil && *cfg.TimeoutMs < 0 {
		msgs = append(msgs, prefix+`"timeout" must not be negative`)
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
		if cfg.URL == "" {
			break
		}
		raw, ok := trial(cfg.URL)
		if !ok {
			break
		}
		shown := events.RedactURL(cfg.URL)
		u, err := url.Parse(raw)
		switch {
		case err != nil:
			msgs = append(msgs, fmt.Sprintf(`%s"url" %q is not a valid URL`, prefix, shown))
		case u.Scheme != "http" && u.Scheme != "https":
			msgs = append(msgs, fmt.Sprintf(`%s"url" %q must start with http:// or https://`, prefix, shown))
		case u.Host == "":
			msgs = append(msgs, fmt.Sprintf(`%s"url" %q has no host`, prefix, shown))
		}
	}
	return msgs
}
