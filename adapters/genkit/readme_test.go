package mcpgenkit_test

import (
	"os"
	"strings"
	"testing"
)

// The README's snippet is the part of Example between its README markers,
// which the Example compiles and runs.
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
	if want.String() != snippet {
		t.Errorf("README snippet differs from Example's:\n--- Example\n%s--- README\n%s", want.String(), snippet)
	}
}
