// Package transport connects the manager to one MCP server and keeps the
// server's secrets out of what is recorded. It builds the go-sdk
// transport of a connect attempt (a stdio child process, streamable HTTP
// or legacy HTTP+SSE), confines a server's configured headers and OAuth
// token to the origin of its configured URL, takes messages nested too
// deep for the go-sdk out of HTTP responses, tells the manager when a
// subscriptions/listen stream ends without its final response
// ([OnListenEnd]), substitutes a
// configuration's env and header values and ${VAR} references through a
// [Resolver] ([Resolve]), and scrubs the resolved secrets from errors,
// stderr, transcripts and what a server says about itself ([Resolved]).
//
// It knows nothing of a server's lifecycle: it neither connects on its own
// nor reconnects, keeps no state between connect attempts, records no
// event and writes to no store. The manager decides when to connect, with
// what, and what becomes of the connection; it passes in what a transport
// needs of it (its logger, the bound on a message, the session's id, the
// working directory) as [Options], and hears of a listen stream's end
// through a callback that it decides how to act on.
//
// [Resolve] and [New] may be called concurrently, for several servers at
// once; a [Resolved] is not changed after Resolve returns it (but for its
// OAuth handler, set before New), and its methods may be called
// concurrently.
//
// Example, one connect attempt:
//
//	res := transport.Resolve(ctx, "docs", cfg, resolver, log)
//	t, err := transport.New("docs", res.Cfg, res, &transport.Options{Cwd: cwd, Log: log, Session: session})
//	if err != nil { return errors.New(res.ScrubText(err.Error())) }
//	cs, err := mcp.NewClient(impl, nil).Connect(ctx, t, nil)
//	if err != nil { return errors.New(res.ScrubText(err.Error())) }
//	defer func() {
//		cs.Close() // a stdio server's process is torn down
//		if pool := transport.Pool(t); pool != nil {
//			pool.CloseIdleConnections()
//		}
//	}()
package transport
