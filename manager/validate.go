package manager

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/mcplife/mcplife/events"
)

// serverName is the pattern every server name must match.
var serverName = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,100}$`)

// validateConfig checks the name and the transport fields of cfg and
// returns one error whose message joins every problem with "; ", or nil.
// The messages are those of SPEC §2.2.
func validateConfig(name string, cfg events.ServerConfig) error {
	var parts []string
	if !serverName.MatchString(name) {
		parts = append(parts, fmt.Sprintf("Server %q: invalid server name (must match %s)", name, serverName))
	}
	if cfg.Command != "" && cfg.URL != "" {
		parts = append(parts, fmt.Sprintf(`Server %q: both "command" and "url" are set - server should be either stdio (command) OR http/sse (url), not both`, name))
	}
	switch t := cfg.Transport(); t {
	case events.TransportStdio:
		if cfg.Command == "" {
			parts = append(parts, fmt.Sprintf(`Server %q: stdio server requires "command" field`, name))
		}
	case events.TransportHTTP, events.TransportSSE:
		if cfg.URL == "" {
			parts = append(parts, fmt.Sprintf(`Server %q: %s server requires "url" field`, name, t))
		} else if !strings.Contains(cfg.URL, "${") {
			if err := checkURL(cfg.URL); err != nil {
				parts = append(parts, fmt.Sprintf(`Server %q: %v`, name, err))
			}
		}
	default:
		parts = append(parts, fmt.Sprintf(`Server %q: unknown server type %q`, name, t))
	}
	if len(parts) == 0 {
		return nil
	}
	return &ServerError{Server: name, Op: OpValidate, Err: &scrubbedError{msg: strings.Join(parts, "; "), cause: ErrInvalidConfig}}
}

// checkURL reports a server URL that cannot be connected: one that does
// not parse, or whose scheme is not http or https, or without a host. The
// message quotes the URL redacted.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf(`"url" %s is not a valid URL`, events.RedactURL(raw))
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf(`"url" %s must start with http:// or https://`, events.RedactURL(raw))
	case u.Host == "":
		return fmt.Errorf(`"url" %s has no host`, events.RedactURL(raw))
	}
	return nil
}
