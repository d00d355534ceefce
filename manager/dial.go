package manager

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/proc"
	"github.com/mcplife/mcplife/manager/internal/transport"
)

// dialer builds the transport of one connect attempt. The default is
// [Manager.newTransport]; tests of the lifecycle swap in in-memory
// transports.
type dialer func(name string, cfg events.ServerConfig, res transport.Resolved, cwd string) (mcp.Transport, error)

// newTransport returns the built-in transport for cfg (see
// [transport.New]), with the server's logger, the manager's bound on a
// message, the session's id and the teardown timings.
func (m *Manager) newTransport(name string, cfg events.ServerConfig, res transport.Resolved, cwd string) (mcp.Transport, error) {
	return transport.New(name, cfg, res, &transport.Options{
		Cwd: cwd, Log: m.log.With("server", name), MaxMessageSize: m.opts.MaxMessageSize, Session: m.session,
		StdinGrace: stdinGrace, TermGrace: termGrace,
	})
}

// Teardown timings of stdio servers (see [proc.Options]). Variables, not
// constants, so tests of the signal path need not wait for the defaults.
var (
	// stdinGrace is how long a server may take to exit after its stdin was
	// closed before it is signalled (on Unix its process group receives
	// SIGTERM; elsewhere the process is killed).
	stdinGrace = proc.DefaultStdinGrace
	// termGrace is how long the group may take to exit after SIGTERM
	// before it receives SIGKILL.
	termGrace = proc.DefaultTermGrace
)

// dialHost opens s's transport with Options.Dial. A nil transport without
// an error is the host's bug, reported as a connect error of s.
func (m *Manager) dialHost(ctx context.Context, s *server, res transport.Resolved) (mcp.Transport, error) {
	cfg := res.Cfg.Clone()
	cfg.Env, cfg.Headers = res.Env, res.Headers
	t, err := m.opts.Dial(ctx, cfg)
	if err == nil && t == nil {
		err = errors.New("Options.Dial returned no transport")
	}
	return t, err
}
