package transport

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcplife/mcplife/events"
)

// origin is the scheme, host and port of a URL, compared as a browser
// compares origins: scheme and host case-insensitively, with an omitted
// port spelled out as the scheme's default.
type origin struct {
	scheme, host, port string
}

func originOf(u *url.URL) origin {
	o := origin{scheme: strings.ToLower(u.Scheme), host: strings.ToLower(u.Hostname()), port: u.Port()}
	if o.port == "" {
		o.port = defaultPort(o.scheme)
	}
	return o
}

func defaultPort(scheme string) string {
	switch scheme {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// String returns the origin as scheme://host[:port], without a default
// port.
func (o origin) String() string {
	if o.port == "" || o.port == defaultPort(o.scheme) {
		if strings.Contains(o.host, ":") {
			return o.scheme + "://[" + o.host + "]"
		}
		return o.scheme + "://" + o.host
	}
	return o.scheme + "://" + net.JoinHostPort(o.host, o.port)
}

// originTransport confines a server's configured headers, and its OAuth
// bearer token, to the server's configured origin. The headers are added
// below [http.Client]'s redirect handling, so they must be added per
// request: a request to any other origin (a redirect target elsewhere, or
// a legacy SSE message endpoint elsewhere) is sent without them. The
// token is set above it (by the go-sdk's streamable transport), and the
// client carries it over to a redirect target on the same host at any
// port or scheme, or on a subdomain; it is removed from every request to
// another origin.
//
// With refuseOther set (legacy SSE), a request that was addressed to
// another origin in the first place, not reached by a redirect, fails with
// a [*crossOriginError]: the only such request is a POST to a message
// endpoint that the server's endpoint event placed on another origin.
type originTransport struct {
	base        http.RoundTripper
	server      string
	configured  *url.URL
	origin      origin
	headers     map[string]string
	refuseOther bool
}

func (t *originTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if originOf(r.URL) != t.origin {
		if t.refuseOther && r.Response == nil {
			if r.Body != nil {
				r.Body.Close() // a RoundTripper closes the body, also on errors
			}
			return nil, &crossOriginError{server: t.server, endpoint: r.URL, configured: t.configured}
		}
		if r.Header.Get("Authorization") != "" {
			r = r.Clone(r.Context())
			r.Header.Del("Authorization")
		}
		return t.base.RoundTrip(r)
	}
	if len(t.headers) == 0 {
		return t.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.base.RoundTrip(r)
}

// crossOriginError is the refusal of a legacy SSE server's message
// endpoint on another origin than the server's configured URL.
type crossOriginError struct {
	server               string
	endpoint, configured *url.URL
}

func (e *crossOriginError) Error() string {
	return fmt.Sprintf("MCP server %q: refusing its SSE message endpoint %s: its origin %s is not the configured origin %s",
		e.server, events.RedactURL(e.endpoint.String()), originOf(e.endpoint), originOf(e.configured))
}
