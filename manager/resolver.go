package manager

import "github.com/mcplife/mcplife/manager/internal/transport"

// Resolver resolves one env or header value of a server configuration at
// connect time: a "!command" value, a value with ${VAR} references, or a
// literal. The loader provides the real implementation; the default
// passes every value through unchanged.
//
// Resolve is called at every connect and reconnect, possibly concurrently
// for several servers, so implementations must be safe for concurrent use.
// An error omits that entry from the connection; its message is logged and
// must therefore not contain the value or its resolution.
//
// Its one method:
//
//	Resolve(ctx context.Context, value string) (string, error)
type Resolver = transport.Resolver

// Expander is an optional capability of a [Resolver]: it expands the
// ${VAR} references of a server's command, arguments, URL and working
// directory at connect time (what discovery records keeps the reference,
// never the value). subst lists the values substituted; they
// are treated as secrets and scrubbed from every error and stderr excerpt.
// Without it those fields are used as configured.
//
// Expand is called at every connect, possibly concurrently. Its one
// method:
//
//	Expand(value string) (expanded string, subst []string)
type Expander = transport.Expander
