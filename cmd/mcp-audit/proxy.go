package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/sharedhost"
	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/session"
)

// runProxy is a stdio MCP server that relays one shared server: an agent
// that names `mcp-audit proxy SERVER` in its config in place of the
// server's command shares the server's process with every other agent
// process of the user, and has its use recorded.
func runProxy(ctx context.Context, g *globals, args []string) error {
	fs := newFlagSet("proxy", g)
	var df discoveryFlags
	df.register(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("proxy takes one SERVER (see mcp-audit discover for the names)")
	}
	name := pos[0]
	lopts, err := df.options()
	if err != nil {
		return err
	}
	d, err := loader.LoadConfigs(ctx, lopts)
	if err != nil {
		return usagef("discovery failed: %v", err)
	}
	configs, sources := d.Configs()
	cfg, ok := configs[name]
	if !ok {
		return usagef("no server %q in the configs (see mcp-audit discover --cwd %s)", name, lopts.Cwd)
	}
	if t := cfg.Transport(); t != events.TransportStdio {
		return usagef("proxy shares stdio servers; %q is %s", name, t)
	}
	cfg.Name = name
	_, j, closeStore, err := g.openJournal()
	if err != nil {
		return err
	}
	defer closeStore()
	logger := slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// The server's updates of the resources the agent subscribed to go to
	// it through the relay; the goroutines that tell it end before the
	// proxy returns, after the session closed.
	var relay atomic.Pointer[sharedhost.Relay]
	var telling sync.WaitGroup
	defer telling.Wait()
	updated := func(server, uri string) {
		if r := relay.Load(); r != nil && server == name {
			r.ResourceUpdated(uri)
		}
	}
	s, err := session.Start(ctx, j, &session.Options{
		Loader: lopts, Servers: []events.ServerConfig{cfg}, Sources: map[string]events.SourceMeta{name: sources[name]},
		Share:   shareOptions(true, g),
		Manager: &manager.Options{Gate: time.Minute, Logger: logger, OnResourceUpdated: updated},
	})
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		s.Close(cctx)
	}()
	m := s.Manager()
	if m.Status(name) != projector.StatusConnected {
		st, _ := m.View().Server(name)
		return fmt.Errorf("MCP server %q did not connect: %s", name, st.Error)
	}
	c, _ := sharedhost.LastConnected(ctx, j.Store(), s.ID(), name)
	r := sharedhost.NewRelay(m, name, c, &sharedhost.RelayOptions{Go: telling.Go})
	relay.Store(r)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	if updates, err := m.Watch(wctx); err == nil {
		go func() {
			for range updates {
				r.Sync()
			}
		}()
	}
	err = r.Server().Run(ctx, &mcp.IOTransport{Reader: os.Stdin, Writer: nopWriteCloser{g.stdout}})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// nopWriteCloser is a writer whose Close leaves it open: the proxy's
// stdout outlives its MCP connection.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
