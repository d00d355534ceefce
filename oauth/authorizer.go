package oauth

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/mcplife/mcplife/events"
)

// ErrNotRequired is returned by [Authorizer.Login] when the server
// answered without asking for authorization.
var ErrNotRequired = errors.New("oauth: the server did not ask for authorization")

// Options configures an [Authorizer]. The zero value (or nil) means the
// defaults.
type Options struct {
	// Store keeps tokens and registrations; nil means a [FileStore] at
	// [DefaultStorePath].
	Store TokenStore
	// HTTPClient makes the metadata, registration, token and revocation
	// requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Open opens an authorization URL for the user; nil means
	// [OpenBrowser]. Out is where it may print the URL.
	Open func(ctx context.Context, out io.Writer, url string) error
	Out  io.Writer
	// LoginCommand returns the command that logs in to server, quoted in
	// errors of hosts that cannot log in themselves; nil means
	// `mcp-audit auth login <server>`.
	LoginCommand func(server string) string
	// ClientName is the name a dynamic registration gives (default
	// "mcplife"); ClientVersion and ProtocolVersion are sent by the MCP
	// session a login opens (defaults "dev" and "2025-11-25"; a server
	// config's ProtocolVersion wins).
	ClientName, ClientVersion, ProtocolVersion string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Log receives what the package logs, never a token (default: discard).
	Log *slog.Logger
}

// Authorizer runs OAuth for mcplife's remote servers: handlers for their
// connections ([Authorizer.Handler]), [Authorizer.Login],
// [Authorizer.Logout] and [Authorizer.Status]. It is safe for concurrent
// use.
type Authorizer struct {
	opts  Options
	store TokenStore
	// refreshMu serialises this process's refreshes, so two connections
	// of one server do not both spend a rotating refresh token. Across
	// processes, a store that is an [Updater] serialises them.
	refreshMu sync.Mutex
}

