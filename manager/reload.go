package manager

import (
	"context"
	"fmt"
	"strconv"

	"github.com/mcplife/mcplife/events"
)

// DiscoverFunc rediscovers server configs for [Manager.Reload].
type DiscoverFunc func(ctx context.Context) ([]events.ServerConfig, map[string]events.SourceMeta, error)

// Reload disconnects every server, rediscovers configs through discover and
// connects them as [Manager.ConnectServers] does, recording ReloadRequested and
// ReloadCompleted (and the Disconnected events of the teardown) under one
// correlation id. Concurrent reloads run one after another. When discover
// fails, DiscoveryFailed is recorded, no server is connected, and the
// error is returned with the (empty) result.
func (m *Manager) Reload(ctx context.Context, discover DiscoverFunc) (*ConnectResult, error) {
	m.reloadMu.Lock()
	defer m.reloadMu.Unlock()
	id := "reload-" + strconv.FormatUint(m.reloadSeq.Add(1), 10)
	begin := m.now()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	n := len(m.servers)
	m.mu.Unlock()
	m.emitCorrelated(id, &events.ReloadRequested{Servers: n})
	if err := m.disconnectAll(ctx, events.ReasonReload, id); err != nil {
		m.log.Warn("MCP reload: disconnect", "err", err)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	m.yield("reload.discover", "")
	configs, sources, err := discover(ctx)
	if err != nil {
		m.emitCorrelated(id, &events.DiscoveryFailed{Path: ".mcp.json", Error: events.RedactText(err.Error())},
			&events.ReloadCompleted{Duration: m.now().Sub(begin)})
		return &ConnectResult{Errors: map[string]error{}, Tools: m.Tools()}, fmt.Errorf("manager: reload: discover: %w", err)
	}
	res, err := m.ConnectServers(ctx, configs, sources)
	done := &events.ReloadCompleted{Servers: len(configs), Duration: m.now().Sub(begin)}
	if res != nil {
		done.Failed, done.Tools = len(res.Errors), len(res.Tools)
	}
	m.emitCorrelated(id, done)
	return res, err
}
