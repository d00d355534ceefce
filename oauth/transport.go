package oauth

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// Transport returns an http.RoundTripper that authorizes every request
// through base with h, as the go-sdk's streamable HTTP transport does
// with its OAuthHandler: it sends h's token, and on a 401 or 403 asks h
// (a refresh, a client-credentials grant, a login or a [*NeedsAuthError])
// and sends the request once more. It is for clients that take an HTTP
// client but no OAuth handler: the go-sdk's legacy HTTP+SSE transport.
func Transport(base http.RoundTripper, h auth.OAuthHandler) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &authTransport{base: base, h: h}
}

type authTransport struct {
	base http.RoundTripper
	h    auth.OAuthHandler
}

func (t *authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.send(r, r.Body)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	if err := t.h.Authorize(r.Context(), r, resp); err != nil { // Authorize closes resp.Body
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
	return t.send(r, body)
}

// send sends a copy of r with body and the handler's current token.
func (t *authTransport) send(r *http.Request, body io.ReadCloser) (*http.Response, error) {
	req := r.Clone(r.Context())
	req.Body = body
	ts, err := t.h.TokenSource(r.Context())
	if err != nil {
		return nil, err
	}
	if ts != nil {
		tok, err := ts.Token()
		var rerr *oauth2.RetrieveError
		switch {
		case err == nil && tok != nil:
			tok.SetAuthHeader(req)
		case err != nil && !(errors.As(err, &rerr) && rerr.ErrorCode == "invalid_grant"):
			return nil, fmt.Errorf("oauth: token: %w", err)
		}
		// An invalid grant (a refresh token that expired for good) goes
		// without a token: the server's 401 then asks the handler.
	}
	return t.base.RoundTrip(req)
}