// New returns an Authorizer. It fails only when the default store's path
// cannot be found (no home directory).
func New(opts *Options) (*Authorizer, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Store == nil {
		p, err := DefaultStorePath()
		if err != nil {
			return nil, err
		}
		o.Store = NewFileStore(p)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	base := o.HTTPClient.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c := *o.HTTPClient
	c.Transport = &sameOriginIssuer{base: &resetRetry{base: base}, log: o.Log}
	o.HTTPClient = &c
	if o.Open == nil {
		o.Open = OpenBrowser
	}
	if o.LoginCommand == nil {
		o.LoginCommand = func(server string) string { return "mcp-audit auth login " + server }
	}
	if o.ClientName == "" {
		o.ClientName = "mcplife"
	}
	if o.ClientVersion == "" {
		o.ClientVersion = "dev"
	}
	if o.ProtocolVersion == "" {
		o.ProtocolVersion = "2025-11-25"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Authorizer{opts: o, store: o.Store}, nil
}

// Store returns the token store.
func (a *Authorizer) Store() TokenStore { return a.store }

// LoginCommand returns the command that logs in to server.
func (a *Authorizer) LoginCommand(server string) string { return a.opts.LoginCommand(server) }

// Result is what an authorization obtained: never the token itself.
type Result struct {
	Server    string
	Issuer    string
	Scopes    []string
	ExpiresAt time.Time // zero when the server gave no lifetime
	Grant     string    // events.GrantAuthorizationCode or events.GrantClientCredentials
}

// NeedsAuthError is the error of a connection that needs a user's login:
// the server answered 401 (or 403 insufficient_scope, StepUp) and no
// stored token, refresh or client-credentials grant could satisfy it.
// Issuer and Scopes are what the server's metadata advertised.
type NeedsAuthError struct {
	Server string
	Issuer string
	Scopes []string
	StepUp bool
	// Login is the command that logs in.
	Login string
	// Err is why discovery failed, when it did.
	Err error
}

func (e *NeedsAuthError) Error() string {
	var b strings.Builder
	if e.StepUp {
		fmt.Fprintf(&b, "MCP server %q needs more scopes (%s)", e.Server, strings.Join(e.Scopes, " "))
	} else {
		fmt.Fprintf(&b, "MCP server %q needs authorization", e.Server)
		if e.Issuer != "" {
			fmt.Fprintf(&b, " at %s", e.Issuer)
		}
	}
	fmt.Fprintf(&b, ": run `%s`", e.Login)
	if e.Err != nil {
		fmt.Fprintf(&b, " (metadata discovery failed: %v)", e.Err)
	}
	return b.String()
}

func (e *NeedsAuthError) Unwrap() error { return e.Err }

// HandlerOptions are the options of one connection's handler.
type HandlerOptions struct {
	// Interactive lets a step-up (403 insufficient_scope) run the browser
	// login. A 401 without a usable token ends in a [*NeedsAuthError],
	// unless LoginOnUnauthorized says otherwise.
	Interactive bool
	// LoginOnUnauthorized, when set and reporting true at the time, lets
	// a 401 that no stored token, refresh or grant answers run the
	// browser login as well: a host that may open the browser, once its
	// connection is up (a server that let the connect through and asks
	// for a token on a call). Its connect's own 401s should still end in
	// a [*NeedsAuthError].
	LoginOnUnauthorized func() bool
	// Authorized is called after the handler obtained a token by itself
	// (a client-credentials grant, or an interactive step-up).
	Authorized func(Result)
	// Failed is called when a refresh or grant failed, with an error
	// that holds no secret.
	Failed func(error)
}

// Handler returns the OAuth handler of one connection to server, whose
// configuration cfg has its substitutions resolved (cfg.URL is the URL
// connected). Give it to [mcp.StreamableClientTransport.OAuthHandler], or
// for a legacy HTTP+SSE server wrap the client's transport with
// [Transport].
func (a *Authorizer) Handler(server string, cfg events.ServerConfig, opts *HandlerOptions) auth.OAuthHandler {
	return a.newHandler(server, cfg, opts)
}

func (a *Authorizer) newHandler(server string, cfg events.ServerConfig, opts *HandlerOptions) *handler {
	h := &handler{a: a, server: server, url: cfg.URL, oc: cfg.OAuth}
	if h.oc == nil {
		h.oc = &events.OAuthConfig{}
	}
	if opts != nil {
		h.ho = *opts
	}
	h.addSecret(h.oc.ClientSecret, h.oc.PrivateKey)
	return h
}

// maxLogins bounds the browser logins one handler runs, so a server that
// keeps refusing the scopes it asked for cannot loop.
const maxLogins = 2

// handler is the [auth.OAuthHandler] of one connection (or one login).
type handler struct {
	a      *Authorizer
	server string
	url    string
	oc     *events.OAuthConfig
	ho     HandlerOptions
	// login: an explicit login, which starts without the stored token
	// and may open the browser.
	login bool

	// loginMu serialises the handler's logins: requests that meet a 401
	// at once (a call beside a notification) open one browser login.
	loginMu sync.Mutex

	mu      sync.Mutex
	loaded  bool
	entry   *Entry
	ts      oauth2.TokenSource
	logins  int
	result  *Result
	secrets []string // (mu) every token, code and secret seen, to scrub from errors
	// failure is the last error Authorize returned, needs the last
	// [*NeedsAuthError] among them, and again the error of a login that
	// followed an authorization already obtained (a re-authorization).
	failure, again error
	needs          *NeedsAuthError
}

var _ auth.OAuthHandler = (*handler)(nil)

func (h *handler) addSecret(ss ...string) {
	for _, s := range ss {
		if len(s) >= 4 && !slices.Contains(h.secrets, s) {
			h.secrets = append(h.secrets, s)
		}
	}
}

// Secrets returns every token, code and client secret that h, a handler
// from [Authorizer.Handler], has seen so far (nil for any other handler),
// so that a client can keep them out of what it records of the
// connection: a server may say back the token it was sent.
func Secrets(h auth.OAuthHandler) []string {
	ours, ok := h.(*handler)
	if !ok {
		return nil
	}
	ours.mu.Lock()
	defer ours.mu.Unlock()
	return slices.Clone(ours.secrets)
}

// scrub returns err with every secret the handler saw replaced.
func (h *handler) scrub(err error) error {
	if err == nil {
		return nil
	}
	h.mu.Lock()
	secrets := slices.Clone(h.secrets)
	h.mu.Unlock()
	return scrubErr(err, secrets)
}

// scrubbed is an error whose message had secrets removed; it keeps the
// cause for errors.Is and errors.As.
type scrubbed struct {
	msg   string
	cause error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.cause }

func scrubErr(err error, secrets []string) error {
	msg := err.Error()
	if re, ok := errors.AsType[*oauth2.RetrieveError](err); ok {
		// Its message quotes the response body; keep the standard fields.
		msg = strings.Replace(msg, re.Error(), retrieveText(re), 1)
	}
	clean := msg
	for _, s := range secrets {
		clean = strings.ReplaceAll(clean, s, events.Redacted)
	}
	if clean == err.Error() {
		return err
	}
	return &scrubbed{msg: clean, cause: err}
}

func retrieveText(re *oauth2.RetrieveError) string {
	s := "token endpoint"
	if re.Response != nil {
		s += fmt.Sprintf(" answered %d", re.Response.StatusCode)
	}
	if re.ErrorCode != "" {
		s += ": " + re.ErrorCode
		if re.ErrorDescription != "" {
			s += ": " + re.ErrorDescription
		}
	}
	return s
}

// TokenSource returns the stored token's source (refreshing it when it
// is about to expire), or nil before any token exists.
func (h *handler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.loaded && !h.login {
		h.loaded = true
		e, err := h.a.store.Load(ctx, h.url)
		switch {
		case err == nil:
			h.setEntry(e)
		case !errors.Is(err, ErrNoToken):
			h.a.opts.Log.Warn("OAuth token store unreadable", "server", h.server, "err", err)
		}
	}
	if h.ts == nil {
		return nil, nil
	}
	return h.ts, nil
}

// setEntry makes e the handler's token. Requires h.mu.
func (h *handler) setEntry(e *Entry) {
	h.entry = e
	h.addSecret(e.Token.AccessToken, e.Token.RefreshToken)
	h.ts = &storedSource{h: h}
}

// storedSource hands out the handler's current token, refreshing it
// shortly before it expires and saving what the refresh returned (a
// rotated refresh token included) at once.
type storedSource struct{ h *handler }

// expiredToken is the error of a token that expired and cannot be
// refreshed here: the go-sdk then sends the request without a token and
// the 401 it gets leads to Authorize.
var expiredToken = &oauth2.RetrieveError{ErrorCode: "invalid_grant", ErrorDescription: "the stored token expired"}

func (s *storedSource) Token() (*oauth2.Token, error) {
	h := s.h
	h.mu.Lock()
	e := h.entry
	h.mu.Unlock()
	if e == nil {
		return nil, expiredToken
	}
	now := h.a.opts.Now()
	if !e.Token.Expiry.IsZero() && !now.Add(refreshMargin(e)).Before(e.Token.Expiry) {
		if e.Token.RefreshToken == "" {
			if now.Before(e.Token.Expiry) {
				return toOAuth2(e.Token), nil // use it while it lasts
			}
			return nil, expiredToken
		}
		ctx, cancel := context.WithTimeout(context.Background(), tokenRequestTimeout)
		ne, err := h.refresh(ctx, e)
		cancel()
		if err != nil {
			if now.Before(e.Token.Expiry) {
				return toOAuth2(e.Token), nil
			}
			return nil, err
		}
		e = ne
	}
	return toOAuth2(e.Token), nil
}

// tokenRequestTimeout bounds a refresh or grant made while a request
// waits for its token.
const tokenRequestTimeout = 30 * time.Second

// refreshMargin is how long before expiry a token is refreshed: a minute,
// or a quarter of its lifetime when that is shorter.
func refreshMargin(e *Entry) time.Duration {
	m := time.Minute
	if !e.SavedAt.IsZero() {
		if q := e.Token.Expiry.Sub(e.SavedAt) / 4; q < m {
			m = q
		}
	}
	return m
}

func toOAuth2(t Token) *oauth2.Token {
	return &oauth2.Token{AccessToken: t.AccessToken, TokenType: t.TokenType, RefreshToken: t.RefreshToken, Expiry: t.Expiry}
}

func fromOAuth2(t *oauth2.Token) Token {
	return Token{AccessToken: t.AccessToken, TokenType: t.TokenType, RefreshToken: t.RefreshToken, Expiry: t.Expiry}
}

// refresh spends e's refresh token and saves the new token, unless the
// store already holds a newer one: another connection, or another
// process sharing the store, refreshed meanwhile (or logged in), and its
// token is used as it is, or its refresh token (the live one) is spent.
// The store's entry is read, refreshed and saved as one step ([Updater]),
// so of several processes refreshing one token at once only the first
// asks the authorization server. An invalid_grant answer deletes
// nothing: the next 401 asks for a login. A token obtained but not saved
// is used, and the failed save logged.
func (h *handler) refresh(ctx context.Context, e *Entry) (*Entry, error) {
	a := h.a
	a.refreshMu.Lock()
	defer a.refreshMu.Unlock()
	var got *Entry
	err := a.update(ctx, e.ServerURL, e.Issuer, func(cur *Entry) (*Entry, error) {
		if cur != nil && cur.Token.AccessToken != e.Token.AccessToken {
			if cur.Token.Expiry.IsZero() || a.opts.Now().Add(refreshMargin(cur)).Before(cur.Token.Expiry) {
				got = cur
				return nil, nil // nothing to save
			}
			e = cur
		}
		ne, err := h.spend(ctx, e)
		if err != nil {
			return nil, err
		}
		got = ne
		return ne, nil
	})
	if got == nil {
		if err == nil {
			err = fmt.Errorf("oauth: refresh the token of %s: no token", h.server)
		}
		return nil, err
	}
	if err != nil {
		a.opts.Log.Warn("OAuth token not saved", "server", h.server, "err", err)
	}
	h.mu.Lock()
	h.setEntry(got)
	h.mu.Unlock()
	return got, nil
}

// update runs fn on the stored entry of (serverURL, issuer) and saves
// what it returns, as one step where the store is an [Updater]. Requires
// a.refreshMu.
func (a *Authorizer) update(ctx context.Context, serverURL, issuer string, fn func(cur *Entry) (*Entry, error)) error {
	if u, ok := a.store.(Updater); ok {
		return u.Update(ctx, serverURL, issuer, fn)
	}
	cur, err := a.store.Load(ctx, serverURL)
	if err != nil || cur.Issuer != issuer {
		cur = nil
	}
	ne, err := fn(cur)
	if err != nil || ne == nil {
		return err
	}
	return a.store.Save(ctx, ne)
}

// spend runs the refresh grant with e's refresh token and returns the
// entry holding the new token (and the rotated refresh token, if any).
func (h *handler) spend(ctx context.Context, e *Entry) (*Entry, error) {
	a := h.a
	h.mu.Lock()
	h.addSecret(e.Token.AccessToken, e.Token.RefreshToken)
	h.mu.Unlock()
	conf := &oauth2.Config{
		ClientID: e.ClientID, ClientSecret: h.clientSecret(ctx, e),
		Endpoint: oauth2.Endpoint{TokenURL: e.TokenURL, AuthStyle: oauth2.AuthStyle(e.AuthStyle)},
	}
	hctx := context.WithValue(ctx, oauth2.HTTPClient, a.opts.HTTPClient)
	tok, err := refreshToken(hctx, conf, e.Token.RefreshToken)
	if err != nil {
		err = h.scrub(fmt.Errorf("oauth: refresh the token of %s: %w", h.server, err))
		if h.ho.Failed != nil {
			h.ho.Failed(err)
		}
		return nil, err
	}
	ne := *e
	ne.Scopes = slices.Clone(e.Scopes)
	ne.Token = fromOAuth2(tok)
	if ne.Token.RefreshToken == "" {
		ne.Token.RefreshToken = e.Token.RefreshToken
	}
	if s := scopesOf(tok, nil); len(s) > 0 {
		ne.Scopes = s
	}
	ne.SavedAt = a.opts.Now()
	h.mu.Lock()
	h.addSecret(ne.Token.AccessToken, ne.Token.RefreshToken)
	h.mu.Unlock()
	return &ne, nil
}

// refreshToken runs the refresh_token grant.
func refreshToken(ctx context.Context, conf *oauth2.Config, rt string) (*oauth2.Token, error) {
	return conf.TokenSource(ctx, &oauth2.Token{RefreshToken: rt}).Token()
}

// clientSecret returns the secret of e's client: the configured one, or
// the stored registration's.
func (h *handler) clientSecret(ctx context.Context, e *Entry) string {
	if h.oc.ClientID != "" && h.oc.ClientID == e.ClientID {
		return h.oc.ClientSecret
	}
	if r, err := h.a.store.Registration(ctx, e.Issuer); err == nil && r != nil && r.ClientID == e.ClientID {
		return r.ClientSecret
	}
	return ""
}

// Authorize answers a 401 or 403: a refresh, a client-credentials grant,
// a login (an explicit one, or an interactive step-up), else a
// [*NeedsAuthError]. The handler keeps what it returned, so that a
// failure the go-sdk does not pass on (a 401 to server/discover, after
// which it falls back to initialize) is still known: [NeedsAuthSeen].
func (h *handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	err := h.authorize(ctx, req, resp)
	if err != nil {
		h.mu.Lock()
		h.failure = err
		if ne, ok := errors.AsType[*NeedsAuthError](err); ok {
			h.needs = ne
		}
		h.mu.Unlock()
	}
	return err
}

// NeedsAuthSeen returns the last [*NeedsAuthError] that h, a handler from
// [Authorizer.Handler], answered a 401 or 403 with, or nil. A client
// whose connect failed otherwise (the go-sdk falls back to initialize
// after any failed server/discover, which a stateless server refuses)
// reports the connect as needing a login with it.
func NeedsAuthSeen(h auth.OAuthHandler) *NeedsAuthError {
	ours, ok := h.(*handler)
	if !ok {
		return nil
	}
	ours.mu.Lock()
	defer ours.mu.Unlock()
	return ours.needs
}

func (h *handler) authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	cs := challengesOf(resp)
	stepUp := resp.StatusCode == http.StatusForbidden
	if stepUp && challengeParam(cs, "error") != "insufficient_scope" {
		return nil // not ours to fix: the retry reports the 403
	}
	if h.oc.Grant == events.GrantClientCredentials {
		return h.clientCredentials(ctx, req, resp, cs)
	}
	h.mu.Lock()
	e := h.entry
	h.mu.Unlock()
	if !stepUp && !h.login && e != nil && e.Token.RefreshToken != "" && !h.issuerMoved(ctx, e, cs) {
		// The server refused the token: refresh once, then retry.
		if _, err := h.refresh(ctx, e); err == nil {
			return nil
		}
	}
	want := strings.Fields(challengeParam(cs, "scope"))
	if stepUp && e != nil && len(want) > 0 && subset(want, e.Scopes) {
		return fmt.Errorf("MCP server %q refuses the token although it holds the scopes the server asks for (%s)", h.server, strings.Join(want, " "))
	}
	if h.login || (stepUp && h.ho.Interactive) || (!stepUp && h.ho.LoginOnUnauthorized != nil && h.ho.LoginOnUnauthorized()) {
		h.loginMu.Lock()
		defer h.loginMu.Unlock()
		h.mu.Lock()
		cur := h.entry
		h.mu.Unlock()
		if sent, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer "); cur != nil && cur.Token.AccessToken != sent {
			// Another request's login (or refresh) got a token since
			// this one was sent: it is retried with that token.
			return nil
		}
		h.mu.Lock()
		n := h.logins
		h.logins++
		h.mu.Unlock()
		if n >= maxLogins {
			return fmt.Errorf("MCP server %q still refuses after %d logins", h.server, n)
		}
		var extra []string
		if e != nil {
			extra = e.Scopes // a step-up keeps what was granted
		}
		h.mu.Lock()
		had := h.result != nil
		h.mu.Unlock()
		err := h.authorizationCode(ctx, req, resp, cs, extra)
		if err != nil && had {
			h.mu.Lock()
			h.again = err
			h.mu.Unlock()
		}
		return err
	}
	ne := &NeedsAuthError{Server: h.server, StepUp: stepUp, Login: h.a.opts.LoginCommand(h.server)}
	if stepUp {
		ne.Scopes = want
		if e != nil {
			ne.Scopes = missing(want, e.Scopes)
		}
		return ne
	}
	md, err := discover(ctx, h.a.opts.HTTPClient, h.url, cs)
	if err != nil {
		ne.Err = h.scrub(err)
		return ne
	}
	ne.Issuer, ne.Scopes = md.asm.Issuer, union(md.scopes(), h.oc.Scopes)
	return ne
}

