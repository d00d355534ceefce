package main

import (
	"context"
	"strconv"

	"github.com/mcplife/mcplife/internal/fixture"
)

// fixtureCommand is the hidden subcommand that turns this binary into one
// of the bundled example MCP servers (stdio), so the demo needs no other
// build.
const fixtureCommand = "__fixture-server"

func runFixture(_ context.Context, _ *globals, args []string) error {
	if code := fixture.Main(args); code != 0 {
		return exitStatus(code)
	}
	return nil
}

// exitStatus is an error carrying a process exit status.
type exitStatus int

func (e exitStatus) Error() string { return "exit status " + itoa(int(e)) }

func itoa(i int) string { return strconv.Itoa(i) }
