package oauth

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
)

// sameOriginIssuer is the transport of metadata requests. RFC 8414 §3.3
// wants the issuer of an authorization server's metadata to equal the
// issuer URL it was fetched for; some servers with a path (tenants) name
// their origin instead. The go-sdk refuses those; this transport accepts
// them when the metadata was fetched from the issuer's own well-known
// location and names an issuer of the same origin, by rewriting the
// issuer to the URL asked for (and logging it). Any other mismatch still
// fails as before.
type sameOriginIssuer struct {
	base http.RoundTripper
	log  *slog.Logger
}

// maxMetadata bounds the metadata documents read here.
const maxMetadata = 1 << 20

func (t *sameOriginIssuer) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusOK || r.Method != http.MethodGet {
		return resp, err
	}
	want, ok := issuerFor(r.URL)
	if !ok {
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var doc map[string]any
	if json.Unmarshal(body, &doc) != nil {
		return resp, nil
	}
	got, _ := doc["issuer"].(string)
	gu, err := url.Parse(got)
	if got == "" || err != nil || strings.TrimSuffix(got, "/") == strings.TrimSuffix(want, "/") ||
		gu.Scheme != r.URL.Scheme || gu.Host != r.URL.Host {
		return resp, nil
	}
	t.log.Warn("OAuth authorization server names its origin as issuer; accepted for the issuer URL it was fetched for", "issuer", got, "for", want)
	doc["issuer"] = want
	fixed, err := json.Marshal(doc)
	if err != nil {
		return resp, nil
	}
	resp.Body = io.NopCloser(bytes.NewReader(fixed))
	resp.ContentLength = int64(len(fixed))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// issuerFor returns the issuer URL whose authorization server metadata
// lives at u (path insertion or, for OpenID Connect, path appending).
func issuerFor(u *url.URL) (string, bool) {
	origin := u.Scheme + "://" + u.Host
	for _, wk := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		if rest, ok := strings.CutPrefix(u.Path, wk); ok && (rest == "" || strings.HasPrefix(rest, "/")) {
			return origin + rest, true
		}
	}
	if p, ok := strings.CutSuffix(u.Path, "/.well-known/openid-configuration"); ok {
		return origin + p, true
	}
	return "", false
}