// issuerMoved reports whether the server now names another authorization
// server than the one that issued e: its refresh token is of no use
// there, and the client registration of the old one must not be
// presented to the new one (a new login registers anew).
func (h *handler) issuerMoved(ctx context.Context, e *Entry, cs []oauthex.Challenge) bool {
	md, err := discover(ctx, h.a.opts.HTTPClient, h.url, cs)
	return err == nil && e.Issuer != "" && md.asm.Issuer != e.Issuer
}

// authorizationCode runs the go-sdk's authorization code handler (PKCE,
// state, the resource indicator) with the loopback redirect and the
// client identity of the configuration, and stores what it obtained.
func (h *handler) authorizationCode(ctx context.Context, req *http.Request, resp *http.Response, cs []oauthex.Challenge, extra []string) error {
	a := h.a
	md, err := discover(ctx, a.opts.HTTPClient, h.url, cs)
	if err != nil {
		return h.scrub(err)
	}
	issuer := md.asm.Issuer
	var reg *Registration
	if h.oc.ClientID == "" {
		reg, _ = a.store.Registration(ctx, issuer)
	}
	port := h.oc.CallbackPort
	if port == 0 && reg != nil {
		if u, err := url.Parse(reg.RedirectURI); err == nil {
			fmt.Sscan(u.Port(), &port)
		}
	}
	lb, err := listenLoopback(port)
	if err != nil && port != 0 && h.oc.CallbackPort == 0 {
		lb, err = listenLoopback(0) // the registration's port is taken: register anew
	}
	if err != nil {
		return err
	}
	defer lb.close()
	if reg != nil && reg.RedirectURI != lb.redirect {
		reg = nil
	}
	hc := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              lb.redirect,
		AuthorizationCodeFetcher: h.fetcher(lb),
		Client:                   a.opts.HTTPClient,
		RequestRefreshToken:      true,
		ScopeFilter: func(found []string) []string {
			return union(found, h.oc.Scopes, extra)
		},
	}
	var got struct {
		conf *oauth2.Config
		tok  *oauth2.Token
	}
	hc.NewTokenSource = func(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
		got.conf, got.tok = c, t
		return oauth2.StaticTokenSource(t), nil
	}
	switch {
	case h.oc.ClientID != "":
		pc := &oauthex.ClientCredentials{ClientID: h.oc.ClientID}
		if h.oc.ClientSecret != "" {
			pc.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: h.oc.ClientSecret}
		}
		hc.PreregisteredClient = pc
	default:
		if h.oc.ClientMetadataURL != "" {
			hc.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: h.oc.ClientMetadataURL}
		}
		if reg != nil {
			pc := &oauthex.ClientCredentials{ClientID: reg.ClientID, Issuer: reg.Issuer}
			if reg.ClientSecret != "" {
				pc.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: reg.ClientSecret}
			}
			hc.PreregisteredClient = pc
		} else {
			hc.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
				RedirectURIs:  []string{lb.redirect},
				ClientName:    a.opts.ClientName,
				GrantTypes:    []string{"authorization_code", "refresh_token"},
				ResponseTypes: []string{"code"},
			}}
		}
	}
	sdk, err := auth.NewAuthorizationCodeHandler(hc)
	if err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	if err := sdk.Authorize(ctx, req, resp); err != nil {
		if got.tok != nil {
			h.mu.Lock()
			h.addSecret(got.tok.AccessToken, got.tok.RefreshToken)
			h.mu.Unlock()
		}
		err = h.scrub(fmt.Errorf("oauth: authorize %s: %w", h.server, err))
		if h.ho.Failed != nil {
			h.ho.Failed(err)
		}
		return err
	}
	if got.tok == nil {
		return fmt.Errorf("oauth: authorize %s: no token", h.server)
	}
	e := &Entry{
		ServerURL: h.url, Issuer: issuer, Token: fromOAuth2(got.tok),
		Scopes: scopesOf(got.tok, got.conf.Scopes), Grant: events.GrantAuthorizationCode,
		ClientID: got.conf.ClientID, TokenURL: got.conf.Endpoint.TokenURL, AuthStyle: int(got.conf.Endpoint.AuthStyle),
		Resource: md.prm.Resource, SavedAt: a.opts.Now(),
	}
	h.mu.Lock()
	h.addSecret(got.conf.ClientSecret)
	h.setEntry(e)
	h.mu.Unlock()
	if h.oc.ClientID == "" && got.conf.ClientID != h.oc.ClientMetadataURL && reg == nil {
		// A dynamic registration: keep it for the next login at this
		// authorization server.
		r := &Registration{Issuer: issuer, ClientID: got.conf.ClientID, ClientSecret: got.conf.ClientSecret,
			AuthStyle: int(got.conf.Endpoint.AuthStyle), RedirectURI: lb.redirect}
		if err := a.store.SaveRegistration(ctx, r); err != nil {
			a.opts.Log.Warn("OAuth client registration not saved", "server", h.server, "err", err)
		}
	}
	if err := a.store.Save(ctx, e); err != nil {
		return fmt.Errorf("oauth: save the token of %s: %w", h.server, err)
	}
	h.done(e)
	return nil
}

