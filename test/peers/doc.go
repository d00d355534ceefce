// Package peers holds the compatibility tests of the manager against real
// third-party MCP servers from npm: server-everything over stdio,
// streamable HTTP and legacy SSE, and server-filesystem over stdio, each
// stdio server launched directly, through `sh -c 'exec node …'` and
// through `npx --no-install …`.
//
// The servers are pinned in the repository's package.json and
// package-lock.json; run `npm ci` at the repository root first. The tests
// fail, never skip, when Node.js or the packages are missing (see
// internal/peers).
//
// Every launch runs with a marker variable in its environment, so a test
// can find each process it created (npm, shells, node) and check that
// none is left after Manager.DisconnectAll.
package peers
