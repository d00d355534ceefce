package oauth

import (
	"net/http"
	"net/url"
	"strings"
)

// sameOrigin reports whether a and b have one origin: scheme, host and
// port, the scheme and host compared case-insensitively and an omitted
// port taken as the scheme's default. A bearer token goes only to the
// origin of the resource it was issued for, its audience; Go's redirect
// rule would forward it to the same host on any port or scheme, and to
// any subdomain.
func sameOrigin(a, b *url.URL) bool {
	return a != nil && b != nil && strings.EqualFold(a.Scheme, b.Scheme) &&
		strings.EqualFold(a.Hostname(), b.Hostname()) && portOf(a) == portOf(b)
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// headerTransport confines a connection's credentials to the resource's
// origin: it sets the configured headers on each request to that origin,
// and removes Authorization (a bearer token an [http.Client] carried
// over from a redirected request) from each request to any other. It
// sits below the client's redirect handling, so it sees every hop.
type headerTransport struct {
	base     http.RoundTripper
	resource *url.URL // nil: no request is on the resource's origin
	headers  map[string]string
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	switch {
	case !sameOrigin(r.URL, t.resource):
		if r.Header.Get("Authorization") != "" {
			r = r.Clone(r.Context())
			r.Header.Del("Authorization")
		}
	case len(t.headers) > 0:
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(r)
}
