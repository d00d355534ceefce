package loader

import (
	"math"
	"strings"

	"github.com/mcplife/mcplife/events"
)

// oauthFields names the keys of one format's "oauth" object that map onto
// [events.OAuthConfig]; an empty name means the format has no such key.
type oauthFields struct {
	clientID, clientSecret, callbackPort, scopes, scope string
	all                                                 bool // every field of OAuthConfig (the native format)
}

// OAuth settings of the formats that define them.
var (
	// The native format: every field of events.OAuthConfig.
	nativeOAuth = oauthFields{clientID: "clientId", clientSecret: "clientSecret", callbackPort: "callbackPort", scopes: "scopes", all: true}
	// Claude Code: oauth.clientId and oauth.callbackPort (its client
	// secret lives in the system keychain, not in the file).
	claudeOAuth = oauthFields{clientID: "clientId", callbackPort: "callbackPort"}
	// Gemini CLI: oauth.clientId, oauth.clientSecret and oauth.scopes.
	geminiOAuth = oauthFields{clientID: "clientId", clientSecret: "clientSecret", scopes: "scopes"}
	// OpenCode: oauth.clientId, oauth.clientSecret and oauth.scope (one
	// space-separated string); "oauth": false turns OAuth off, which
	// here means no settings.
	openCodeOAuth = oauthFields{clientID: "clientId", clientSecret: "clientSecret", scope: "scope"}
)

// mapOAuth reads the entry's "oauth" object as the format defines it and
// returns nil when there is none (or it holds nothing mapped). A field of
// the wrong type is a problem of the entry, named "oauth.<field>".
func mapOAuth(f fields, which oauthFields) *events.OAuthConfig {
	v, ok := f.m["oauth"]
	if !ok || v == nil {
		return nil
	}
	if b, isBool := v.(bool); isBool && !b {
		return nil
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		f.bad("oauth", "an object")
		return nil
	}
	sub := fields{m: obj, problems: new([]string)}
	o := &events.OAuthConfig{}
	if which.clientID != "" {
		o.ClientID = sub.str(which.clientID)
	}
	if which.clientSecret != "" {
		o.ClientSecret = sub.str(which.clientSecret)
	}
	if which.callbackPort != "" {
		if n, ok := sub.number(which.callbackPort); ok {
			if n < 1 || n > 65535 || n != math.Trunc(n) {
				sub.bad(which.callbackPort, "a port number (1-65535)")
			} else {
				o.CallbackPort = int(n)
			}
		}
	}
	if which.scopes != "" {
		o.Scopes = sub.strs(which.scopes)
	}
	if which.scope != "" {
		o.Scopes = strings.Fields(sub.str(which.scope))
	}
	if which.all {
		o.ClientMetadataURL = sub.str("clientMetadataUrl")
		o.Grant = sub.str("grant")
		switch o.Grant {
		case "", events.GrantAuthorizationCode, events.GrantClientCredentials:
		default:
			sub.bad("grant", `"authorization_code" or "client_credentials"`)
		}
		o.PrivateKey = sub.str("privateKey")
		o.SigningAlgorithm = sub.str("signingAlgorithm")
	}
	for _, p := range *sub.problems {
		*f.problems = append(*f.problems, `"oauth".`+p)
	}
	if o.ClientID == "" && o.ClientSecret == "" && o.CallbackPort == 0 && len(o.Scopes) == 0 && o.ClientMetadataURL == "" &&
		o.Grant == "" && o.PrivateKey == "" && o.SigningAlgorithm == "" {
		return nil
	}
	return o
}
