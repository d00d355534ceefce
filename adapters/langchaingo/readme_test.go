package mcplangchaingo_test

import (
	"os"
	"strings"
	"testing"
)

// The README's Go blocks are, in order, the snippets between the README
// markers of example_test.go, which the Examples compile and run.
func TestREADMESnippets(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var blocks, snippets []string
	for rest := string(readme); ; {
		var block string
		var ok bool
		if _, rest, ok = strings.Cut(rest, "```go\n"); !ok {
			break
		}
		block, rest, _ = strings.Cut(rest, "```")
		blocks = append(blocks, block)
	}
	for rest := string(src); ; {
		var body string
		var ok bool
		if _, rest, ok = strings.Cut(rest, "// README: begin\n"); !ok {
			break
		}
		if body, rest, ok = strings.Cut(rest, "\t// README: end"); !ok {
			t.Fatal("example_test.go: a README: begin marker without its end")
		}
		var b strings.Builder
		for line := range strings.Lines(body) {
			b.WriteString(strings.TrimPrefix(line, "\t"))
		}
		snippets = append(snippets, b.String())
	}
	if len(blocks) != len(snippets) || len(blocks) == 0 {
		t.Fatalf("README has %d Go blocks, example_test.go %d snippets", len(blocks), len(snippets))
	}
	for i := range blocks {
		if blocks[i] != snippets[i] {
			t.Errorf("README's Go block %d differs from the snippet in example_test.go:\n--- README\n%s--- example_test.go\n%s", i+1, blocks[i], snippets[i])
		}
	}
}
