package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
)

// Resources and prompts. A server that advertises them has them listed
// (all pages) once its first tool list is in, and again when it says a
// list changed; each list is recorded (ResourcesListed, PromptsListed)
// when it differs from the last one recorded, and the session's view
// holds the latest. Reading a resource, getting a prompt, completing an
// argument and subscribing go to the server's live connection.

// surfaceLists lists resources and prompts of a connected server when it
// advertises them, beside its first tools/list, then leaves what it
// listed in lc.surface and closes lc.surfaceReady: the re-lists on their
// list_changed notifications are cases of serve's select.
func (m *Manager) surfaceLists(s *server, lc *liveConn, reconnect bool) {
	defer close(lc.surfaceReady)
	// After the first resource list, which maps recorded URIs back to
	// the server's own (subscriptions.go).
	defer m.resubscribe(s, lc)
	caps := lc.cs.InitializeResult()
	if caps == nil || caps.Capabilities == nil {
		m.replaceCachedSurface(s, lc, false, false)
		return
	}
	sf := &lc.surface
	sf.resources, sf.prompts = caps.Capabilities.Resources != nil, caps.Capabilities.Prompts != nil
	m.replaceCachedSurface(s, lc, sf.resources, sf.prompts)
	cause := events.CauseInitial
	if reconnect {
		cause = events.CauseReconnect
	}
	if sf.resources {
		sf.lastResources = m.listResources(s, lc, cause, "")
	}
	if sf.prompts {
		sf.lastPrompts = m.listPrompts(s, lc, cause, "")
	}
}

// surfaceState is what a connection's first resource and prompt lists
// found: whether it has each kind, and the hash of the last list of each
// recorded. surfaceLists writes it before it closes surfaceReady; serve
// owns it after.
type surfaceState struct {
	resources, prompts         bool
	lastResources, lastPrompts string
	prevResources, prevPrompts time.Time // the last re-list of each
}

// replaceCachedSurface records empty lists for the kinds served to s from
// the cache at the gate that s does not advertise now, so the session no
// longer shows them.
func (m *Manager) replaceCachedSurface(s *server, lc *liveConn, hasResources, hasPrompts bool) {
	m.mu.Lock()
	resources, prompts := s.cachedResources && !hasResources, s.cachedPrompts && !hasPrompts
	s.cachedResources, s.cachedPrompts = false, false
	m.mu.Unlock()
	if resources {
		m.emitSurface(s, lc, &events.ResourcesListed{Server: s.name, ConfigHash: s.hash, Resources: []events.ResourceDef{},
			Hash: events.HashList([]any{[]events.ResourceDef{}, []events.ResourceTemplateDef(nil)}), Cause: events.CauseInitial})
	}
	if prompts {
		m.emitSurface(s, lc, &events.PromptsListed{Server: s.name, ConfigHash: s.hash, Prompts: []events.PromptDef{},
			Hash: events.HashList([]events.PromptDef{}), Cause: events.CauseInitial})
	}
}

// listResources lists the resources and templates of s and records them
// unless their hash is last; it returns the hash of what is recorded now.
func (m *Manager) listResources(s *server, lc *liveConn, cause events.ListCause, last string) string {
	ctx, cancel := m.listContext(s, lc)
	defer cancel()
	begin := m.now()
	ev := &events.ResourcesListed{Server: s.name, ConfigHash: s.hash, Resources: []events.ResourceDef{}, Cause: cause}
	hints := hintsFold{off: !carriesHints(lc.cs)} // of the resource and template pages together
	err := m.paginate(ctx, s, "resources/list", "resources", func(ctx context.Context, cursor string) (int, string, error) {
		res, err := lc.cs.ListResources(ctx, &mcp.ListResourcesParams{Meta: m.logMeta(lc), Cursor: cursor})
		if err != nil {
			return 0, "", err
		}
		hints.add(res.Cacheable)
		for _, r := range res.Resources {
			ev.Resources = append(ev.Resources, events.ResourceDef{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description,
				MIMEType: r.MIMEType, Size: r.Size, Annotations: rawJSON(r.Annotations), Icons: rawList(r.Icons)})
		}
		return len(ev.Resources), res.NextCursor, nil
	})
	if err != nil {
		m.log.Warn("MCP resources/list failed", "server", s.name, "err", lc.res.ScrubText(err.Error()))
		return last
	}
	err = m.paginate(ctx, s, "resources/templates/list", "resource templates", func(ctx context.Context, cursor string) (int, string, error) {
		res, err := lc.cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Meta: m.logMeta(lc), Cursor: cursor})
		if err != nil {
			return 0, "", err
		}
		hints.add(res.Cacheable)
		for _, r := range res.ResourceTemplates {
			ev.Templates = append(ev.Templates, events.ResourceTemplateDef{URITemplate: r.URITemplate, Name: r.Name, Title: r.Title,
				Description: r.Description, MIMEType: r.MIMEType, Annotations: rawJSON(r.Annotations), Icons: rawList(r.Icons)})
		}
		return len(ev.Templates), res.NextCursor, nil
	})
	// Templates are optional: a server without them may refuse the
	// method (the pages before a refusal are kept), but not list too many.
	if errors.Is(err, ErrListTooLong) {
		m.log.Warn("MCP resources/templates/list failed", "server", s.name, "err", err)
		return last
	}
	ev.Count, ev.Duration, ev.CacheHints = len(ev.Resources), m.now().Sub(begin), hints.hints(lc)
	live := lc.res.ScrubResources(ev)
	m.mu.Lock()
	lc.names.resources = live
	m.mu.Unlock()
	ev.Hash = events.HashList([]any{ev.Resources, ev.Templates})
	if ev.Hash != last && s.ctx.Err() == nil {
		m.emitSurface(s, lc, ev)
	}
	return ev.Hash
}

