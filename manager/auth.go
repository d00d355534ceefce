package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/manager/internal/conn"
	"github.com/mcplife/mcplife/manager/internal/transport"
	"github.com/mcplife/mcplife/oauth"
)

// ErrNeedsAuth: the server needs an OAuth login before it can connect
// (or before a call needing more scopes can go through). Errors of such
// servers wrap it and an [*oauth.NeedsAuthError], which names the login
// command, the issuer and the scopes.
var ErrNeedsAuth = errors.New("MCP server needs authorization")

// authState holds what the manager knows about OAuth beside the
// projection: the servers waiting for a login, with their configs.
type authState struct {
	mu      sync.Mutex
	waiting map[string]events.ServerConfig // server → config, unresolved
	// a authorizes remote servers; nil when none could be set up.
	a *oauth.Authorizer
}

// setUpAuth fills m.auth from the options: the given authorizer, else
// one on the default token store (none when there is no home directory).
func (m *Manager) setUpAuth() {
	m.auth.waiting = map[string]events.ServerConfig{}
	if m.opts.Auth.OAuth != nil {
		m.auth.a = m.opts.Auth.OAuth
		return
	}
	a, err := oauth.New(&oauth.Options{Log: m.log, ClientName: m.opts.Client.Name, ClientVersion: m.opts.Client.Version, ProtocolVersion: m.opts.ProtocolVersion})
	if err != nil {
		m.log.Warn("OAuth unavailable: no token store", "err", err)
		return
	}
	m.auth.a = a
}

// oauthHandler returns the OAuth handler of one connect of s to the
// resolved cfg: it sends the stored token, refreshes it and runs the
// client-credentials grant; a 401 it cannot answer fails the connect
// with an [*oauth.NeedsAuthError]. Step-ups open the browser only with
// Options.Auth.Interactive.
func (m *Manager) oauthHandler(s *server, cfg events.ServerConfig) auth.OAuthHandler {
	if m.auth.a == nil || (cfg.Transport() != events.TransportHTTP && cfg.Transport() != events.TransportSSE) {
		return nil
	}
	return m.auth.a.Handler(s.name, cfg, &oauth.HandlerOptions{
		Interactive: m.opts.Auth.Interactive,
		// Once the server is ready, a call that meets a 401 logs in
		// where the host may open the browser; the connect and its
		// first list end as needs-auth instead, for the host's login.
		LoginOnUnauthorized: func() bool {
			if !m.opts.Auth.Interactive {
				return false
			}
			return s.mach.State() == stReady // no m.mu: a call's transport asks
		},
		Authorized: func(r oauth.Result) {
			m.emitDeferred("", &events.AuthCompleted{Server: s.name, Issuer: r.Issuer, Scopes: r.Scopes, ExpiresAt: r.ExpiresAt, Grant: r.Grant})
		},
		Failed: func(err error) {
			m.emitDeferred("", &events.AuthFailed{Server: s.name, Error: err.Error()})
		},
	})
}

// needsAuthOf returns the [*oauth.NeedsAuthError] err wraps, if any.
func needsAuthOf(err error) (*oauth.NeedsAuthError, bool) {
	return errors.AsType[*oauth.NeedsAuthError](err)
}

// needsAuthError wraps a connect's needs-auth failure as the server's
// error: the handler's message (which names the login command) and
// [ErrNeedsAuth].
func needsAuthError(name string, ne *oauth.NeedsAuthError, cause error) error {
	return &ServerError{Server: name, Op: OpConnect, Err: &scrubbedError{msg: ne.Error(), cause: errors.Join(ErrNeedsAuth, cause)}}
}

// withNeedsAuthSeen returns the error of a failed connect: err, unless
// err is no needs-auth error and the connect's OAuth handler h met a 401
// it could not answer. The go-sdk falls back to initialize after any
// failed server/discover, so the 401 of a server whose discover needs a
// token would otherwise read as that initialize's failure (a stateless
// server's 400): the connect needs a login all the same.
func withNeedsAuthSeen(h auth.OAuthHandler, err error) error {
	if err == nil || h == nil {
		return err
	}
	if _, ok := needsAuthOf(err); ok {
		return err
	}
	if ne := oauth.NeedsAuthSeen(h); ne != nil {
		return fmt.Errorf("%w (then: %w)", ne, err)
	}
	return err
}

// listNeedsAuth ends the connection of s, whose first tools/list met a
// 401 that no stored token answers: a server that lets an
// unauthenticated connect through and asks for a token on its first
// request. The server then needs a login as a connect that met the 401
// does: the failed list, the end of the connection and AuthRequired are
// recorded, the record ends, and a login ([Manager.Login]) connects it
// anew. It reports false, doing nothing, when a teardown began: the
// teardown ends the record. The caller holds the round (r.enter).
func (m *Manager) listNeedsAuth(s *server, lc *liveConn, r *round, late bool, d time.Duration, err error, ne *oauth.NeedsAuthError) bool {
	m.mu.Lock()
	if s.ending() || s.mach.State() != stListing {
		m.mu.Unlock()
		return false
	}
	m.setState(s, stNeedsAuth)
	m.mu.Unlock()
	err = needsAuthError(s.name, ne, err)
	m.emitDeferred("", &events.ToolsListFailed{Server: s.name, Error: err.Error(), Duration: d})
	disc := &events.Disconnected{Server: s.name, Reason: events.ReasonError, Error: err.Error()}
	if cerr := m.closeConn(s, lc, disc); cerr != nil {
		m.log.Debug("MCP server close failed", "server", s.name, "err", cerr)
	}
	m.emitDeferred("", disc)
	m.markNeedsAuth(s, ne)
	m.mu.Lock()
	s.connErr = err
	if m.servers[s.name] == s {
		delete(m.servers, s.name)
	}
	m.setState(s, stDone, conn.Failed(err.Error()))
	close(s.done)
	m.mu.Unlock()
	r.settle(s.name, err)
	r.leave()
	if late {
		m.log.Warn("MCP server needs authorization", "server", s.name, "err", err)
	}
	return true
}

