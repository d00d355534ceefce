package session_test

import (
	"testing"

	"github.com/mcplife/mcplife/internal/snippettest"
)

// The README's embedding snippet is the body of embed in example_test.go,
// which Example compiles and runs.
func TestREADMEEmbeddingSnippet(t *testing.T) {
	snippettest.Check(t, "../README.md", "Embedding", "example_test.go")
}
