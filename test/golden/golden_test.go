package golden

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/internal/fixture"
)

var update = flag.Bool("update", false, "rewrite the output sections of the golden files")

func TestMain(m *testing.M) {
	fixture.RunIfChild()
	os.Exit(m.Run())
}

// TestGolden runs every scenario in testdata and compares its events,
// step results, final view and log with the file.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden files in testdata")
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			Run(t, file, *update)
		})
	}
}
