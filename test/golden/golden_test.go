package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/internal/fixture"
	"golang.org/x/tools/txtar"
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

// TestArchivesFormatUnchanged checks that every golden file is what
// formatting its parsed archive gives, so that -update changes the output
// sections it rewrites and not a byte elsewhere.
func TestArchivesFormatUnchanged(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if got := txtar.Format(txtar.Parse(data)); !bytes.Equal(got, data) {
			t.Errorf("%s: formatting its archive changes it:\n%s", file, diffText(string(data), string(got)))
		}
	}
}

// TestSetSection replaces a section in place and appends a new one at
// the end.
func TestSetSection(t *testing.T) {
	a := txtar.Parse([]byte("a comment\n-- one --\nfirst\n-- two --\n-- three --\nlast\n"))
	setSection(a, "two", "filled")
	setSection(a, "four", "new\n")
	want := "a comment\n-- one --\nfirst\n-- two --\nfilled\n-- three --\nlast\n-- four --\nnew\n"
	if got := string(txtar.Format(a)); got != want {
		t.Errorf("format:\n%s\nwant:\n%s", got, want)
	}
	if d, ok := section(a, "two"); !ok || d != "filled" {
		t.Errorf("two = %q, %v", d, ok)
	}
	if _, ok := section(a, "five"); ok {
		t.Error("found a section five")
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
	a := txtar.Parse(data)
	evs, _ := section(a, sectionEvents)
	lines := strings.Split(evs, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "ServerConnected alpha") })
	if i < 0 {
		t.Fatalf("no ServerConnected alpha in\n%s", evs)
	}
	lines[i], lines[i+1] = lines[i+1], lines[i]
	setSection(a, sectionEvents, strings.Join(lines, "\n"))

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
