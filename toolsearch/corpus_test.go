package toolsearch

import (
	"testing"

	"github.com/mcplife/mcplife/projector"
)

// loadCorpus returns the tools of testdata/corpus.json with their exposed
// names, as a tool view would hand them out.
func loadCorpus(t testing.TB) []projector.Tool {
	t.Helper()
	var raw []corpusTool
	readJSON(t, "testdata/corpus.json", &raw)
	return toTools(raw)
}

func toTools(raw []corpusTool) []projector.Tool {
	refs := make([]projector.ToolRef, len(raw))
	for i, c := range raw {
		refs[i] = projector.ToolRef{Server: c.Server, Tool: c.Name}
	}
	names, _ := projector.AssignNames(refs)
	tools := make([]projector.Tool, len(raw))
	for i, c := range raw {
		tools[i] = projector.Tool{Name: names[refs[i]], Server: c.Server, Original: c.Name, Def: c.def()}
	}
	return tools
}

// newCorpusIndex returns an index of the corpus.
func newCorpusIndex(t testing.TB) (*Index, []projector.Tool) {
	t.Helper()
	tools := loadCorpus(t)
	x := New()
	x.Sync(tools)
	if x.Len() != len(tools) {
		t.Fatalf("index holds %d tools, want %d", x.Len(), len(tools))
	}
	return x, tools
}
