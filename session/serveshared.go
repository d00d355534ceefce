package session

import (
	"context"
	"errors"
	"log/slog"
	"time"

	sharedsock "github.com/mcplife/mcplife/internal/shared"
	"github.com/mcplife/mcplife/internal/sharedhost"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/manager"
)

// ErrSharedHostRunning is returned by [ServeShared] when another shared
// host already listens on the socket.
var ErrSharedHostRunning = sharedsock.ErrRunning

// SharedOptions configure [ServeShared]. Nil or zero fields mean
// defaults.
type SharedOptions struct {
	// ID is the shared host's session id; empty means a new one.
	ID string
	// Socket is where it listens. Default: $XDG_RUNTIME_DIR/mcplife/shared.sock,
	// else run/shared.sock in the state directory (the default of
	// [manager.ShareOptions.Socket]).
	Socket string
	// Idle is how long a server keeps running after its last host
	// detached (default 10 min).
	Idle time.Duration
	// FirstHost is how long the shared host waits for its first host
	// before it ends (default 1 min).
	FirstHost time.Duration
	// Manager configures the shared host's manager (its Share is
	// ignored); nil means defaults.
	Manager *manager.Options
	// Logger receives the shared host's problems (default: discard).
	Logger *slog.Logger
	// Ready, when set, is called once the shared host listens.
	Ready func()
}

// ServeShared runs a shared host: it owns the stdio servers of every
// host process of this user that attaches with [manager.Options.Share]
// (mcp-audit run --share), one process for each server whose config hash,
// resolved values, working directory and roots are the same, and records
// their lifecycle, every host that attached and detached, and the calls
// made through it in a session of its own in j (nil: the default store,
// as [Start] opens it).
//
// It listens on a Unix socket (directory 0700, socket 0600; a peer of
// another uid is refused) and returns when ctx ends, or when it has
// neither servers nor hosts: its last server stopped Idle after its last
// host detached, or no host came within FirstHost. Another shared host
// listening on the socket ends it at once with [ErrSharedHostRunning]; a
// socket its dead shared host left behind is replaced. On a platform
// whose local sockets cannot name their peer it returns an error saying
// sharing is off.
func ServeShared(ctx context.Context, j *journal.Journal, opts *SharedOptions) error {
	var o SharedOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ID == "" {
		o.ID = journal.NewSessionID()
	}
	sock := o.Socket
	if sock == "" {
		var err error
		if sock, err = sharedsock.DefaultSocket(); err != nil {
			return err
		}
	}
	l, err := sharedsock.Listen(sock)
	if err != nil {
		return err
	}
	sharedsock.OnRefused(l, func(uid int, err error) {
		o.Logger.Warn("shared host: refused a peer of another user", "uid", uid, "err", err)
	})
	if j == nil {
		dj, err := openDefaultJournal(o.Logger)
		if err != nil {
			l.Close()
			return err
		}
		defer dj.close()
		j = dj.j
	}
	err = sharedhost.Serve(ctx, l, j, o.ID, &sharedhost.Options{
		Idle: o.Idle, FirstHost: o.FirstHost, Manager: o.Manager, Logger: o.Logger, Ready: o.Ready,
	})
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}
