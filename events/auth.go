package events

import "time"

// Events of OAuth authorization at remote servers. None of them carries a
// token, a code, a client secret or a key: only who, which authorization
// server, which scopes and until when.

// Type strings of the authorization events. They are part of the stored
// format: never change one.
const (
	TypeAuthRequired  = "AuthRequired"
	TypeAuthCompleted = "AuthCompleted"
	TypeAuthFailed    = "AuthFailed"
)

// OutcomeNeedsAuth is the gate outcome of a server that answered its
// connect with 401 and has no usable token: it does not hold the gate up
// and waits for a login.
const OutcomeNeedsAuth Outcome = "needs-auth"

// AuthRequired is recorded when a server refused the connection for want
// of authorization and no stored token (or refresh) could satisfy it.
// Issuer and Scopes are what the server's metadata advertised (the
// authorization server's issuer; the scopes of the challenge, else the
// protected resource's scopes_supported). Login names the command that
// logs in, for hosts that cannot run the browser flow themselves.
type AuthRequired struct {
	Server string   `json:"server"`
	Issuer string   `json:"issuer,omitempty"`
	Scopes []string `json:"scopes,omitempty"`
	Login  string   `json:"login,omitempty"`
}

// AuthCompleted is recorded when a login (authorization code, or client
// credentials) obtained a token for the server. ExpiresAt is the access
// token's expiry (zero when the server gave none).
type AuthCompleted struct {
	Server    string    `json:"server"`
	Issuer    string    `json:"issuer,omitempty"`
	Scopes    []string  `json:"scopes,omitempty"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// Grant is "authorization_code" or "client_credentials".
	Grant string `json:"grant,omitempty"`
}

// AuthFailed is recorded when a login or a token refresh failed. Error is
// scrubbed of every token, code and secret.
type AuthFailed struct {
	Server string `json:"server"`
	Error  string `json:"error"`
}

func (*AuthRequired) Type() string  { return TypeAuthRequired }
func (*AuthCompleted) Type() string { return TypeAuthCompleted }
func (*AuthFailed) Type() string    { return TypeAuthFailed }

func (e *AuthRequired) ServerName() string  { return e.Server }
func (e *AuthCompleted) ServerName() string { return e.Server }
func (e *AuthFailed) ServerName() string    { return e.Server }
