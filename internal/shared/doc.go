// Package shared is the socket and the protocol of shared servers, and
// the attaching side: a host's [Client] of the user's shared host (which
// package sharedhost implements).
//
// The shared host listens on a Unix socket ([DefaultSocket]; directory
// 0700, socket 0600, created by [Listen] under a lock that makes two
// shared hosts started at once end with one and replaces a socket left by
// a dead one) and answers a connection only when its peer runs as the
// same uid (SO_PEERCRED on Linux, LOCAL_PEERCRED on macOS; elsewhere
// sharing is off, [ErrUnsupported]): another user's connection gets a
// 403 before any request is read. It speaks HTTP/1.1:
//
//	POST /v1/hosts {session, pid}          the control stream: the response's first line is
//	                                       {host, session, pid}, then it is held open; its end,
//	                                       from either side, releases every instance of the
//	                                       host and cancels its calls in flight
//	POST /v1/hosts/{host}/attach {...}     the server's config as configured, the command,
//	                                       arguments, working directory and resolved env values
//	                                       to launch, its roots → {instance, endpoint, answers};
//	                                       with Upgrade: mcplife-jsonrpc → 101, the answer as the
//	                                       first line, then the connection is the instance's
//	                                       stream, as below (one exchange and one connection for
//	                                       both: [Client.AttachStream])
//	POST /v1/s/{instance}/stream           Upgrade: mcplife-jsonrpc → 101, then the connection is
//	                                       one MCP session of the instance, newline-delimited
//	                                       JSON-RPC both ways (the data path: a call costs no
//	                                       HTTP exchange); the host's close of its writing half
//	                                       detaches (an empty line may still reach the host),
//	                                       and the shared host closes its side only after
//	                                       recording that; a stream cut whole is released by
//	                                       the control stream's end, as the host gone
//	/v1/s/{instance}/mcp                   the instance as a streamable-HTTP MCP server, for a
//	                                       client that wants HTTP; the DELETE that closes its
//	                                       MCP session detaches
//
// The answers of an attach are the instance's results to server/discover
// and to a tools/list without a cursor, at 2026-07-28 ([AnswersProtocol]),
// as of a revision of its tools: a host at that version takes them for
// the answers to its first two requests ([Answering], [FirstTools]) and
// sends neither over its stream. A stream opened by its own request
// names the revision in its Mcplife-Tools-Revision header (one opened by
// the attach has it already); when the stream's subscriptions/listen is
// acknowledged and the tools changed since, the shared host sends the
// stream notifications/tools/list_changed, so the host lists again. A
// later change reaches the listen as ever.
//
// Every request of a host names it in the Mcplife-Host header. The
// resolved values travel over the socket only; the shared host compares
// them by a keyed hash whose key never leaves its memory, and never
// stores or logs them.
//
//	c, err := shared.Dial(ctx, socket, shared.Hello{Session: id, Pid: os.Getpid()})
//	att, t, err := c.AttachStream(ctx, shared.Attach{Config: cfg, Command: cmd, Cwd: dir, Env: env})
//	client := mcp.NewClient(impl, nil)
//	client.AddSendingMiddleware(shared.Answering(t))
//	cs, err := client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: shared.AnswersProtocol})
package shared
