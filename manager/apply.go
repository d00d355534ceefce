package manager

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/mcplife/mcplife/events"
)

// ApplyConfigs applies an edit of the session's config files: configs is
// the whole new set of server configs (as rediscovered) and paths names
// the files whose change prompted it. It compares configs by config hash
// with what the manager runs, records ConfigChanged {paths, added,
// changed, removed} (names sorted) before it acts on any server, and then:
//
//   - removed: a server the manager runs (connected, connecting or
//     reconnecting) that configs no longer holds is disconnected
//     (Disconnected, reason config changed) and forgotten;
//   - changed: a running server whose config hash differs is disconnected
//     the same way and connected with its new config. A server that is not
//     running (its connect failed, its reconnects gave up, or it was
//     disconnected) is connected when its config changed: the edit is
//     taken as an attempt to fix it;
//   - added: a server the manager does not know (never seen, or forgotten)
//     is connected.
//
// Every other server is left alone: a running server whose config did not
// change keeps its connection and its calls in flight (only its source is
// updated, with a ServerDiscovered, when it moved to another file), and a
// server that is not running and whose config did not change stays as it
// is, since an edit elsewhere is no reason to retry it. A server that is
// not running and that configs no longer holds is forgotten without an
// event.
//
// ConfigChanged and the Disconnected events share a correlation id.
// Added and changed servers get a fresh crash-loop breaker and are
// connected by [Manager.ConnectServers]; ApplyConfigs returns its result
// at the startup gate: Connected and Errors concern the added and changed
// servers, Tools is the whole view. ApplyConfigs runs one at a time with
// [Manager.Reload]. It returns [ErrClosed] when the manager is closed,
// and ctx.Err() when ctx ends before the gate (a teardown then completes
// in the background).
func (m *Manager) ApplyConfigs(ctx context.Context, paths []string, configs []events.ServerConfig, sources map[string]events.SourceMeta) (*ConnectResult, error) {
	m.reloadMu.Lock()
	defer m.reloadMu.Unlock()
	id := m.configCorrelation()
	cfgs := sortedConfigs(configs)

	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	d := m.diffConfigs(cfgs, sources)
	// Queued under m.mu, so nothing recorded of these servers after the
	// comparison comes before it.
	m.emitDeferred(id, append([]events.Event{&events.ConfigChanged{
		Paths: sortedPaths(paths), Added: d.added, Changed: d.changed, Removed: d.removed,
	}}, d.moved...)...)
	for _, name := range slices.Concat(d.removed, d.forgotten) {
		delete(m.sources, name)
		delete(m.discovered, name)
	}
	// ConnectServers re-arms the servers it starts too; this also covers
	// one it finds already started by a connect racing with the edit.
	for _, name := range slices.Concat(d.added, d.changed) {
		m.rearm(name)
	}
	m.mu.Unlock()
	if err := m.flush(context.WithoutCancel(ctx)); err != nil {
		m.log.Warn("MCP config change: record", "err", err)
	}

	stop := slices.Concat(d.removed, d.restart)
	for len(stop) > 0 {
		if err := m.disconnect(ctx, stop, events.ReasonConfigChanged, id); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			m.log.Warn("MCP config change: disconnect", "err", err)
		}
		stop = m.staleAfter(d)
	}
	return m.ConnectServers(ctx, d.start, sources)
}

// RecordConfigError records that a change of the config files at paths
// could not be applied: ConfigChanged {paths, error}, with err's text
// redacted. Every server stays as it is. It runs one at a time with
// [Manager.ApplyConfigs] and [Manager.Reload], and returns the error of
// recording, or [ErrClosed] when the manager is closed.
func (m *Manager) RecordConfigError(paths []string, err error) error {
	m.reloadMu.Lock()
	defer m.reloadMu.Unlock()
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return ErrClosed
	}
	msg := "unknown error"
	if err != nil {
		msg = events.RedactText(err.Error())
	}
	if rerr := m.emitCorrelated(m.configCorrelation(), &events.ConfigChanged{Paths: sortedPaths(paths), Error: msg}); rerr != nil {
		return fmt.Errorf("manager: record config change: %w", rerr)
	}
	return nil
}

// configDiff is what an edit of the configs changes, by name, each list
// sorted.
type configDiff struct {
	added, changed, removed []string
	// restart are the changed servers that are running; forgotten are the
	// servers not running that the configs no longer hold.
	restart, forgotten []string
	// start are the configs of the added and changed servers.
	start []events.ServerConfig
	// moved are the ServerDiscovered events of unchanged running servers
	// whose source changed.
	moved []events.Event
	// hash is each new config's hash.
	hash map[string]string
}

// diffConfigs compares cfgs (sorted by name) with the servers the manager
// knows, and takes the sources of the servers it leaves running. Requires
// m.mu.
func (m *Manager) diffConfigs(cfgs []events.ServerConfig, sources map[string]events.SourceMeta) configDiff {
	d := configDiff{hash: make(map[string]string, len(cfgs))}
	for _, cfg := range cfgs {
		name, hash := cfg.Name, cfg.Hash()
		d.hash[name] = hash
		if s := m.servers[name]; s != nil {
			if s.hash == hash {
				if src, ok := sources[name]; ok && m.discovered[name] != (discovery{hash, src}) {
					m.sources[name] = src
					m.discovered[name] = discovery{hash, src}
					d.moved = append(d.moved, &events.ServerDiscovered{
						Server: name, Source: src, Transport: cfg.Transport(), ConfigHash: hash, Config: cfg.Redact(),
					})
				}
				continue
			}
			d.changed = append(d.changed, name)
			d.restart = append(d.restart, name)
			d.start = append(d.start, cfg)
			continue
		}
		known, ok := m.discovered[name]
		switch {
		case !ok:
			d.added = append(d.added, name)
			d.start = append(d.start, cfg)
		case known.hash != hash:
			d.changed = append(d.changed, name)
			d.start = append(d.start, cfg)
		}
	}
	for name := range m.servers {
		if _, ok := d.hash[name]; !ok {
			d.removed = append(d.removed, name)
		}
	}
	for name := range m.discovered {
		if _, ok := d.hash[name]; !ok && m.servers[name] == nil {
			d.forgotten = append(d.forgotten, name)
		}
	}
	slices.Sort(d.removed)
	slices.Sort(d.forgotten)
	return d
}

// staleAfter returns the servers of d that still run with a config d
// removes or replaces after their teardown: a reconnect that took the
// place of one that dropped meanwhile.
func (m *Manager) staleAfter(d configDiff) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, name := range slices.Concat(d.removed, d.restart) {
		s := m.servers[name]
		if s == nil || s.ending() {
			continue
		}
		if hash, ok := d.hash[name]; !ok || s.hash != hash {
			out = append(out, name)
		}
	}
	return out
}

// configCorrelation returns the correlation id of a config change; it
// shares its sequence with reloads.
func (m *Manager) configCorrelation() string {
	return "config-" + strconv.FormatUint(m.reloadSeq.Add(1), 10)
}

// sortedPaths returns a sorted copy of paths, never nil.
func sortedPaths(paths []string) []string {
	out := slices.Clone(paths)
	if out == nil {
		out = []string{}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