// fetcher opens the authorization URL and waits for the redirect.
func (h *handler) fetcher(lb *loopback) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		if err := h.a.opts.Open(ctx, h.a.opts.Out, args.URL); err != nil {
			return nil, err
		}
		select {
		case cr := <-lb.results:
			// The code exchange follows at once; an idle connection to
			// the authorization server may have been closed by it while
			// the user was in the browser.
			h.a.opts.HTTPClient.CloseIdleConnections()
			if cr.res != nil {
				h.mu.Lock()
				h.addSecret(cr.res.Code)
				h.mu.Unlock()
			}
			return cr.res, cr.err
		case <-ctx.Done():
			return nil, fmt.Errorf("oauth: waiting for the authorization redirect: %w", ctx.Err())
		}
	}
}

// done records the result of an authorization.
func (h *handler) done(e *Entry) {
	r := Result{Server: h.server, Issuer: e.Issuer, Scopes: slices.Clone(e.Scopes), ExpiresAt: e.Token.Expiry, Grant: e.Grant}
	h.mu.Lock()
	h.result = &r
	h.mu.Unlock()
	if h.ho.Authorized != nil && !h.login {
		h.ho.Authorized(r)
	}
}

// clientCredentials runs the client-credentials grant: with the client
// secret through the go-sdk's extauth handler, or with a private-key JWT
// assertion (RFC 7523) when a key is configured.
func (h *handler) clientCredentials(ctx context.Context, req *http.Request, resp *http.Response, cs []oauthex.Challenge) error {
	a := h.a
	md, err := discover(ctx, a.opts.HTTPClient, h.url, cs)
	if err != nil {
		return h.scrub(err)
	}
	if h.oc.ClientID == "" {
		return fmt.Errorf("MCP server %q: the client_credentials grant needs oauth.clientId", h.server)
	}
	var (
		src      oauth2.TokenSource
		scopes   = union(md.scopes(), h.oc.Scopes)
		tokenURL = md.asm.TokenEndpoint
		style    oauth2.AuthStyle
	)
	switch {
	case h.oc.PrivateKey != "":
		key, err := parsePrivateKey(h.oc.PrivateKey)
		if err != nil {
			return err
		}
		alg := h.oc.SigningAlgorithm
		if alg == "" && len(md.asm.TokenEndpointAuthSigningAlgValuesSupported) > 0 && !slices.Contains(md.asm.TokenEndpointAuthSigningAlgValuesSupported, defaultAlg(key)) {
			alg = md.asm.TokenEndpointAuthSigningAlgValuesSupported[0]
		}
		src = &jwtSource{h: h, key: key, alg: alg, tokenURL: tokenURL, audience: md.asm.Issuer, scopes: scopes, resource: md.prm.Resource}
		style = oauth2.AuthStyleInParams
	case h.oc.ClientSecret != "":
		ext, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
			Credentials: &oauthex.ClientCredentials{ClientID: h.oc.ClientID, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: h.oc.ClientSecret}},
			HTTPClient:  a.opts.HTTPClient,
		})
		if err != nil {
			return fmt.Errorf("oauth: %w", err)
		}
		if err := ext.Authorize(ctx, req, resp); err != nil {
			err = h.scrub(fmt.Errorf("oauth: client credentials for %s: %w", h.server, err))
			if h.ho.Failed != nil {
				h.ho.Failed(err)
			}
			return err
		}
		src, _ = ext.TokenSource(ctx)
	default:
		return fmt.Errorf("MCP server %q: the client_credentials grant needs oauth.clientSecret or oauth.privateKey", h.server)
	}
	tok, err := src.Token()
	if err != nil {
		err = h.scrub(fmt.Errorf("oauth: client credentials for %s: %w", h.server, err))
		if h.ho.Failed != nil {
			h.ho.Failed(err)
		}
		return err
	}
	e := &Entry{
		ServerURL: h.url, Issuer: md.asm.Issuer, Token: fromOAuth2(tok), Scopes: scopesOf(tok, scopes),
		Grant: events.GrantClientCredentials, ClientID: h.oc.ClientID, TokenURL: tokenURL, AuthStyle: int(style),
		Resource: md.prm.Resource, SavedAt: a.opts.Now(),
	}
	h.mu.Lock()
	h.setEntry(e)
	h.mu.Unlock()
	if err := a.store.Save(ctx, e); err != nil {
		a.opts.Log.Warn("OAuth token not saved", "server", h.server, "err", err)
	}
	h.done(e)
	return nil
}

