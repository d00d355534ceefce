package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/oauth"
	"github.com/mcplife/mcplife/session"
)

// loginTimeout bounds `auth login`: the user has this long to finish in
// the browser.
const loginTimeout = 5 * time.Minute

// runAuth is `auth login|status|logout`.
func runAuth(ctx context.Context, g *globals, args []string) error {
	if len(args) == 0 {
		return usagef("auth needs a subcommand: login SERVER, status, logout SERVER; see mcp-audit auth --help")
	}
	sub, rest := args[0], args[1:]
	if isHelpArg(sub) {
		return helpError{newFlagSet("auth", g)}
	}
	if !slices.Contains(authSubcommands, sub) {
		msg := fmt.Sprintf("auth: unknown subcommand %q", sub)
		if s := suggest(sub, authSubcommands); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", s)
		}
		return usagef("%s; want login SERVER, status or logout SERVER", msg)
	}
	fs := newFlagSet("auth "+sub, g)
	var df discoveryFlags
	df.register(fs)
	pos, err := parseInterleaved(fs, rest)
	if err != nil {
		return err
	}
	switch sub {
	case "login", "logout":
		if len(pos) != 1 {
			return usagef("auth %s takes one SERVER", sub)
		}
	case "status":
		if len(pos) > 0 {
			return usagef("auth status takes no arguments")
		}
	default:
		return usagef("auth: unknown subcommand %q (login, status, logout)", sub)
	}
	lopts, err := df.options()
	if err != nil {
		return err
	}
	d, err := loader.LoadConfigs(ctx, lopts)
	if err != nil {
		return usagef("discovery failed: %v", err)
	}
	a, err := newAuthorizer(g)
	if err != nil {
		return err
	}
	res := loader.ResolverFor(lopts, nil)
	switch sub {
	case "login":
		cfg, err := remoteServer(ctx, d, res, pos[0])
		if err != nil {
			return err
		}
		lctx, cancel := context.WithTimeout(ctx, loginTimeout)
		defer cancel()
		r, err := a.Login(lctx, cfg.Name, cfg, cfg.Headers)
		if errors.Is(err, oauth.ErrNotRequired) {
			fmt.Fprintf(g.stdout, "%s did not ask for authorization; nothing stored\n", cfg.Name)
			return nil
		}
		if err != nil {
			fmt.Fprintf(g.stderr, "mcp-audit: %s\n", escapeLine(err.Error()))
			return errCheckFailed
		}
		if g.json {
			return g.writeJSON(authStatusOf(cfg.Name, oauth.Status{State: "authenticated", Issuer: r.Issuer, Scopes: r.Scopes, ExpiresAt: r.ExpiresAt}))
		}
		fmt.Fprintf(g.stdout, "logged in to %s", cfg.Name)
		if r.Issuer != "" {
			fmt.Fprintf(g.stdout, " at %s", escapeLine(r.Issuer))
		}
		fmt.Fprintf(g.stdout, " (%s)", r.Grant)
		if len(r.Scopes) > 0 {
			fmt.Fprintf(g.stdout, "; scopes: %s", escapeLine(strings.Join(r.Scopes, " ")))
		}
		if !r.ExpiresAt.IsZero() {
			fmt.Fprintf(g.stdout, "; token expires %s", r.ExpiresAt.UTC().Format(time.RFC3339))
		}
		fmt.Fprintln(g.stdout)
		return nil
	case "logout":
		cfg, err := remoteServer(ctx, d, res, pos[0])
		if err != nil {
			return err
		}
		revoked, err := a.Logout(ctx, cfg.URL, cfg)
		if err != nil {
			fmt.Fprintf(g.stderr, "mcp-audit: %s\n", escapeLine(err.Error()))
		}
		what := "deleted the stored token"
		if revoked {
			what += " and revoked it at the authorization server"
		}
		fmt.Fprintf(g.stdout, "%s: %s\n", cfg.Name, what)
		if err != nil {
			return errCheckFailed
		}
		return nil
	}
	// status
	out := []authStatusJSON{}
	for _, s := range d.Servers {
		if t := s.Config.Transport(); t != events.TransportHTTP && t != events.TransportSSE {
			continue
		}
		cfg, err := resolveRemote(ctx, res, s.Config)
		if err != nil {
			return err
		}
		st, err := a.Status(ctx, cfg.URL)
		if err != nil {
			return err
		}
		out = append(out, authStatusOf(cfg.Name, st))
	}
	if g.json {
		return g.writeJSON(out)
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATUS\tEXPIRES\tSCOPES")
	for _, s := range out {
		exp := "-"
		if s.ExpiresAt != "" {
			exp = s.ExpiresAt
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", escapeLine(s.Server), s.Status, exp, escapeLine(strings.Join(s.Scopes, " ")))
	}
	return tw.Flush()
}

// authStatusJSON is one entry of `auth status --json`.
type authStatusJSON struct {
	Server    string   `json:"server"`
	Status    string   `json:"status"`
	ExpiresAt string   `json:"expiresAt,omitempty"`
	Scopes    []string `json:"scopes"`
}

func authStatusOf(server string, st oauth.Status) authStatusJSON {
	j := authStatusJSON{Server: server, Status: st.State, Scopes: st.Scopes}
	if j.Scopes == nil {
		j.Scopes = []string{}
	}
	if !st.ExpiresAt.IsZero() {
		j.ExpiresAt = st.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return j
}

// newAuthorizer returns the authorizer of the command: the default token
// store; a browser login prints its URL on stderr when no browser opens.
func newAuthorizer(g *globals) (*oauth.Authorizer, error) {
	a, err := oauth.New(&oauth.Options{Out: g.stderr})
	if err != nil {
		return nil, usagef("%v", err)
	}
	return a, nil
}

// remoteServer returns the discovered remote server name, resolved.
func remoteServer(ctx context.Context, d *loader.Discovery, res *loader.Resolver, name string) (events.ServerConfig, error) {
	for _, s := range d.Servers {
		if s.Config.Name != name {
			continue
		}
		if t := s.Config.Transport(); t != events.TransportHTTP && t != events.TransportSSE {
			return events.ServerConfig{}, usagef("server %q is not a remote (http or sse) server", name)
		}
		return resolveRemote(ctx, res, s.Config)
	}
	return events.ServerConfig{}, usagef("no server %q discovered (see mcp-audit discover)", name)
}

// resolveRemote substitutes what connecting substitutes: the URL's
// references, the header values and the OAuth secrets.
func resolveRemote(ctx context.Context, res *loader.Resolver, cfg events.ServerConfig) (events.ServerConfig, error) {
	out, err := res.ResolveConfig(ctx, cfg)
	if err != nil {
		return out, usagef("%v", err)
	}
	out.URL, _ = res.Expand(out.URL)
	if o := out.OAuth; o != nil {
		for _, p := range []*string{&o.ClientSecret, &o.PrivateKey} {
			if *p == "" {
				continue
			}
			v, err := res.Resolve(ctx, *p)
			if err != nil {
				return out, usagef("server %q: oauth secret: %v", cfg.Name, err)
			}
			*p = v
		}
		o.ClientID, _ = res.Expand(o.ClientID)
	}
	return out, nil
}

// loginWaiting runs `run --login`'s browser login for each server that
// needs one; each connects after its login. Failures are printed and the
// run goes on with the other servers.
func loginWaiting(ctx context.Context, g *globals, s *session.Session) {
	m := s.Manager()
	for _, name := range m.NeedsAuth() {
		lctx, cancel := context.WithTimeout(ctx, loginTimeout)
		_, err := m.Login(lctx, name)
		cancel()
		if err != nil {
			fmt.Fprintf(g.stderr, "mcp-audit: %s\n", escapeLine(err.Error()))
		}
	}
}
