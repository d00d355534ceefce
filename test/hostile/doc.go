// Package hostile tests the manager against misbehaving MCP servers:
// crashing or hanging during initialize, exiting right after it, crashing
// during a tool call, hanging in tools/list, writing garbage to stdout,
// flooding stderr, listing 5,000 tools across pages, using tool names that
// need sanitising or collide, sending a 1 MiB input schema or a 10 MiB
// result.
//
// Each hostile server runs beside a healthy one, connected in the same
// round, whose tools must stay exposed and callable; every test also
// checks the recorded history against the ordering invariants of package
// verify.
package hostile
