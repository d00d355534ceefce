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
// Each server is one record with an explicit lifecycle state (dialing,
// listing, ready, backoff, dropped, needs-auth, closing, done): a state
// machine of its own (internal/conn) that checks every transition and
// publishes an immutable snapshot, which readers load without a lock.
// Recording never holds up the lifecycle: events go through the
// manager's outbox, in the order they were emitted, and a store that
// stops answering stops only the recording. Calls, Status, Tools and
// disconnects go on; Close tears every server down within its context
// and logs what it could not record.
//
// [Options.Dial] replaces the built-in transports, so a host can test
// against go-sdk servers in its own process (mcp.NewInMemoryTransports).
//
// Where to look:
//
//	connect.go     ConnectServers, and run: the loop of one server's goroutine (connect, list, serve, drop, again)
//	era.go         a connect at 2026-07-28 or later: the server's recorded era spares the probe, a probe's outcome is recorded
//	gate.go        the startup gate decides ready, failed, deferred (cached) or awaited
//	cachehints.go  lists' cache hints (ttlMs, cacheScope, a private list's authorization),
//	               and a fresh cached tool list standing for a modern server's tools/list
//	relist.go      serve: the select of a connected server (end of the connection, health, re-lists)
//	drop.go        a connection ends on its own: the drop is recorded (ready → dropped) and a
//	               reconnect scheduled (dropped → backoff, its delay in the state's snapshot)
//	reconnect.go   the backoff, the crash-loop breaker, ReconnectNow (a conn.Kick to the owner)
//	health.go      health checks (ping, or server/discover from 2026-07-28 on), a listen
//	               stream that ended, descendants seen, a host that slept
//	tool.go        a call is admitted (its server's state not ending), recorded
//	               (ToolCallStarted/Finished) and made
//	disconnect.go  a teardown: process group, in-flight calls, Disconnected
//	outbox.go      how events reach the journal without holding a lock
//	state.go       how a record's state changes (setState, under m.mu) and is read (ending, no lock)
//	internal/conn  one server's state machine: the states and their legal transitions
//	               (state.go), the Machine and the Snapshot it publishes atomically
//	               (machine.go), the owner's coalesced commands, reconnect now and
//	               check now (commands.go)
//	dial.go        the transport of one connect attempt, built-in or Options.Dial
//	internal/transport
//	               below the lifecycle: stdio, streamable HTTP, SSE (transport.go,
//	               stdio.go); headers.go the origin rule; deephttp.go the JSON
//	               depth check; substitution.go and scrub.go what a server never
//	               sees recorded
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
