// Package oauth authorizes mcplife at remote MCP servers that require
// OAuth, on the go-sdk's client-side auth packages.
//
// An [Authorizer] hands each HTTP connection an [auth.OAuthHandler]
// ([Authorizer.Handler]) that sends the stored token, refreshes it before
// it expires and once more when the server answers 401, and runs the
// client-credentials grant of machine-to-machine servers on its own. It
// never opens a browser for a connect: a server that needs a user's login
// fails the connect with a [*NeedsAuthError] naming the login command and
// what the server's metadata advertised (issuer, scopes).
//
// [Authorizer.Login] is the one place that opens a browser: the
// authorization code grant with PKCE (S256) and state, redirected to a
// loopback listener, with the client identified by a configured client
// id, else a Client ID Metadata Document where the server supports one,
// else dynamic client registration (remembered per authorization server).
// [Authorizer.Logout] deletes a server's token and revokes it where the
// authorization server has a revocation endpoint (RFC 7009).
//
// Tokens live in a [TokenStore]; the default is a 0600 JSON file,
// $XDG_CONFIG_HOME/mcplife/oauth.json ([DefaultStorePath]). No token,
// code, client secret or key is ever part of an error this package
// returns or of anything it logs.
//
// Example (runnable as the example of [Authorizer.Login]):
//
//	a, err := oauth.New(nil) // default file store, default browser opener
//	if err != nil {
//		return err // no home directory for the default store
//	}
//	res, err := a.Login(ctx, "tracker", cfg, nil) // opens the browser
//	if err != nil {
//		return err
//	}
//	fmt.Println(res.Scopes, res.ExpiresAt)
//	// Later connects send the stored token, refreshed as needed:
//	t := &mcp.StreamableClientTransport{Endpoint: cfg.URL, OAuthHandler: a.Handler("tracker", cfg, nil)}
package oauth
