// Package manager runs the MCP server lifecycle of an agent session: it
// connects servers in parallel (stdio child processes, streamable HTTP,
// legacy HTTP+SSE) with the go-sdk client, returns at a 250 ms startup gate
// with live tools, per-server errors and deferred tools served from the
// tool cache, keeps connecting in the background, exposes every tool as
// mcp_<server>_<tool>, calls tools, notices dropped connections and
// tools/list_changed, and tears servers down — recording every step as an
// event in a [journal.Journal].
//
// The manager's statuses and tool view are not kept beside the events:
// they are the session's [projector.ToolView], folded inside each append,
// so the live state and a replay of the store cannot disagree. Beside the
// projection the manager holds only what cannot be replayed: live go-sdk
// sessions, connects in flight and their processes.
//
// A [Manager] is safe for concurrent use and may be shared by several agent
// sessions and subagents, which see its later changes through
// [Manager.Watch]. Nothing is torn down implicitly: the owner calls
// [Manager.Close].
//
// Stdio servers start in their own process group with the parent's
// environment plus the config's env; their stderr is kept in a 64 KiB ring
// buffer and quoted in connect errors; teardown closes stdin, waits, then
// signals the whole group (SIGTERM, then SIGKILL), so servers started
// through sh -c or npx leave no process behind. On Windows there are no
// process groups: a stdio server runs as a plain child process, teardown
// closes its stdin, waits, then kills that process alone, and processes
// it started survive it. Env and header values are substituted at every
// connect through a [Resolver]; resolved values never reach events, logs
// or errors.
//
// Example:
//
//	j, _ := journal.New(memory.New(), nil)
//	m, err := manager.New(j, "session-1", &manager.Options{Cwd: "/work/project"})
//	if err != nil { ... }
//	defer m.Close(ctx)
//	res, err := m.ConnectServers(ctx, []events.ServerConfig{
//		{Name: "git", Command: "mcp-server-git"},
//		{Name: "docs", URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "DOCS_TOKEN"}},
//	}, nil)
//	for name, err := range res.Errors { log.Printf("%s: %v", name, err) }
//	updates, _ := m.Watch(ctx) // late connects, drops, list changes
//	for _, t := range res.Tools {
//		fmt.Println(t.Name, t.Deferred)
//	}
//	r, err := res.Tools[0].Call(ctx, map[string]any{"path": "."})
package manager