// markNeedsAuth remembers that s waits for a login and records
// AuthRequired. The record follows the ConnectFailed of the attempt, so
// the server's status ends as needs-auth.
func (m *Manager) markNeedsAuth(s *server, ne *oauth.NeedsAuthError) {
	m.auth.mu.Lock()
	m.auth.waiting[s.name] = s.cfg.Clone()
	m.auth.mu.Unlock()
	m.emitDeferred("", &events.AuthRequired{Server: s.name, Issuer: ne.Issuer, Scopes: slices.Clone(ne.Scopes), Login: ne.Login})
}

// NeedsAuth returns the servers whose last connect ended for want of an
// OAuth login, sorted.
func (m *Manager) NeedsAuth() []string {
	m.auth.mu.Lock()
	defer m.auth.mu.Unlock()
	out := make([]string, 0, len(m.auth.waiting))
	for name := range m.auth.waiting {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Login runs the OAuth login of the named server (the browser flow, or
// the client-credentials grant its config names), records AuthCompleted
// or AuthFailed, and then connects the server if it was waiting for the
// login ([Manager.NeedsAuth]). The server must be one the manager knows:
// waiting for a login, or connected or connecting. It returns the
// login's result; the connect's outcome is in the events and the view
// like any connect's. Errors hold no secret. This is the only manager
// call that opens a browser.
func (m *Manager) Login(ctx context.Context, name string) (*oauth.Result, error) {
	if m.auth.a == nil {
		return nil, fmt.Errorf("manager: login %s: OAuth unavailable (no token store)", name)
	}
	m.auth.mu.Lock()
	cfg, waiting := m.auth.waiting[name]
	m.auth.mu.Unlock()
	if !waiting {
		m.mu.Lock()
		s := m.servers[name]
		if s != nil {
			cfg = s.cfg.Clone()
		}
		m.mu.Unlock()
		if s == nil {
			return nil, &ServerError{Server: name, Op: OpConnect, Err: fmt.Errorf("%w: %s", ErrUnknownServer, name)}
		}
	}
	if t := cfg.Transport(); t != events.TransportHTTP && t != events.TransportSSE {
		return nil, &ServerError{Server: name, Op: OpConnect, Err: fmt.Errorf("MCP server %q: OAuth login needs a remote (HTTP or SSE) server", name)}
	}
	res := transport.Resolve(ctx, name, cfg, m.opts.Resolver, m.log)
	if res.Cfg.ProtocolVersion == "" {
		res.Cfg.ProtocolVersion = m.loginVersion(name, cfg)
	}
	r, err := m.auth.a.Login(ctx, name, res.Cfg, res.Headers)
	if errors.Is(err, oauth.ErrNotRequired) {
		r, err = nil, nil
	} else if err != nil {
		err = &scrubbedError{msg: res.ScrubText(err.Error()), cause: err}
		m.emit(&events.AuthFailed{Server: name, Error: err.Error()})
		return nil, &ServerError{Server: name, Op: OpConnect, Err: err}
	} else {
		m.emit(&events.AuthCompleted{Server: name, Issuer: r.Issuer, Scopes: r.Scopes, ExpiresAt: r.ExpiresAt, Grant: r.Grant})
	}
	if waiting {
		m.auth.mu.Lock()
		delete(m.auth.waiting, name)
		m.auth.mu.Unlock()
		if _, cerr := m.ConnectServers(ctx, []events.ServerConfig{cfg}, nil); cerr != nil {
			return r, cerr
		}
	}
	return r, err
}

// loginVersion is the protocol version a login to the server of the
// unpinned cfg speaks: the server's era as last recorded (a stateless
// server answers an older version's initialize with a 400, not the 401
// that starts the flow), else the manager's own version; "" leaves it to
// the authorizer.
func (m *Manager) loginVersion(name string, cfg events.ServerConfig) string {
	if cfg.Era == events.ConfigEraModern || cfg.Transport() == events.TransportSSE {
		return m.offeredVersion(cfg)
	}
	if m.cache != nil && cfg.Era != events.ConfigEraLegacy {
		if era, ok := m.cache.LookupEra(m.j.Host(), name, cfg.Hash(), m.now()); ok && era.ProtocolVersion != "" {
			return era.ProtocolVersion
		}
	}
	return m.offeredVersion(cfg)
}

// forgetNeedsAuth drops name from the servers waiting for a login: a new
// connect of it is under way.
func (m *Manager) forgetNeedsAuth(name string) {
	m.auth.mu.Lock()
	delete(m.auth.waiting, name)
	m.auth.mu.Unlock()
}
