package oauth

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// Transport returns an http.RoundTripper that authorizes every request
// through base with h, as the go-sdk's streamable HTTP transport does
// with its OAuthHandler: it sends h's token, and on a 401 or 403 asks h
// (a refresh, a client-credentials grant, a login or a [*NeedsAuthError])
// and sends the request once more. It is for clients that take an HTTP
// client but no OAuth handler: the go-sdk's legacy HTTP+SSE transport.
//
// The token goes only to the origin (scheme, host and port) of the
// resource: the server URL of a handler from [Authorizer.Handler], else
// the URL of the request that started the redirect chain. A request to
// any other origin, a redirect target or a message endpoint elsewhere, is
// sent through base without it (and without an Authorization header).
func Transport(base http.RoundTripper, h auth.OAuthHandler) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	t := &authTransport{base: base, h: h}
	if ours, ok := h.(*handler); ok {
		t.resource, _ = url.Parse(ours.url)
	}
	return t
}

type authTransport struct {
	base http.RoundTripper
	h    auth.OAuthHandler
	// resource is the URL whose origin gets the token; nil: the origin of
	// each redirect chain's first request.
	resource *url.URL
}

// onResource reports whether r goes to the origin the token is for.
func (t *authTransport) onResource(r *http.Request) bool {
	if t.resource != nil {
		return sameOrigin(r.URL, t.resource)
	}
	first := r
	for first.Response != nil && first.Response.Request != nil {
		first = first.Response.Request
	}
	return sameOrigin(r.URL, first.URL)
}

func (t *authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !t.onResource(r) {
		if r.Header.Get("Authorization") != "" {
			r = r.Clone(r.Context())
			r.Header.Del("Authorization")
		}
		return t.base.RoundTrip(r)
	}
	resp, sent, err := t.send(r, r.Body)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	// The handler sees the request as it was sent, with the token it
	// carried.
	if err := t.h.Authorize(r.Context(), sent, resp); err != nil { // Authorize closes resp.Body
		return nil, err
	}
	var body io.ReadCloser = http.NoBody
	if r.Body != nil && r.Body != http.NoBody {
		if r.GetBody == nil {
			return nil, errors.New("oauth: the request's body cannot be sent again after authorization")
		}
		b, err := r.GetBody()
		if err != nil {
			return nil, err
		}
		body = b
	}
	resp, _, err = t.send(r, body)
	return resp, err
}

// send sends a copy of r with body and the handler's current token, and
// returns the copy sent.
func (t *authTransport) send(r *http.Request, body io.ReadCloser) (*http.Response, *http.Request, error) {
	req := r.Clone(r.Context())
	req.Body = body
	ts, err := t.h.TokenSource(r.Context())
	if err != nil {
		return nil, nil, err
	}
	if ts != nil {
		tok, err := ts.Token()
		var rerr *oauth2.RetrieveError
		switch {
		case err == nil && tok != nil:
			tok.SetAuthHeader(req)
		case err != nil && !(errors.As(err, &rerr) && rerr.ErrorCode == "invalid_grant"):
			return nil, nil, fmt.Errorf("oauth: token: %w", err)
		}
		// An invalid grant (a refresh token that expired for good) goes
		// without a token: the server's 401 then asks the handler.
	}
	resp, err := t.base.RoundTrip(req)
	return resp, req, err
}