// jwtSource runs the client-credentials grant authenticated by a fresh
// private-key JWT assertion each time.
type jwtSource struct {
	h                                 *handler
	key                               crypto.Signer
	alg, tokenURL, audience, resource string
	scopes                            []string
}

func (s *jwtSource) Token() (*oauth2.Token, error) {
	a := s.h.a
	assertion, err := clientAssertion(s.key, s.alg, s.h.oc.ClientID, s.audience, a.opts.Now())
	if err != nil {
		return nil, err
	}
	s.h.mu.Lock()
	s.h.addSecret(assertion)
	s.h.mu.Unlock()
	params := url.Values{
		"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
		"client_assertion":      {assertion},
	}
	if s.resource != "" {
		params.Set("resource", s.resource)
	}
	conf := &clientcredentials.Config{ClientID: s.h.oc.ClientID, TokenURL: s.tokenURL, Scopes: s.scopes,
		EndpointParams: params, AuthStyle: oauth2.AuthStyleInParams}
	ctx, cancel := context.WithTimeout(context.Background(), tokenRequestTimeout)
	defer cancel()
	return conf.Token(context.WithValue(ctx, oauth2.HTTPClient, a.opts.HTTPClient))
}

// scopesOf returns the scopes a token response granted, else requested,
// sorted: their order is not significant (RFC 6749 §3.3), and the SDK
// asks for them in no fixed order, which would otherwise reach the
// stored token, the status and the events.
func scopesOf(t *oauth2.Token, requested []string) []string {
	if s, ok := t.Extra("scope").(string); ok && s != "" {
		return slices.Sorted(slices.Values(strings.Fields(s)))
	}
	return slices.Sorted(slices.Values(requested))
}

