package mcpgenkit_test

import (
	"testing"

	"github.com/mcplife/mcplife/internal/snippettest"
)

// The README's Go blocks are, in order, the code between the README
// markers of example_test.go, which the Examples compile and run.
func TestREADMESnippet(t *testing.T) {
	snippettest.Check(t, "README.md", "", "example_test.go")
}
