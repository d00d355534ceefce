package manager

import "context"

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

// PassThrough is the default [Resolver]: every value is used literally.
type PassThrough struct{}

// Resolve returns value unchanged.
func (PassThrough) Resolve(_ context.Context, value string) (string, error) { return value, nil }

// ResolverFunc adapts a function to [Resolver].
type ResolverFunc func(ctx context.Context, value string) (string, error)

// Resolve calls f.
func (f ResolverFunc) Resolve(ctx context.Context, value string) (string, error) {
	return f(ctx, value)
}

var _ Resolver = PassThrough{}
var _ Resolver = ResolverFunc(nil)
