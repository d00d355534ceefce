// Package session is the wiring layer of mcplife and the agent-session
// side of it: [Start] discovers servers with the loader (or takes the
// host's own list), connects them through a manager, and returns a
// session whose tool registry holds the agent's own tools plus the mcp_
// tools of its manager. The registry stays current by subscribing to the
// manager's tool-view updates (late connects, drops, list changes), and
// the session runs the reload flow and shares its connections with
// subagents.
//
// With a tool budget ([Options.ToolBudget]) a session whose MCP tools
// would cost more than the budget exposes only the tools of alwaysLoad
// servers, the tools loaded so far and one search tool
// ([SearchToolName]) over every tool; the search loads what it finds and
// records ToolsActivated. [Expose] computes the same exposure from a
// replayed view.
//
// [Session.Tools] keeps the order in which tools were first exposed (new
// ones at the end), so the definitions stay a stable prefix of a model's
// prompt; [ExposedTools] gives a replayed view the same order. With
// [ToolsCallTool] the session offers two tools that never change, one that
// lists the MCP tools and one that calls any of them.
//
// The loader and the manager do not know each other; a host that wants
// its own manager uses [DiscoverAndLoad] and [Discoverer], which hold the
// same wiring.
//
// Example:
//
//	// nil: record into mcp-audit's default store, opened and closed by s.
//	s, err := session.Start(ctx, nil, &session.Options{Loader: loader.Options{Cwd: dir}})
//	if err != nil { ... }
//	defer s.Close(ctx)
//	for _, t := range s.Tools() { fmt.Println(t.Name, "from", t.Path) }
package session
