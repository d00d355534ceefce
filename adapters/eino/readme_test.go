package mcpeino_test

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The README's snippet is the body of ask in example_test.go, which
// Example compiles and runs.
func TestREADMESnippet(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, snippet, ok := strings.Cut(string(readme), "```go\n")
	if !ok {
		t.Fatal("README has no Go block")
	}
	snippet, _, _ = strings.Cut(snippet, "```")
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(src), "// README: begin\n")
	if !ok {
		t.Fatal("example_test.go has no README: begin marker")
	}
	body, _, ok = strings.Cut(body, "\t// README: end")
	if !ok {
		t.Fatal("example_test.go has no README: end marker")
	}
	var want strings.Builder
	for line := range strings.Lines(body) {
		want.WriteString(strings.TrimPrefix(line, "\t"))
	}
	if diff := cmp.Diff(want.String(), snippet); diff != "" {
		t.Errorf("README snippet differs from ask in example_test.go (-example +README):\n%s", diff)
	}
}