// union returns the scopes of every list, each once, in order of first
// appearance.
func union(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, s := range l {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

func subset(want, have []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func missing(want, have []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return out
}

// Login runs the browser login for server (or the client-credentials
// grant, when cfg says so) and stores the token. cfg has its
// substitutions resolved. It opens an MCP session to the server without
// a token, so the server's own 401 (or 403) starts the flow, and closes
// it. headers are sent with each request to the origin of cfg.URL (nil
// for none), and neither they nor the token go to another origin that a
// redirect leads to.
// It returns [ErrNotRequired] when the server never asked for
// authorization; errors hold no secret.
func (a *Authorizer) Login(ctx context.Context, server string, cfg events.ServerConfig, headers map[string]string) (*Result, error) {
	if cfg.URL == "" {
		return nil, fmt.Errorf("MCP server %q has no URL: OAuth is for remote servers", server)
	}
	h := a.newHandler(server, cfg, nil)
	h.login = true
	client := mcp.NewClient(&mcp.Implementation{Name: a.opts.ClientName, Version: a.opts.ClientVersion}, nil)
	resource, _ := url.Parse(cfg.URL)
	withHeaders := &headerTransport{base: http.DefaultTransport, resource: resource, headers: headers}
	var t mcp.Transport = &mcp.StreamableClientTransport{
		Endpoint: cfg.URL, OAuthHandler: h, DisableStandaloneSSE: true, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: withHeaders},
	}
	if cfg.Transport() == events.TransportSSE {
		// The legacy transport takes no OAuth handler: its HTTP client
		// authorizes each request instead.
		t = &mcp.SSEClientTransport{Endpoint: cfg.URL, HTTPClient: &http.Client{Transport: Transport(withHeaders, h)}}
	}
	// The login's session speaks the version the config pins, as the
	// server's own connections do: a server of the stateless protocol
	// answers initialize at an older version with a 400, not the 401
	// that starts the flow.
	pv := a.opts.ProtocolVersion
	if cfg.ProtocolVersion != "" {
		pv = cfg.ProtocolVersion
	}
	cs, err := client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: pv})
	if err == nil {
		// Servers that let initialize through ask for a token on the
		// first request that needs one.
		_, err = cs.ListTools(ctx, nil)
		cs.Close()
	}
	h.mu.Lock()
	res, failure, again := h.result, h.failure, h.again
	h.mu.Unlock()
	if res != nil {
		if again != nil {
			// The server refused the first token and asked for another
			// login, which failed: the login did not get a token the
			// server takes.
			return nil, h.scrub(fmt.Errorf("oauth: login to %s: the server asked to authorize again, which failed: %w", server, again))
		}
		if err != nil {
			a.opts.Log.Info("MCP server refused a request after the login", "server", server, "err", h.scrub(err))
		}
		return res, nil
	}
	if err != nil {
		if failure != nil {
			// The authorization's own failure: the go-sdk falls back to
			// initialize after a failed server/discover, and a stateless
			// server's refusal of that would hide it.
			err = failure
		}
		return nil, h.scrub(fmt.Errorf("oauth: login to %s: %w", server, err))
	}
	return nil, ErrNotRequired
}

