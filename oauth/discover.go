package oauth

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// metadata is what discovery found for one protected server: its
// protected-resource metadata (RFC 9728, or the 2025-03-26 fallback that
// makes the server's origin its authorization server) and the
// authorization server's metadata (RFC 8414 or OpenID Connect discovery,
// or the 2025-03-26 default endpoints).
type metadata struct {
	prm        *oauthex.ProtectedResourceMetadata
	asm        *oauthex.AuthServerMeta
	challenges []oauthex.Challenge
}

// discover fetches the metadata of the server at serverURL that answered
// with the WWW-Authenticate challenges. It looks where the go-sdk's
// handlers look, in the same order (the challenge's resource_metadata,
// then the well-known path of the endpoint, then the root), so the
// servers see one sequence of requests.
func discover(ctx context.Context, c *http.Client, serverURL string, challenges []oauthex.Challenge) (*metadata, error) {
	md := &metadata{challenges: challenges}
	for _, u := range prmURLs(challengeParam(challenges, "resource_metadata"), serverURL) {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, u.url, u.resource, c)
		if err != nil || prm == nil {
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("protected resource metadata names no authorization server")
		}
		md.prm = prm
		break
	}
	if md.prm == nil {
		u, err := url.Parse(serverURL)
		if err != nil {
			return nil, fmt.Errorf("server URL: %v", err)
		}
		u.Path, u.RawQuery = "", ""
		md.prm = &oauthex.ProtectedResourceMetadata{AuthorizationServers: []string{u.String()}, Resource: serverURL}
	}
	as := md.prm.AuthorizationServers[0]
	asm, err := auth.GetAuthServerMetadata(ctx, as, c)
	if err != nil {
		return nil, fmt.Errorf("authorization server metadata: %w", err)
	}
	if asm == nil {
		asm = &oauthex.AuthServerMeta{
			Issuer: as, AuthorizationEndpoint: as + "/authorize", TokenEndpoint: as + "/token", RegistrationEndpoint: as + "/register",
		}
	}
	md.asm = asm
	return md, nil
}

// scopes returns the scopes to ask for: the challenge's, else the
// resource's scopes_supported.
func (md *metadata) scopes() []string {
	if s := challengeParam(md.challenges, "scope"); s != "" {
		return strings.Fields(s)
	}
	return md.prm.ScopesSupported
}

type prmURL struct{ url, resource string }

func prmURLs(fromChallenge, resource string) []prmURL {
	var out []prmURL
	if fromChallenge != "" {
		out = append(out, prmURL{fromChallenge, resource})
	}
	ru, err := url.Parse(resource)
	if err != nil {
		return out
	}
	mu := *ru
	mu.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(ru.Path, "/")
	out = append(out, prmURL{mu.String(), resource})
	mu.Path = "/.well-known/oauth-protected-resource"
	ru.Path = ""
	out = append(out, prmURL{mu.String(), ru.String()})
	return out
}

// challengeParam returns a parameter of the first Bearer challenge that
// has it.
func challengeParam(cs []oauthex.Challenge, name string) string {
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params[name] != "" {
			return c.Params[name]
		}
	}
	return ""
}

// challengesOf parses the WWW-Authenticate headers of resp; a header
// that does not parse counts as no challenge.
func challengesOf(resp *http.Response) []oauthex.Challenge {
	if resp == nil {
		return nil
	}
	cs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	return cs
}
