package golden

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
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
			runFile(t, file, *update)
		})
	}
}

func TestArchiveRoundTrip(t *testing.T) {
	text := "a comment\n-- one --\nfirst\n-- two --\n-- three --\nlast line without newline"
	a := parseArchive([]byte(text))
	if a.Comment != "a comment\n" || len(a.Files) != 3 {
		t.Fatalf("parsed %+v", a)
	}
	if d, _ := a.Get("one"); d != "first\n" {
		t.Errorf("one = %q", d)
	}
	if d, ok := a.Get("two"); !ok || d != "" {
		t.Errorf("two = %q, %v", d, ok)
	}
	a.Set("two", "filled")
	a.Set("four", "new\n")
	want := "a comment\n-- one --\nfirst\n-- two --\nfilled\n-- three --\nlast line without newline\n-- four --\nnew\n"
	if got := string(a.Format()); got != want {
		t.Errorf("format:\n%s\nwant:\n%s", got, want)
	}
	if again := parseArchive(a.Format()); string(again.Format()) != want {
		t.Errorf("format is not stable")
	}
	// Marker-like lines need the exact shape.
	b := parseArchive([]byte("--x--\n-- --\n--  y  --\nz\n"))
	if len(b.Files) != 1 || b.Files[0].Name != "y" || b.Comment != "--x--\n-- --\n" {
		t.Errorf("parsed %+v", b)
	}
}

// TestReorderedEventsAreReported edits a golden file's event order the way
// a careless hand edit would and checks that the run reports it with a
// readable diff.
func TestReorderedEventsAreReported(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "incremental-connect.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	a := parseArchive(data)
	evs, _ := a.Get(sectionEvents)
	lines := strings.Split(evs, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "ServerConnected alpha") })
	if i < 0 {
		t.Fatalf("no ServerConnected alpha in\n%s", evs)
	}
	lines[i], lines[i+1] = lines[i+1], lines[i]
	a.Set(sectionEvents, strings.Join(lines, "\n"))

	reports := compareOutputs("edited.txtar", a, playArchive(t, a))
	if len(reports) != 1 {
		t.Fatalf("%d reports, want 1 (events):\n%s", len(reports), strings.Join(reports, "\n"))
	}
	r := reports[0]
	for _, want := range []string{`section "events" mismatch (-want +got)`, "ServerConnected alpha", "ToolsListed alpha"} {
		if !strings.Contains(r, want) {
			t.Errorf("report lacks %q:\n%s", want, r)
		}
	}
	if !strings.Contains(r, "\n-") || !strings.Contains(r, "\n+") {
		t.Errorf("report shows no -/+ lines:\n%s", r)
	}
	t.Logf("the report reads:\n%s", r)
}