// Status is the stored authorization of one server.
type Status struct {
	// State is "authenticated" (a token that is valid or can be
	// refreshed), "needs-auth" (a token that expired for good) or "none".
	State     string
	Issuer    string
	Scopes    []string
	ExpiresAt time.Time
}

// Status returns what the store holds for the server at serverURL.
func (a *Authorizer) Status(ctx context.Context, serverURL string) (Status, error) {
	e, err := a.store.Load(ctx, serverURL)
	if errors.Is(err, ErrNoToken) {
		return Status{State: "none"}, nil
	}
	if err != nil {
		return Status{}, err
	}
	st := Status{State: "authenticated", Issuer: e.Issuer, Scopes: e.Scopes, ExpiresAt: e.Token.Expiry}
	if !e.Token.Expiry.IsZero() && !a.opts.Now().Before(e.Token.Expiry) && e.Token.RefreshToken == "" && e.Grant != events.GrantClientCredentials {
		st.State = "needs-auth"
	}
	return st, nil
}

// Logout deletes the stored token of the server at serverURL and, when
// its authorization server advertises a revocation endpoint, revokes it
// there first (RFC 7009: the refresh token, else the access token).
// revoked reports whether the server accepted the revocation. A failed
// revocation still deletes the local token, and is returned as err.
func (a *Authorizer) Logout(ctx context.Context, serverURL string, cfg events.ServerConfig) (revoked bool, err error) {
	e, lerr := a.store.Load(ctx, serverURL)
	if errors.Is(lerr, ErrNoToken) {
		return false, nil
	}
	if lerr != nil {
		return false, lerr
	}
	h := a.newHandler("", cfg, nil)
	h.addSecret(e.Token.AccessToken, e.Token.RefreshToken)
	asm, merr := auth.GetAuthServerMetadata(ctx, e.Issuer, a.opts.HTTPClient)
	if merr == nil && asm != nil && asm.RevocationEndpoint != "" {
		revoked, err = a.revoke(ctx, asm.RevocationEndpoint, e, h.clientSecret(ctx, e))
		err = h.scrub(err)
	}
	if derr := a.store.Delete(ctx, serverURL); derr != nil {
		return revoked, derr
	}
	return revoked, err
}

// revoke posts the token to the revocation endpoint with the client's
// authentication.
func (a *Authorizer) revoke(ctx context.Context, endpoint string, e *Entry, secret string) (bool, error) {
	tok, hint := e.Token.RefreshToken, "refresh_token"
	if tok == "" {
		tok, hint = e.Token.AccessToken, "access_token"
	}
	form := url.Values{"token": {tok}, "token_type_hint": {hint}}
	basic := oauth2.AuthStyle(e.AuthStyle) == oauth2.AuthStyleInHeader && secret != ""
	if !basic {
		form.Set("client_id", e.ClientID)
		if secret != "" {
			form.Set("client_secret", secret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		req.SetBasicAuth(url.QueryEscape(e.ClientID), url.QueryEscape(secret))
	}
	resp, err := a.opts.HTTPClient.Do(req)
	if err != nil {
		return false, fmt.Errorf("oauth: revoke: %w", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("oauth: revocation endpoint answered %d", resp.StatusCode)
	}
	return true, nil
}
