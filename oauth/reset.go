package oauth

import (
	"errors"
	"net/http"
	"net/http/httptrace"
	"syscall"
)

// resetRetry is the transport below the authorizer's own requests
// (metadata, registration, token, revocation). A server may close an
// idle keep-alive connection while the user is in the browser; a token
// request written on it then fails with "connection reset by peer".
// A request that failed so on a reused connection is sent once more, on
// a new connection, when its body can be read again.
type resetRetry struct{ base http.RoundTripper }

func (t *resetRetry) RoundTrip(r *http.Request) (*http.Response, error) {
	var reused bool
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
	resp, err := t.base.RoundTrip(r.WithContext(httptrace.WithClientTrace(r.Context(), trace)))
	if err == nil || !reused || !errors.Is(err, syscall.ECONNRESET) || r.Context().Err() != nil {
		return resp, err
	}
	again := r.Clone(r.Context())
	if r.Body != nil && r.Body != http.NoBody {
		if r.GetBody == nil {
			return resp, err
		}
		body, berr := r.GetBody()
		if berr != nil {
			return resp, err
		}
		again.Body = body
	}
	closeIdle(t.base)
	return t.base.RoundTrip(again)
}

// CloseIdleConnections closes the idle connections of the transport
// below, so that [http.Client.CloseIdleConnections] reaches them.
func (t *resetRetry) CloseIdleConnections() { closeIdle(t.base) }

// CloseIdleConnections closes the idle connections of the transport
// below.
func (t *sameOriginIssuer) CloseIdleConnections() { closeIdle(t.base) }

func closeIdle(rt http.RoundTripper) {
	if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
