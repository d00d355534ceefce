// Package proc runs the child process of a stdio MCP server and reads its
// output: [Start] starts it with its stdin, stdout and stderr on pipes,
// keeps the last 64 KiB of its stderr in a [Ring], reaps it and reports
// its exit status, and [Process.Terminate] tears it down. [JSONLines]
// filters its stdout down to the JSON-RPC messages the MCP client may
// read. [KillGroupOnCancel] makes a cancelled short-lived command (a
// "!command" substitution) leave nothing behind: its whole group is
// killed.
//
// So that nothing outlives the host, even a host that is killed: each
// child's [Identity] (pid, process group, start time) is taken when it
// starts ([Process.Identity], [IdentityOf]) and its [Descendants] can be
// listed, for the host to record; and a child started for a session
// ([Options.Session]) carries the session's id in its environment
// ([SessionEnv], MCPLIFE_SESSION), which what it starts inherits. A
// later host passes what was recorded, and the session's id, to [Reap],
// which kills those that still exist and are still the same processes,
// and those that carry the id, recorded or not. [BecomeSubreaper] makes orphans of the host's descendants
// its children, and [ReapAdopted] or [ReapAdoptedOnSIGCHLD] waits for
// them once they exit, leaving alone the children someone else waits
// for.
//
// Example:
//
//	p, err := proc.Start("npx", []string{"-y", "some-mcp-server"}, os.Environ(), dir, nil)
//	if err != nil { ... }
//	lines := proc.NewJSONLines(p.Stdout(), "some", 16<<20, p.Stderr(), log)
//	// read JSON-RPC messages from lines, write requests to p.Stdin()
//	seen := append([]proc.Identity{p.Identity()}, proc.Descendants(p.Pid())...)
//	// record seen; after a crash, the next host calls
//	// proc.Reap(seen, &proc.ReapOptions{Session: session})
//	err = p.Terminate() // stdin closed, group signalled, child reaped
//	fmt.Println(*p.ExitStatus(), p.StderrTail())
//
// What each platform gets:
//
//   - Unix: the child starts in its own process group. Teardown closes its
//     stdin, waits, then signals the whole group with SIGTERM and, if any
//     member remains, SIGKILL, so servers started through sh -c or npx
//     leave no process behind. An exit status of a child ended by a signal
//     is 128+signal.
//   - Linux, in addition: the child gets SIGKILL when the host dies,
//     however it dies (the parent-death signal; it reaches the child, not
//     what the child starts, and a set-user-ID program loses it). Teardown
//     also finds the processes that left the group (by setsid, or a
//     daemonising double fork) through /proc, by their parent links and
//     by an instance marker in their environment
//     (MCPLIFE_SERVER_INSTANCE), and signals them too; and the reaper
//     parks on a pidfd instead of blocking a thread. Identities carry
//     start times, so [Reap] can tell a recorded process from one that
//     reuses its pid, and it reads the environments of this user's
//     processes for a session's id; the host can become a child
//     subreaper.
//   - Other Unix systems: no parent-death signal, no subreaper
//     ([BecomeSubreaper] returns an error wrapping
//     [errors.ErrUnsupported]), and no start times: [Descendants] finds
//     nothing and [Reap] kills nothing. Children still carry
//     MCPLIFE_SESSION, for a user to find them by (ps(1) shows
//     environments where the system allows it).
//   - Windows and other systems without process groups: the child runs
//     without process-group semantics. Teardown closes its stdin, waits,
//     then kills the child process alone; processes it started survive
//     it. A cancelled [KillGroupOnCancel] command kills the command's
//     process only. As on other Unix systems there is no parent-death
//     signal, subreaper or start time, and [IdentityOf] finds nothing.
//
// The package is internal: the manager's stdio transport, the loader's
// command runner and the test peers are its users.
package proc
