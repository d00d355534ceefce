package session

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/projector"
	"github.com/mcplife/mcplife/toolsearch"
)

// SearchToolName is the name of the search tool a session exposes when its
// tool budget holds MCP tools back. Tool naming can never produce it: an
// exposed MCP name is "mcp_" followed by a server part that neither starts
// with "_" nor contains "__", so no MCP tool name starts with "mcp__".
const SearchToolName = "mcp__search_tools"

// Limits of the search tool's "limit" argument.
const (
	DefaultSearchLimit = toolsearch.DefaultLimit
	MaxSearchLimit     = 20
)

// searchToolDef is the search tool's definition as the model reads it.
var searchToolDef = events.ToolDef{
	Name: SearchToolName,
	Description: "Search the tools of this session's MCP servers, including those not loaded yet, and load the best matches " +
		"so you can call them in your next step. Describe the task in plain words (e.g. \"create a pull request\"); " +
		"optionally name one server. Returns each match's name, server, description and input schema.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{` +
		`"query":{"type":"string","description":"What you want to do, in plain words"},` +
		`"server":{"type":"string","description":"Only search the tools of this MCP server"},` +
		`"limit":{"type":"integer","minimum":1,"maximum":20,"description":"Most tools to return (default 5)"}},` +
		`"required":["query"]}`),
}

// EstimateTool returns the estimated tokens a model reads for t as a
// session exposes it: its exposed name, its description (or the
// manager's "MCP tool from <server>" when the server sent none) and its
// input schema, counted by [toolsearch.EstimateTokens].
func EstimateTool(t projector.Tool) int {
	return toolsearch.EstimateTokens(exposedDef(t))
}

func exposedDef(t projector.Tool) events.ToolDef {
	desc := t.Def.Description
	if desc == "" {
		desc = "MCP tool from " + t.Server
	}
	return events.ToolDef{Name: t.Name, Description: desc, InputSchema: t.Def.InputSchema}
}

// Exposure is what a tool budget exposes of a tool view: every tool when
// the view's tools fit the budget, else the tools of servers marked
// alwaysLoad, the tools loaded by ToolsActivated events
// ([projector.ToolView.LoadedTools]) and the search tool.
type Exposure struct {
	// Budget is the budget in estimated tokens; 0 means off.
	Budget int
	// Applied is set when the view's tools exceed Budget, so some are held
	// back behind the search tool.
	Applied bool
	// Tokens is the estimate for every MCP tool of the view; LoadedTokens
	// for the exposed ones, plus the search tool when Applied.
	Tokens, LoadedTokens int
	// Total counts the view's MCP tools; Loaded the exposed ones (the
	// search tool is not counted).
	Total, Loaded int

	exposed map[string]bool // exposed names, when Applied
	always  map[string]bool // servers whose config sets alwaysLoad, when Applied
}

// Exposed reports whether the MCP tool named name is exposed to the model.
// Under budget (or with the budget off) every tool is.
func (e Exposure) Exposed(name string) bool { return !e.Applied || e.exposed[name] }

// Expose works out what a budget of budget tokens exposes of view's tools.
// It is what a live session computes on every refresh, so a replayed view
// gives the exposure the session had at that point. view is not modified
// beyond its caches (see [projector.ToolView]).
func Expose(view *projector.ToolView, budget int) Exposure {
	return expose(view, view.Tools(), budget, EstimateTool)
}

// ExposedTools returns the MCP tools exp exposes of view (exp being
// [Expose] of view), in the order a session offers them in
// [Session.Tools], after its search tool when exp.Applied: the order in
// which they were first exposed in the session
// ([projector.ToolView.ToolsInOrder]), except that a tool exposed because
// it was loaded (ToolsActivated) stands where it was first loaded
// ([projector.ToolRank.Loaded]), after every tool exposed before that. So
// a new tool, whether a late server's, a re-list's or a loaded one, comes
// last, and a tool that goes leaves the others in place. The order is a
// fold of the events, so a replayed view gives the list the session
// offered at that point.
func ExposedTools(view *projector.ToolView, exp Exposure) []projector.Tool {
	tools := view.ToolsInOrder()
	if !exp.Applied {
		return tools
	}
	tools = slices.DeleteFunc(tools, func(t projector.Tool) bool { return !exp.Exposed(t.Name) })
	rank := func(t projector.Tool) uint64 {
		r, _ := view.Rank(t.Name)
		if exp.always[t.Server] || r.Loaded == 0 {
			return r.Listed
		}
		return r.Loaded
	}
	slices.SortStableFunc(tools, func(a, b projector.Tool) int { return cmp.Compare(rank(a), rank(b)) })
	return tools
}

