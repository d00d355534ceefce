package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/mcplife/mcplife/internal/shared"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/session"
)

// runDaemon runs the user's shared host until it has neither servers nor
// hosts (or a signal ends it). Its first line on stdout says it listens
// ("ready") or found another shared host listening ("running"), which is
// what a host that started it waits for; its log goes to stderr.
func runDaemon(ctx context.Context, g *globals, args []string) error {
	fs := newFlagSet("daemon", g)
	socket := fs.String("socket", "", "the socket to listen on (default $XDG_RUNTIME_DIR/mcplife/shared.sock, else run/shared.sock in the state directory)")
	idle := fs.Duration("idle", 10*time.Minute, "how long a server keeps running after its last host detached")
	first := fs.Duration("first-host", time.Minute, "how long to wait for a first host before exiting")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("daemon takes no arguments")
	}
	if *idle <= 0 || *first <= 0 {
		return usagef("--idle and --first-host must be positive")
	}
	_, j, closeStore, err := g.openJournal()
	if err != nil {
		return err
	}
	defer closeStore()
	logger := slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	err = session.ServeShared(ctx, j, &session.SharedOptions{
		Socket: *socket, Idle: *idle, FirstHost: *first, Logger: logger,
		Ready: func() { fmt.Fprintln(g.stdout, shared.ReadyLine) },
	})
	if errors.Is(err, session.ErrSharedHostRunning) {
		fmt.Fprintln(g.stdout, shared.RunningLine)
		return nil
	}
	return err
}

// runningShare is run's sharing without --share: on, without starting a
// shared host, when one listens on the default socket.
func runningShare() *manager.ShareOptions {
	sock, err := shared.DefaultSocket()
	if err != nil || !shared.Alive(sock) {
		return nil
	}
	return &manager.ShareOptions{Socket: sock, NoStart: true}
}

// flagGiven reports whether the command line set the flag name.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// shareOptions are run's sharing options: a shared host on the default
// socket, started as this binary's daemon, on run's store, when none runs.
func shareOptions(on bool, g *globals) *manager.ShareOptions {
	if !on {
		return nil
	}
	o := &manager.ShareOptions{}
	if exe, err := os.Executable(); err == nil {
		o.Start = []string{exe}
		if g.db != "" {
			o.Start = append(o.Start, "--db", g.db)
		}
		o.Start = append(o.Start, "daemon")
	}
	return o
}
