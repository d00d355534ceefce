// Package snippettest keeps a README's Go code blocks equal to the code of
// a runnable Example: the lines between "// README: begin" and
// "// README: end" markers in an example file, each with one tab of
// indentation taken off. The Example compiles and runs the code, so what
// the README shows is code that works.
package snippettest

import (
	"os"
	"strings"
	"testing"
)

// Blocks returns the Go code blocks (```go … ```) of the Markdown file at
// path, in order, those after the line "## heading" only when heading is
// not "" (up to the next "## " heading).
func Blocks(t testing.TB, path, heading string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if heading != "" {
		_, section, ok := strings.Cut(text, "\n## "+heading+"\n")
		if !ok {
			t.Fatalf("%s has no section %q", path, heading)
		}
		section, _, _ = strings.Cut(section, "\n## ")
		text = section
	}
	var blocks []string
	for rest := text; ; {
		var block string
		var ok bool
		if _, rest, ok = strings.Cut(rest, "```go\n"); !ok {
			break
		}
		block, rest, _ = strings.Cut(rest, "```")
		blocks = append(blocks, block)
	}
	return blocks
}

// Marked returns the marked regions of the Go file at path, in order,
// each line with its first tab taken off.
func Marked(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var regions []string
	for rest := string(b); ; {
		var body string
		var ok bool
		if _, rest, ok = strings.Cut(rest, "// README: begin\n"); !ok {
			break
		}
		if body, rest, ok = strings.Cut(rest, "\t// README: end"); !ok {
			t.Fatalf("%s: a README: begin marker without its end", path)
		}
		var sb strings.Builder
		for line := range strings.Lines(body) {
			sb.WriteString(strings.TrimPrefix(line, "\t"))
		}
		regions = append(regions, sb.String())
	}
	return regions
}

// Check fails t unless the README's Go blocks (under heading, when not
// "") are, in order, exactly the marked regions of the example file.
func Check(t testing.TB, readme, heading, example string) {
	t.Helper()
	blocks, regions := Blocks(t, readme, heading), Marked(t, example)
	if len(blocks) != len(regions) || len(blocks) == 0 {
		t.Fatalf("%s has %d Go blocks, %s %d marked regions", readme, len(blocks), example, len(regions))
	}
	for i := range blocks {
		if blocks[i] != regions[i] {
			t.Errorf("%s: Go block %d differs from region %d of %s:\n--- %s\n%s--- %s\n%s",
				readme, i+1, i+1, example, example, regions[i], readme, blocks[i])
		}
	}
}
