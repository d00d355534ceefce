package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcplife/mcplife/internal/proc"
)

// adoptOrphans makes this process the child subreaper of the servers it
// starts, where the platform has one (Linux): a process a server leaves
// behind by daemonising is reparented to this process rather than to
// init, so it stays inside this process's tree, and it is waited for
// once it exits instead of staying a zombie. It returns the function
// that stops waiting for them; call it after the teardown. A subreaper
// that cannot be had is a warning, never a failure.
func adoptOrphans(ctx context.Context, g *globals) (stop func()) {
	if err := proc.BecomeSubreaper(); err != nil {
		if !errors.Is(err, errors.ErrUnsupported) {
			fmt.Fprintf(g.stderr, "mcp-audit: warning: %s\n", escapeLine(err.Error()))
		}
		return func() {}
	}
	// Not ctx itself: a Ctrl-C ends ctx, and the teardown that follows
	// still makes orphans to wait for.
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		proc.ReapAdoptedOnSIGCHLD(ctx, nil)
	}()
	return func() {
		cancel()
		<-done
	}
}
