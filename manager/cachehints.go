package manager

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/oauth"
	"github.com/mcplife/mcplife/projector"
)

// Lists follow their TTL. Under protocol 2026-07-28 every list result
// carries ttlMs (how long it may be reused) and cacheScope (public, or
// private to the user it was listed for). The manager records them with
// each list (the events' CacheHints), the tool cache judges each entry's
// freshness by them, and a connection to such a server whose tool list
// is still fresh in the cache takes it from there instead of asking.

// carriesHints reports whether the lists of cs carry cache hints: the
// version the connection negotiated is of the modern era.
func carriesHints(cs *mcp.ClientSession) bool {
	init := cs.InitializeResult()
	return init != nil && modernEra(init.ProtocolVersion)
}

// hintsFold folds the cache hints of a list's pages into the list's: the
// smallest ttlMs of the pages (an absent one counts as 0), and cacheScope
// private when any page says so, else the first page's. off (a
// connection whose results carry no hints) leaves the hints empty.
type hintsFold struct {
	off   bool
	pages int
	h     events.CacheHints
}

// add folds one page's hints in.
func (f *hintsFold) add(c mcp.Cacheable) {
	if f.off {
		return
	}
	ttl := int64(max(c.TTLMs, 0))
	if f.pages == 0 {
		f.h.TTLMs, f.h.CacheScope = ttl, c.CacheScope
	} else {
		f.h.TTLMs = min(f.h.TTLMs, ttl)
	}
	if c.CacheScope == events.CacheScopePrivate {
		f.h.CacheScope = events.CacheScopePrivate
	}
	f.pages++
}

// hints returns the list's hints; a private list names the authorization
// context of lc, whose it is.
func (f *hintsFold) hints(lc *liveConn) events.CacheHints {
	h := f.h
	if h.Private() {
		h.AuthContext = lc.authContext
	}
	return h
}

// viewer is who s is for the tool cache: this host (the journal's host
// id, which it stamps on what it records) under the authorization context
// of s's connect. While that context is not known yet (an OAuth server
// whose token was not read yet) no private list matches it: only public
// lists are found.
func (m *Manager) viewer(s *server) projector.Viewer {
	m.mu.Lock()
	ac, known := s.authContext, s.authKnown
	m.mu.Unlock()
	if !known {
		ac = "\x00unknown"
	}
	return projector.Viewer{Host: m.j.Host(), AuthContext: ac}
}

// knownAuthContext tells s's record the authorization context of its
// connect.
func (m *Manager) knownAuthContext(s *server, ac string) {
	m.mu.Lock()
	s.authContext, s.authKnown = ac, true
	m.mu.Unlock()
}

// authContext returns the authorization context a connection to the
// (resolved) URL uses: that of the OAuth token stored for it, "" when
// none is stored or there is no token store.
func (m *Manager) authContext(ctx context.Context, url string) string {
	if m.auth.a == nil {
		return ""
	}
	e, err := m.auth.a.Store().Load(ctx, url)
	if err != nil {
		if !errors.Is(err, oauth.ErrNoToken) {
			m.log.Warn("OAuth token store unreadable", "err", err)
		}
		return ""
	}
	return authContextOf(e)
}

// authContextOf identifies the authorization of a stored token, without
// holding it or any secret: the issuer, a space, and the first 16 hex
// digits of the SHA-256 of a subject that stays the same across refreshes
// (the token's sub claim when the access token is a JWT, else the OAuth
// client and the issuer). "" for no entry.
func authContextOf(e *oauth.Entry) string {
	if e == nil || e.Token.AccessToken == "" {
		return ""
	}
	subject := "client\x00" + e.ClientID + "\x00" + e.Issuer
	if sub := jwtSubject(e.Token.AccessToken); sub != "" {
		subject = "sub\x00" + sub
	}
	sum := sha256.Sum256([]byte(subject))
	return e.Issuer + " " + hex.EncodeToString(sum[:8])
}

// jwtSubject returns the sub claim of token when it is a JWT, else "".
// The signature is not checked: the claim only names whose token it is,
// and the token came from the authorization server.
func jwtSubject(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return ""
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return ""
	}
	return claims.Sub
}

// freshTools returns the tool list the cache holds for s, lc's server,
// when lc may take it instead of a tools/list: the connection speaks a
// protocol with cache hints, and the list, visible to s's viewer, is still
// fresh by its own ttlMs. A list with a redacted tool name is not taken:
// the connection would not know the server's own name of that tool.
func (m *Manager) freshTools(s *server, lc *liveConn) (projector.Cached[[]events.ToolDef], bool) {
	if !carriesHints(lc.cs) {
		return projector.Cached[[]events.ToolDef]{}, false
	}
	c, ok := m.cache.LookupFor(m.viewer(s), s.name, s.hash, m.now())
	if !ok || !c.Fresh {
		return projector.Cached[[]events.ToolDef]{}, false
	}
	for _, d := range c.List {
		if strings.Contains(d.Name, events.Redacted) {
			return projector.Cached[[]events.ToolDef]{}, false
		}
	}
	return c, true
}
