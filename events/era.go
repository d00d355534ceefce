package events

import "encoding/json"

// Events of the protocol era: which revision of MCP a server speaks, and
// the cache hints of protocol 2026-07-28.

// TypeServerEraDetected is the type string of [ServerEraDetected]. It is
// part of the stored format: never change it.
const TypeServerEraDetected = "ServerEraDetected"

// Era is the generation of the MCP protocol a server speaks.
type Era string

// Eras of [ServerEraDetected].
const (
	// EraModern: the server answers server/discover and speaks the
	// stateless protocol (2026-07-28 and later), with no initialize.
	EraModern Era = "modern"
	// EraLegacy: the server knows only the initialize handshake
	// (2025-11-25 and earlier).
	EraLegacy Era = "legacy"
)

// CacheScopePrivate is the cacheScope of a list or discover result meant
// for the user it was listed for only; "public" (or none) may be shared.
const CacheScopePrivate = "private"

// ServerEraDetected is recorded when a probe decided the era of a server
// under a config (ConfigHash), or when its answer changed: ProtocolVersion
// is the version the connection uses, SupportedVersions what the server
// said it supports (a modern server's discover result), TTLMs and
// CacheScope the discover result's cache hints (how long a connect may
// reuse it without asking again, 0 meaning not at all), and Discover the
// rest of that result. A host that finds a fresh record of a modern
// server connects without a probe on the wire; a legacy record makes it
// initialize directly.
type ServerEraDetected struct {
	Server            string        `json:"server"`
	ConfigHash        string        `json:"configHash"`
	Era               Era           `json:"era"`
	ProtocolVersion   string        `json:"protocolVersion"`
	SupportedVersions []string      `json:"supportedVersions,omitempty"`
	TTLMs             int64         `json:"ttlMs,omitempty"`
	CacheScope        string        `json:"cacheScope,omitempty"`
	Discover          *DiscoverInfo `json:"discover,omitempty"`
}

// DiscoverInfo is what a modern server's server/discover result said of
// it, scrubbed of the connection's secrets as ServerConnected is.
type DiscoverInfo struct {
	Capabilities json.RawMessage `json:"capabilities,omitempty"`
	PeerName     string          `json:"peerName,omitempty"`
	PeerVersion  string          `json:"peerVersion,omitempty"`
	Instructions string          `json:"instructions,omitempty"`
}

// CacheHints are the cache hints of a list result under protocol
// 2026-07-28, recorded with [ToolsListed], [ResourcesListed] and
// [PromptsListed]: TTLMs is how long the list may be reused (absent or 0:
// not at all, it must be fetched again before it is trusted), CacheScope
// "public" or "private" (for the user it was listed for only), and
// AuthContext, for a private list, whose authorization it was listed
// under (the issuer and a hash of the subject; never a token), so it is
// never served to another user. All are absent for servers of the legacy
// era and in events recorded before them.
type CacheHints struct {
	TTLMs       int64  `json:"ttlMs,omitempty"`
	CacheScope  string `json:"cacheScope,omitempty"`
	AuthContext string `json:"authContext,omitempty"`
}

// Private reports whether the hints scope the list to one user.
func (h CacheHints) Private() bool { return h.CacheScope == CacheScopePrivate }

func (*ServerEraDetected) Type() string         { return TypeServerEraDetected }
func (e *ServerEraDetected) ServerName() string { return e.Server }