// expose is Expose with view's tools at hand.
func expose(view *projector.ToolView, tools []projector.Tool, budget int, cost func(projector.Tool) int) Exposure {
	e := Exposure{Budget: budget, Total: len(tools)}
	costs := make([]int, len(tools))
	for i, t := range tools {
		costs[i] = cost(t)
		e.Tokens += costs[i]
	}
	if budget <= 0 || e.Tokens <= budget {
		e.LoadedTokens, e.Loaded = e.Tokens, e.Total
		return e
	}
	e.Applied = true
	e.exposed = make(map[string]bool)
	always := map[string]bool{}
	e.always = always
	for _, st := range view.Servers() {
		if st.Config.AlwaysLoad {
			always[st.Name] = true
		}
	}
	for _, t := range view.LoadedTools() {
		e.exposed[t.Name] = true
	}
	for i, t := range tools {
		if always[t.Server] {
			e.exposed[t.Name] = true
		}
		if e.exposed[t.Name] {
			e.Loaded++
			e.LoadedTokens += costs[i]
		}
	}
	e.LoadedTokens += toolsearch.EstimateTokens(searchToolDef)
	return e
}

// budget is the tool-budget state a session shares with its subagents:
// they share one manager, one event stream and so one loaded set.
type budget struct {
	tokens int

	// mu serialises updates, so an older view never replaces a newer one
	// in the index.
	mu    sync.Mutex
	idx   *toolsearch.Index
	seq   uint64              // LastSeq of the view the index holds
	costs map[string]toolCost // by exposed name
}

// toolCost is a tool's estimate, kept while its definition is unchanged.
type toolCost struct {
	desc   string
	schema []byte
	n      int
}

func newBudget(tokens int) *budget {
	return &budget{tokens: tokens, idx: toolsearch.New(), costs: map[string]toolCost{}}
}

// update brings the search index up to view (unless a newer view is
// indexed already) and returns view's exposure.
func (b *budget) update(view *projector.ToolView) Exposure {
	b.mu.Lock()
	defer b.mu.Unlock()
	tools := view.Tools() // one copy for the index and the exposure
	if view.LastSeq() >= b.seq {
		b.idx.Sync(tools)
		b.seq = view.LastSeq()
	}
	next := make(map[string]toolCost, len(b.costs))
	e := expose(view, tools, b.tokens, func(t projector.Tool) int {
		def := exposedDef(t)
		if c, ok := b.costs[t.Name]; ok && c.desc == def.Description && bytes.Equal(c.schema, def.InputSchema) {
			next[t.Name] = c
			return c.n
		}
		c := toolCost{desc: def.Description, schema: def.InputSchema, n: toolsearch.EstimateTokens(def)}
		next[t.Name] = c
		return c.n
	})
	b.costs = next
	return e
}

// searchTool returns the session's search tool.
func (s *Session) searchTool() Tool {
	return Tool{
		Name: SearchToolName, Description: searchToolDef.Description, InputSchema: searchToolDef.InputSchema,
		Path: "mcplife tool search", Call: s.search,
	}
}

// searchResult is the search tool's result, as JSON text.
type searchResult struct {
	// Loaded names the tools this search loaded; the others were loaded
	// already.
	Loaded []string      `json:"loaded"`
	Tools  []searchMatch `json:"tools"`
}

