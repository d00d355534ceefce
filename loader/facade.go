package loader

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/manager"
)

// DiscoveryErrorPath is the path of the one error DiscoverAndLoad reports
// when discovery fails as a whole.
const DiscoveryErrorPath = ".mcp.json"

// LoadedTool is one MCP tool ready for an agent's tool registry.
type LoadedTool struct {
	// Name is the exposed name, mcp_<server>_<tool>.
	Name string
	// Path says where the tool comes from: "mcp:<server> via
	// <providerName>" when the provider is known, else "mcp:<server>".
	Path string
	Tool *manager.Tool
}

// LoadError is one problem DiscoverAndLoad met: a config file that could
// not be read (Path is the file), a server that could not be loaded (Path
// is "mcp:<server>"), or discovery failing as a whole (Path is
// DiscoveryErrorPath).
type LoadError struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// LoadResult is the outcome of DiscoverAndLoad. It is usable even when
// discovery failed: then Tools is empty and Errors holds one entry.
type LoadResult struct {
	Manager    *manager.Manager
	Tools      []LoadedTool
	Errors     []LoadError
	ExaAPIKeys []string
	// Discovery is nil when discovery failed as a whole.
	Discovery *Discovery
	// Connect is the manager's result at the startup gate; nil when
	// discovery failed.
	Connect *manager.ConnectResult
}

// DiscoverAndLoad discovers server configs with opts, records every
// discovery outcome in m's session (ServerDiscovered, ServerSkipped,
// ServerInvalid, and DiscoveryFailed for unreadable files), connects the
// servers through m and returns at m's startup gate.
//
// A discovery that fails as a whole is recorded as DiscoveryFailed and
// returned as one LoadError with path ".mcp.json" and no tools; the error
// result is nil, so the caller's session still starts. The error result is
// reserved for m refusing to connect (closed, or ctx ended).
func DiscoverAndLoad(ctx context.Context, m *manager.Manager, opts Options) (*LoadResult, error) {
	res := &LoadResult{Manager: m, Tools: []LoadedTool{}, Errors: []LoadError{}}
	d, err := discoverAndRecord(ctx, m, opts)
	if err != nil {
		res.Errors = append(res.Errors, LoadError{Path: DiscoveryErrorPath, Error: err.Error()})
		return res, nil
	}
	res.Discovery = d
	res.ExaAPIKeys = slices.Clone(d.ExaAPIKeys)
	for _, fe := range d.Errors {
		res.Errors = append(res.Errors, LoadError{Path: fe.Path, Error: fe.Error})
	}
	for _, s := range d.Skipped {
		if s.Reason == events.SkipInvalid {
			// The detail names the server; the position names the file.
			res.Errors = append(res.Errors, LoadError{Path: "mcp:" + s.Name, Error: s.Position + ": " + s.Detail})
		}
	}
	configs, sources := d.ordered()
	cr, err := m.ConnectServers(ctx, configs, sources)
	if cr != nil {
		res.Connect = cr
		for _, name := range sortedKeys(cr.Errors) {
			res.Errors = append(res.Errors, LoadError{Path: "mcp:" + name, Error: cr.Errors[name].Error()})
		}
		res.Tools = LoadedTools(cr.Tools)
	}
	return res, err
}

// Discoverer returns a [manager.DiscoverFunc] for [manager.Manager.Reload]:
// each call rediscovers with opts and records the outcomes in m's session.
func Discoverer(m *manager.Manager, opts Options) manager.DiscoverFunc {
	return func(ctx context.Context) ([]events.ServerConfig, map[string]events.SourceMeta, error) {
		d, err := discoverAndRecord(ctx, m, opts)
		if err != nil {
			return nil, nil, err
		}
		configs, sources := d.ordered()
		return configs, sources, nil
	}
}

// discoverAndRecord runs LoadConfigs and records its outcomes. A failure
// as a whole is recorded as DiscoveryFailed and returned.
func discoverAndRecord(ctx context.Context, m *manager.Manager, opts Options) (*Discovery, error) {
	d, err := LoadConfigs(ctx, opts)
	if err != nil {
		msg := events.RedactText(err.Error())
		if rerr := m.Record(context.WithoutCancel(ctx), &events.DiscoveryFailed{Path: DiscoveryErrorPath, Error: msg}); rerr != nil {
			return nil, fmt.Errorf("%w (and it was not recorded: %v)", err, rerr)
		}
		return nil, err
	}
	evs := d.Events()
	for _, fe := range d.Errors {
		evs = append(evs, &events.DiscoveryFailed{Path: fe.Path, Error: events.RedactText(fe.Error)})
	}
	if err := m.Record(ctx, evs...); err != nil {
		return nil, err
	}
	return d, nil
}

// ordered returns the servers to connect in priority order, with sources.
func (d *Discovery) ordered() ([]events.ServerConfig, map[string]events.SourceMeta) {
	configs := make([]events.ServerConfig, 0, len(d.Servers))
	sources := make(map[string]events.SourceMeta, len(d.Servers))
	for _, s := range d.Servers {
		configs = append(configs, s.Config)
		sources[s.Config.Name] = s.Source
	}
	return configs, sources
}

// LoadedTools decorates manager tools with their display paths.
func LoadedTools(tools []*manager.Tool) []LoadedTool {
	out := make([]LoadedTool, 0, len(tools))
	for _, t := range tools {
		out = append(out, LoadedTool{Name: t.Name, Path: DisplayPath(t.Server, t.ProviderName), Tool: t})
	}
	return out
}

// DisplayPath returns "mcp:<server> via <providerName>", or "mcp:<server>"
// when the provider is unknown.
func DisplayPath(server, providerName string) string {
	if strings.TrimSpace(providerName) == "" {
		return "mcp:" + server
	}
	return "mcp:" + server + " via " + providerName
}