// listPrompts lists the prompts of s and records them unless their hash is
// last; it returns the hash of what is recorded now.
func (m *Manager) listPrompts(s *server, lc *liveConn, cause events.ListCause, last string) string {
	ctx, cancel := m.listContext(s, lc)
	defer cancel()
	begin := m.now()
	ev := &events.PromptsListed{Server: s.name, ConfigHash: s.hash, Prompts: []events.PromptDef{}, Cause: cause}
	hints := hintsFold{off: !carriesHints(lc.cs)}
	err := m.paginate(ctx, s, "prompts/list", "prompts", func(ctx context.Context, cursor string) (int, string, error) {
		res, err := lc.cs.ListPrompts(ctx, &mcp.ListPromptsParams{Meta: m.logMeta(lc), Cursor: cursor})
		if err != nil {
			return 0, "", err
		}
		hints.add(res.Cacheable)
		for _, p := range res.Prompts {
			d := events.PromptDef{Name: p.Name, Title: p.Title, Description: p.Description, Icons: rawList(p.Icons)}
			for _, a := range p.Arguments {
				d.Arguments = append(d.Arguments, events.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
			}
			ev.Prompts = append(ev.Prompts, d)
		}
		return len(ev.Prompts), res.NextCursor, nil
	})
	if err != nil {
		m.log.Warn("MCP prompts/list failed", "server", s.name, "err", lc.res.ScrubText(err.Error()))
		return last
	}
	ev.Count, ev.Duration, ev.CacheHints = len(ev.Prompts), m.now().Sub(begin), hints.hints(lc)
	live := lc.res.ScrubPrompts(ev)
	m.mu.Lock()
	lc.names.prompts = live
	m.mu.Unlock()
	ev.Hash = events.HashList(ev.Prompts)
	if ev.Hash != last && s.ctx.Err() == nil {
		m.emitSurface(s, lc, ev)
	}
	return ev.Hash
}

// emitSurface records ev while s is still connected through lc, so no list
// lands after its Disconnected.
func (m *Manager) emitSurface(s *server, lc *liveConn, ev events.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !s.ending() && s.conn == lc {
		m.emitDeferred("", ev)
	}
}

// listContext bounds a list on the connection lc by the server's timeout.
func (m *Manager) listContext(s *server, lc *liveConn) (context.Context, context.CancelFunc) {
	if s.timeout > 0 {
		return context.WithTimeout(lc.ctx, s.timeout)
	}
	return context.WithCancel(lc.ctx)
}

// rawList marshals a list, or returns nil for an empty one.
func rawList[T any](v []T) json.RawMessage {
	if len(v) == 0 {
		return nil
	}
	return rawJSON(v)
}

// connection returns the live connection of the named server, waiting for
// a connect (or reconnect) in flight like a deferred call does.
func (m *Manager) connection(ctx context.Context, name string) (*liveConn, error) {
	m.mu.Lock()
	s := m.servers[name]
	m.mu.Unlock()
	if s == nil {
		return nil, notConnected(name)
	}
	if err := m.awaitConnect(ctx, s); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.ending() || s.conn == nil {
		return nil, notConnected(name)
	}
	return s.conn, nil
}

// surfaceError wraps a failed request to a server, scrubbed of secrets.
func surfaceError(name, method string, lc *liveConn, err error) error {
	return &ServerError{Server: name, Op: OpCall, Err: &scrubbedError{
		msg: fmt.Sprintf("MCP server %q: %s: %s", name, method, lc.res.ScrubText(err.Error())), cause: err}}
}

// ReadResource reads a resource of the named server (resources/read),
// waiting for its connection like a call.
func (m *Manager) ReadResource(ctx context.Context, server, uri string) (*mcp.ReadResourceResult, error) {
	lc, err := m.connection(ctx, server)
	if err != nil {
		return nil, err
	}
	start := m.now()
	res, err := lc.cs.ReadResource(ctx, &mcp.ReadResourceParams{Meta: m.logMeta(lc), URI: m.liveName(lc, resourceNames, uri)})
	read := &events.ResourceRead{Server: server, URI: lc.res.ScrubListedURL(uri), Duration: m.now().Sub(start)}
	if err != nil {
		err = surfaceError(server, "resources/read", lc, err)
		read.Error = err.Error()
	} else if res != nil {
		read.Contents = len(res.Contents)
	}
	m.emitDeferred("", read)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// GetPrompt gets a prompt of the named server with its arguments
// (prompts/get).
func (m *Manager) GetPrompt(ctx context.Context, server, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	lc, err := m.connection(ctx, server)
	if err != nil {
		return nil, err
	}
	start := m.now()
	res, err := lc.cs.GetPrompt(ctx, &mcp.GetPromptParams{Meta: m.logMeta(lc), Name: m.liveName(lc, promptNames, name), Arguments: args})
	got := &events.PromptRetrieved{Server: server, Prompt: lc.res.ScrubText(name), Duration: m.now().Sub(start)}
	if err != nil {
		err = surfaceError(server, "prompts/get", lc, err)
		got.Error = err.Error()
	} else if res != nil {
		got.Messages = len(res.Messages)
	}
	m.emitDeferred("", got)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Complete asks the named server for completions of a prompt's or a
// resource template's argument (completion/complete).
func (m *Manager) Complete(ctx context.Context, server string, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	lc, err := m.connection(ctx, server)
	if err != nil {
		return nil, err
	}
	res, err := lc.cs.Complete(ctx, params)
	if err != nil {
		return nil, surfaceError(server, "completion/complete", lc, err)
	}
	return res, nil
}
