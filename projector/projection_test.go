package projector_test

import (
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/projector"
)

// Every projection runs under the journal; the check lives in a test so
// that the package itself imports events only.
var (
	_ journal.Projection   = (*projector.ToolView)(nil)
	_ journal.Checkpointer = (*projector.ToolCache)(nil)
	_ journal.TypeFilter   = (*projector.ToolCache)(nil)
	_ journal.Projection   = (*projector.SessionIndex)(nil)
)