type searchMatch struct {
	Name        string          `json:"name"`
	Server      string          `json:"server"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// search runs the search tool: it ranks every tool of the session's view,
// loads the matches that are not exposed yet (recording ToolsActivated)
// and returns the matches. Bad arguments are a result with IsError set.
func (s *Session) search(ctx context.Context, args json.RawMessage) (*manager.CallResult, error) {
	var in struct {
		Query  string `json:"query"`
		Server string `json:"server"`
		Limit  int    `json:"limit"`
	}
	if len(bytes.TrimSpace(args)) > 0 {
		if err := json.Unmarshal(args, &in); err != nil {
			return toolError("arguments must be an object {query, server?, limit?}: " + err.Error()), nil
		}
	}
	if strings.TrimSpace(in.Query) == "" {
		return toolError(`"query" is required: describe the task in plain words`), nil
	}
	limit := in.Limit
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	limit = min(limit, MaxSearchLimit)
	results := s.budget.idx.Search(in.Query, toolsearch.SearchOptions{Server: in.Server, Limit: limit})
	out := searchResult{Loaded: []string{}, Tools: []searchMatch{}}
	names := make([]string, 0, len(results))
	for _, r := range results {
		def := exposedDef(r.Tool)
		out.Tools = append(out.Tools, searchMatch{Name: r.Tool.Name, Server: r.Tool.Server, Title: r.Tool.Def.Title,
			Description: def.Description, InputSchema: def.InputSchema})
		names = append(names, r.Tool.Name)
	}
	loaded, err := s.activate(ctx, names, events.ActivatedBySearch)
	if err != nil {
		return nil, err
	}
	out.Loaded = append(out.Loaded, loaded...)
	text, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("session: search result: %w", err)
	}
	return textResult(string(text), text), nil
}

func toolError(msg string) *manager.CallResult {
	return metaError(SearchToolName, msg)
}

// ErrUnknownTool is wrapped by [Session.LoadTools] for names the session's
// view does not hold.
var ErrUnknownTool = errors.New("no such MCP tool")

// LoadTools loads MCP tools by exposed name into the session and its
// subagents, as the search tool does for its matches: they are exposed
// from now on, whatever the tool budget (see [Options.ToolBudget]). Tools
// that are exposed already are left alone; loading anything records
// ToolsActivated with by "host". With the budget off, or under it, every
// tool is exposed and nothing is recorded.
//
// Names the session's view does not hold are reported in an error that
// wraps [ErrUnknownTool]; the others are still loaded. An error recording
// the event is returned as is.
func (s *Session) LoadTools(ctx context.Context, names ...string) error {
	if s.mgr == nil {
		return errors.New("session: MCP is disabled")
	}
	var unknown []string
	known := make([]string, 0, len(names))
	for _, n := range names {
		if _, ok := s.mgr.Tool(n); ok {
			known = append(known, n)
		} else {
			unknown = append(unknown, n)
		}
	}
	_, err := s.activate(ctx, known, events.ActivatedByHost)
	if len(unknown) > 0 {
		err = errors.Join(err, fmt.Errorf("session: load tools %s: %w", strings.Join(unknown, ", "), ErrUnknownTool))
	}
	return err
}

// activate records ToolsActivated for the names not exposed yet and refreshes
// the session and its family; it returns the names it loaded.
func (s *Session) activate(ctx context.Context, names []string, by events.ActivationCause) ([]string, error) {
	if s.budget == nil {
		return nil, nil
	}
	s.mu.Lock()
	exp := s.exposure
	s.mu.Unlock()
	var load []string
	for _, n := range names {
		if !exp.Exposed(n) && !slices.Contains(load, n) {
			load = append(load, n)
		}
	}
	if len(load) == 0 {
		return nil, nil
	}
	if err := s.mgr.RecordSession(ctx, &events.ToolsActivated{Tools: load, By: by}); err != nil {
		return nil, fmt.Errorf("session: load tools: %w", err)
	}
	s.refreshFamily()
	return load, nil
}

// refreshFamily refreshes the first session of s's family (the one that
// is no subagent) and every subagent made from it, directly or not: they
// share one loaded set.
func (s *Session) refreshFamily() {
	root := s
	for root.parent != nil {
		root = root.parent
	}
	root.refreshTree()
}

func (s *Session) refreshTree() {
	s.RefreshMCPTools()
	s.mu.Lock()
	subs := slices.Clone(s.subagents)
	s.mu.Unlock()
	for _, sub := range subs {
		sub.refreshTree()
	}
}

// Exposure returns what the session's tool budget exposes now (see
// [Options.ToolBudget]). With the budget off, Budget is 0, Applied is
// false and the token counts are not computed.
func (s *Session) Exposure() Exposure {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exposure
}
