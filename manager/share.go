package manager

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/shared"
	"github.com/mcplife/mcplife/manager/internal/transport"
)

// ShareOptions say how a manager uses shared servers: instead of starting
// a stdio server itself, it attaches to the user's shared host, which runs
// one process of the server for every host whose config hash, resolved
// values, working directory and roots are the same. The connection is
// recorded with transport "shared" and the shared host's instance id; the
// rest of the lifecycle (lists, calls, drops, reconnects) is as for any
// server. A shared server's process belongs to the shared host: this
// manager neither sees nor reaps it.
//
// When no shared host listens, the manager starts one (Start); when that
// fails too, it runs the server itself, records ServerConnected with
// transport "stdio" and logs why. A missing binary never fails a connect.
type ShareOptions struct {
	// Socket is the shared host's socket. Default:
	// $XDG_RUNTIME_DIR/mcplife/shared.sock, else run/shared.sock in the
	// state directory.
	Socket string
	// Start is the command that starts a shared host when none listens
	// ("--socket" and the socket are appended). Default: "mcp-audit
	// daemon", mcp-audit found on PATH.
	Start []string
	// NoStart: never start a shared host; without one, servers run in
	// this process.
	NoStart bool
}

// shareState is a manager's attachment to the shared host.
type shareState struct {
	mu     sync.Mutex
	client *shared.Client // nil until the first shared connect; replaced after its end
	// notes says, per server, how its latest connect went: shared (and
	// the instance) or run here; for its ServerConnected.
	notes map[string]shareNote
}

type shareNote struct {
	transport, instance string
}

// sharing reports whether cfg's server is to be attached to the shared
// host.
func (m *Manager) sharing(cfg events.ServerConfig) bool {
	return m.opts.Share != nil && m.opts.Dial == nil && cfg.Transport() == events.TransportStdio
}

// connectTransport is the transport a ConnectStarted of cfg records.
func (m *Manager) connectTransport(cfg events.ServerConfig) string {
	if m.sharing(cfg) {
		return events.TransportShared
	}
	return cfg.Transport()
}

// dialShared opens s's transport through the shared host, or, when there
// is none to be had, s's own process (and logs why).
func (m *Manager) dialShared(ctx context.Context, s *server, res transport.Resolved) (mcp.Transport, error) {
	// The server's connect timeout bounds finding the shared host and
	// the attach, which starts the server there.
	actx, cancel := ctx, context.CancelFunc(func() {})
	if s.timeout > 0 {
		actx, cancel = context.WithTimeout(ctx, s.timeout)
	}
	defer cancel()
	c, err := m.shareClient(actx)
	if err == nil {
		var (
			att shared.Attached
			t   mcp.Transport
		)
		att, t, err = c.AttachStream(actx, m.attachOf(s, res))
		if err == nil {
			m.noteShare(s.name, shareNote{events.TransportShared, att.Instance})
			return t, nil
		}
		if errors.Is(err, shared.ErrServerFailed) {
			return nil, err // it would fail here too
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	m.log.Warn("MCP server runs in this process, not shared", "server", s.name, "err", err)
	m.noteShare(s.name, shareNote{transport: events.TransportStdio})
	return m.dial(s.name, res.Cfg, res, m.opts.Cwd)
}

// attachOf is the attach request of s: the config as configured (for the
// instance key), what this manager would launch, and its roots.
func (m *Manager) attachOf(s *server, res transport.Resolved) shared.Attach {
	dir := m.opts.Cwd
	if c := res.Cfg.Cwd; c != "" {
		dir = c
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(m.opts.Cwd, dir)
		}
	}
	var roots []string
	for _, r := range m.rootsFor(s.cfg) {
		if u, err := url.Parse(r.URI); err == nil && u.Scheme == "file" {
			roots = append(roots, filepath.FromSlash(u.Path))
		}
	}
	return shared.Attach{Name: s.name, Config: s.cfg.Clone(), Command: res.Cfg.Command, Args: res.Cfg.Args, Cwd: filepath.Clean(dir), Env: res.Env, Roots: roots}
}

// shareClient returns the manager's control stream to the shared host,
// opening it (and starting a shared host when none listens) when there is
// none or the last one ended.
func (m *Manager) shareClient(ctx context.Context) (*shared.Client, error) {
	st := &m.share
	st.mu.Lock()
	defer st.mu.Unlock()
	if c := st.client; c != nil {
		select {
		case <-c.Done():
		default:
			return c, nil
		}
		st.client = nil
	}
	o := m.opts.Share
	sock := o.Socket
	if sock == "" {
		var err error
		if sock, err = shared.DefaultSocket(); err != nil {
			return nil, err
		}
	}
	hello := shared.Hello{Session: m.session, Pid: os.Getpid()}
	c, err := shared.Dial(ctx, sock, hello)
	if errors.Is(err, shared.ErrNoSharedHost) && !o.NoStart {
		cmd := o.Start
		if len(cmd) == 0 {
			bin, lerr := exec.LookPath("mcp-audit")
			if lerr != nil {
				return nil, fmt.Errorf("%w, and mcp-audit is not on PATH to start one", err)
			}
			cmd = []string{bin, "daemon"}
		}
		if serr := shared.Start(ctx, sock, cmd); serr != nil {
			return nil, fmt.Errorf("%w; starting one: %w", err, serr)
		}
		c, err = shared.Dial(ctx, sock, hello)
	}
	if err != nil {
		return nil, err
	}
	st.client = c
	return c, nil
}

// noteShare remembers how server's connect went, for its ServerConnected.
func (m *Manager) noteShare(server string, n shareNote) {
	m.share.mu.Lock()
	defer m.share.mu.Unlock()
	if m.share.notes == nil {
		m.share.notes = map[string]shareNote{}
	}
	m.share.notes[server] = n
}

// sharedConnected sets the transport and the instance of a ServerConnected
// of a server the manager was asked to share.
func (m *Manager) sharedConnected(c *events.ServerConnected) {
	if m.opts.Share == nil {
		return
	}
	m.share.mu.Lock()
	n, ok := m.share.notes[c.Server]
	m.share.mu.Unlock()
	if ok {
		c.Transport, c.SharedInstance = n.transport, n.instance
	}
}

// closeShare ends the control stream, which releases what the shared host
// still counted for this manager.
func (m *Manager) closeShare() {
	m.share.mu.Lock()
	c := m.share.client
	m.share.client = nil
	m.share.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// sharedFirstTools returns, once, the first page of tools/list of a shared
// server's connection as its attach answered it; ok is false when the
// page is to be asked for (another page, no attach answer, or another
// protocol version than the answer's).
func (lc *liveConn) sharedFirstTools(cursor string) (*mcp.ListToolsResult, bool) {
	if cursor != "" || lc.attach == nil || lc.cs == nil {
		return nil, false
	}
	init := lc.cs.InitializeResult()
	if init == nil {
		return nil, false
	}
	return shared.FirstTools(lc.attach, init.ProtocolVersion)
}
