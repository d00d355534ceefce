package transport

import (
	"context"
	"log/slog"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/oauth"
)

// Resolver resolves one env or header value of a server configuration at
// connect time: a "!command" value, a value with ${VAR} references, or a
// literal. The loader provides the real implementation; the default
// passes every value through unchanged.
//
// Resolve is called at every connect and reconnect, possibly concurrently
// for several servers, so implementations must be safe for concurrent use.
// An error omits that entry from the connection; its message is logged and
// must therefore not contain the value or its resolution.
type Resolver interface {
	Resolve(ctx context.Context, value string) (string, error)
}

// Expander is an optional capability of a [Resolver]: it expands the
// ${VAR} references of a server's command, arguments, URL and working
// directory at connect time (what discovery records keeps the reference,
// never the value). subst lists the values substituted; they
// are treated as secrets and scrubbed from every error and stderr excerpt.
// Without it those fields are used as configured.
//
// Expand is called at every connect, possibly concurrently.
type Expander interface {
	Expand(value string) (expanded string, subst []string)
}

// NoResolver is the default [Resolver]: every value is used literally.
type NoResolver struct{}

// Resolve returns value unchanged.
func (NoResolver) Resolve(_ context.Context, value string) (string, error) { return value, nil }

var _ Resolver = NoResolver{}

// Resolved is one connect attempt's substituted configuration. Every
// substituted value is a secret: it goes to the child process or the HTTP
// request and nowhere else.
type Resolved struct {
	// Cfg is the configuration with its command, arguments, URL and
	// working directory expanded (see [Expander]); its env and headers are
	// the unresolved ones.
	Cfg events.ServerConfig
	// Env and Headers are the resolved env and header values.
	Env     map[string]string
	Headers map[string]string
	// OAuth is the OAuth handler of a streamable HTTP connect (nil: none).
	OAuth auth.OAuthHandler
	// scrub replaces every resolved value, every configured value and
	// every credential-like value of the inherited environment inside a
	// text with [events.Redacted].
	scrub *strings.Replacer
	// lists replaces the secrets that are looked for in server-supplied
	// texts (see listSecret), in their plain and JSON-escaped forms.
	lists *strings.Replacer
}

// scrubOAuth replaces the tokens and secrets that the connection's OAuth
// handler has seen so far in s; they change as tokens are refreshed, so
// they are asked for each time.
func (r Resolved) scrubOAuth(s string) string {
	if r.OAuth == nil {
		return s
	}
	for _, secret := range oauth.Secrets(r.OAuth) {
		s = strings.ReplaceAll(s, secret, events.Redacted)
	}
	return s
}

// schemeCredential matches a header value made of an authorization scheme
// and one credential: "Bearer …", "Basic …", "Token …".
var schemeCredential = regexp.MustCompile(`^\s*[A-Za-z][A-Za-z0-9_-]*\s+(\S+)\s*$`)

// minSecretLen is the shortest value scrubbed from error texts; shorter
// values ("1", "on") would garble messages without protecting anything.
const minSecretLen = 4

// Resolve substitutes cfg through r: the env and header values, and
// (when r is an [Expander]) the references in the command, arguments, URL
// and working directory. An env or header entry whose resolution fails is
// omitted and the reason logged (without the value).
func Resolve(ctx context.Context, server string, cfg events.ServerConfig, r Resolver, log *slog.Logger) Resolved {
	// Clipped: appending must not write into the shared slice.
	secrets := slices.Clip(processSecrets.of(os.Environ()))
	// Literal credentials in the arguments and the URL path are passed as
	// written, and a server that prints them must not carry them into an
	// event either.
	secrets = append(secrets, events.ArgSecrets(append(slices.Clip(cfg.Args), cfg.URL))...)
	do := func(kind string, in map[string]string) map[string]string {
		if len(in) == 0 {
			return nil
		}
		out := make(map[string]string, len(in))
		for _, k := range slices.Sorted(maps.Keys(in)) {
			v := in[k]
			secrets = append(secrets, v)
			rv, err := r.Resolve(ctx, v)
			if err != nil {
				log.Warn("MCP config value omitted", "server", server, kind, k, "err", events.RedactText(err.Error()))
				continue
			}
			secrets = append(secrets, rv)
			if m := schemeCredential.FindStringSubmatch(rv); kind == "header" && m != nil {
				// A server may say the credential back without its
				// scheme ("Bearer …").
				secrets = append(secrets, m[1])
			}
			out[k] = rv
		}
		return out
	}
	res := Resolved{Cfg: cfg.Clone(), Env: do("env", cfg.Env), Headers: do("header", cfg.Headers)}
	if x, ok := r.(Expander); ok {
		expand := func(v string) string {
			out, subst := x.Expand(v)
			secrets = append(secrets, subst...)
			return out
		}
		c := &res.Cfg
		c.Command, c.URL, c.Cwd = expand(c.Command), expand(c.URL), expand(c.Cwd)
		for i, a := range c.Args {
			c.Args[i] = expand(a)
		}
		if o := c.OAuth; o != nil {
			o.ClientID = expand(o.ClientID)
		}
	}
	if o := res.Cfg.OAuth; o != nil {
		// The client secret and key are resolved like header values.
		for _, p := range []*string{&o.ClientSecret, &o.PrivateKey} {
			if *p == "" {
				continue
			}
			secrets = append(secrets, *p)
			v, err := r.Resolve(ctx, *p)
			if err != nil {
				log.Warn("MCP config value omitted", "server", server, "oauth", "secret", "err", events.RedactText(err.Error()))
				*p = ""
				continue
			}
			secrets = append(secrets, v)
			*p = v
		}
	}
	res.scrub = newScrubber(secrets)
	res.lists = newListScrubber(secrets)
	return res
}

// processSecrets remembers inheritedSecrets of the last environment seen:
// the process's environment seldom changes, and matching every name against
// the credential pattern at each connect cost more than the rest of
// resolving a config.
var processSecrets secretMemo

type secretMemo struct {
	mu      sync.Mutex
	environ []string
	secrets []string
}

// of returns inheritedSecrets(environ), computed again only when environ
// differs from the last one. The result is shared: callers must not modify
// it.
func (c *secretMemo) of(environ []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.environ == nil || !slices.Equal(c.environ, environ) {
		c.environ, c.secrets = environ, inheritedSecrets(environ)
	}
	return c.secrets
}

// inheritedSecrets returns the values of the variables in environ (KEY=VALUE
// entries, as [os.Environ] gives them) whose names look like credentials
// ([events.IsCredentialName]: GITHUB_PAT, OPENAI_API_KEY, …). A child
// process inherits them, and a server that prints its environment must not
// carry them into an event.
func inheritedSecrets(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && v != "" && events.IsCredentialName(k) {
			out = append(out, v)
		}
	}
	return out
}

// newScrubber returns a replacer of every secret of at least minSecretLen
// bytes by [events.Redacted], longest first.
func newScrubber(secrets []string) *strings.Replacer {
	secrets = slices.DeleteFunc(slices.Clone(secrets), func(s string) bool { return len(s) < minSecretLen })
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	secrets = slices.Compact(secrets)
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		pairs = append(pairs, s, events.Redacted)
	}
	return strings.NewReplacer(pairs...)
}

// ScrubText removes resolved secrets and credential-like parameters from a
// text that may be recorded.
func (r Resolved) ScrubText(s string) string {
	if r.scrub != nil {
		s = r.scrub.Replace(s)
	}
	return events.RedactText(r.scrubOAuth(s))
}
