// Package sharedhost is the shared host: one process of a user that owns
// the server processes of every agent process of that user, which attach
// to it over a local socket (package shared holds the protocol, the
// socket and the attaching side).
//
// The shared host runs one [manager.Manager] in a session of its own.
// Each server instance is a server of that manager, named
// <config name>-<key> (the key is a digest of the config hash, a keyed
// hash of the resolved values, the working directory and the roots), and
// is offered to the hosts attached to it as an MCP server of its own: a
// relay whose tools mirror the instance's and whose calls go through the
// shared host's manager, so they are recorded on both sides. A host's
// tools/call on its stream in the protocol version the shared host speaks
// to the server skips the relay: it is spliced onto the manager's
// connection to the server under an id of its own (package splice) and
// recorded by the host only.
//
// A Go program runs one with session.ServeShared; underneath it is
//
//	l, err := shared.Listen(socket) // 0700 directory, 0600 socket, peers of this uid only
//	err = sharedhost.Serve(ctx, l, journal, sessionID, &sharedhost.Options{Idle: 10 * time.Minute})
//
// which returns when ctx ends or the shared host has neither servers nor
// hosts.
package sharedhost
