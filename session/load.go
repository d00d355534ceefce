package session

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/manager"
)

// The loader's resolver is what the session's manager calls at every
// connect, for values and for command, args, url and cwd references.
var (
	_ manager.Resolver = (*loader.Resolver)(nil)
	_ manager.Expander = (*loader.Resolver)(nil)
)

// DiscoveryErrorPath is the path of the one error [DiscoverAndLoad]
// reports when discovery fails as a whole.
const DiscoveryErrorPath = ".mcp.json"

// LoadError is one problem met while loading MCP tools: a config file that
// could not be read (Path is the file), a server that could not be loaded
// (Path is "mcp:<server>"), or discovery failing as a whole (Path is
// [DiscoveryErrorPath]).
type LoadError struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// LoadResult is the outcome of [DiscoverAndLoad], or of a session's
// initial load. It is usable even when discovery failed: then Tools is
// empty and Errors holds one entry.
type LoadResult struct {
	Manager *manager.Manager
	// Tools is the manager's tool view at the startup gate, sorted by
	// name; [manager.Tool.Path] gives each one's display path.
	Tools      []*manager.Tool
	Errors     []LoadError
	ExaAPIKeys []string
	// Discovery is nil when discovery failed as a whole, and when the
	// servers were given ([Options.Servers]) rather than discovered.
	Discovery *loader.Discovery
	// Connect is the manager's result at the startup gate; nil when
	// discovery failed.
	Connect *manager.ConnectResult
}

// DiscoverAndLoad discovers server configs with opts, records every
// discovery outcome in m's session (ServerDiscovered, ServerSkipped,
// ServerInvalid, and DiscoveryFailed for unreadable files), connects the
// servers through m and returns at m's startup gate. It is what [Start]
// does, for a caller that owns its manager; opts is used as given (no
// defaults from the process).
//
// A discovery that fails as a whole is recorded as DiscoveryFailed and
// returned as one LoadError with path ".mcp.json" and no tools; the error
// result is nil, so the caller's session still starts. The error result is
// reserved for m refusing to connect (closed, or ctx ended).
func DiscoverAndLoad(ctx context.Context, m *manager.Manager, opts loader.Options) (*LoadResult, error) {
	return discoverAndLoad(ctx, m, opts, nil)
}

// discoverAndLoad is [DiscoverAndLoad]; found, when not nil, is called with
// a discovery that did not fail as a whole, before its servers connect.
func discoverAndLoad(ctx context.Context, m *manager.Manager, opts loader.Options, found func(*loader.Discovery)) (*LoadResult, error) {
	res := &LoadResult{Manager: m, Tools: []*manager.Tool{}, Errors: []LoadError{}}
	d, err := discoverAndRecord(ctx, m, opts)
	if err != nil {
		res.Errors = append(res.Errors, LoadError{Path: DiscoveryErrorPath, Error: err.Error()})
		return res, nil
	}
	res.Discovery = d
	if found != nil {
		found(d)
	}
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
	configs, sources := discovered(d)
	return res, connect(ctx, m, configs, sources, res)
}

// loadServers connects servers given by the host, without discovery.
func loadServers(ctx context.Context, m *manager.Manager, configs []events.ServerConfig, sources map[string]events.SourceMeta) (*LoadResult, error) {
	res := &LoadResult{Manager: m, Tools: []*manager.Tool{}, Errors: []LoadError{}}
	return res, connect(ctx, m, configs, sources, res)
}

// connect connects configs through m and adds the gate's result to res.
func connect(ctx context.Context, m *manager.Manager, configs []events.ServerConfig, sources map[string]events.SourceMeta, res *LoadResult) error {
	cr, err := m.ConnectServers(ctx, configs, sources)
	if cr != nil {
		res.Connect = cr
		for _, name := range slices.Sorted(maps.Keys(cr.Errors)) {
			res.Errors = append(res.Errors, LoadError{Path: "mcp:" + name, Error: cr.Errors[name].Error()})
		}
		res.Tools = cr.Tools
	}
	return err
}

// Discoverer returns a [manager.DiscoverFunc] for [manager.Manager.Reload]:
// each call rediscovers with opts and records the outcomes in m's session.
func Discoverer(m *manager.Manager, opts loader.Options) manager.DiscoverFunc {
	return func(ctx context.Context) ([]events.ServerConfig, map[string]events.SourceMeta, error) {
		d, err := discoverAndRecord(ctx, m, opts)
		if err != nil {
			return nil, nil, err
		}
		configs, sources := discovered(d)
		return configs, sources, nil
	}
}

// discoverAndRecord runs [loader.LoadConfigs] and records its outcomes. A
// failure as a whole is recorded as DiscoveryFailed and returned.
func discoverAndRecord(ctx context.Context, m *manager.Manager, opts loader.Options) (*loader.Discovery, error) {
	d, err := loader.LoadConfigs(ctx, opts)
	if err != nil {
		msg := events.RedactText(err.Error())
		if rerr := m.RecordDiscovery(context.WithoutCancel(ctx), &events.DiscoveryFailed{Path: DiscoveryErrorPath, Error: msg}); rerr != nil {
			return nil, fmt.Errorf("%w (and it was not recorded: %v)", err, rerr)
		}
		return nil, err
	}
	evs := d.Events()
	for _, fe := range d.Errors {
		evs = append(evs, &events.DiscoveryFailed{Path: fe.Path, Error: events.RedactText(fe.Error)})
	}
	if err := m.RecordDiscovery(ctx, evs...); err != nil {
		return nil, err
	}
	return d, nil
}

// discovered returns the servers d found to connect, in priority order,
// with their sources.
func discovered(d *loader.Discovery) ([]events.ServerConfig, map[string]events.SourceMeta) {
	configs := make([]events.ServerConfig, 0, len(d.Servers))
	sources := make(map[string]events.SourceMeta, len(d.Servers))
	for _, s := range d.Servers {
		configs = append(configs, s.Config)
		sources[s.Config.Name] = s.Source
	}
	return configs, sources
}
