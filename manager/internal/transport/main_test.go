package transport

import (
	"os"
	"testing"

	"github.com/mcplife/mcplife/internal/fixture"
)

// TestMain lets the test binary serve as a stdio fixture server (see
// package fixturetest).
func TestMain(m *testing.M) {
	fixture.RunIfChild()
	os.Exit(m.Run())
}
