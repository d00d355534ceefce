package toolsearch

import (
	"slices"
	"strings"
	"testing"
)

// qualityQuery is one request of testdata/queries.json.
type qualityQuery struct {
	Query  string   `json:"query"`
	Server string   `json:"server,omitempty"`
	Expect []string `json:"expect"` // exposed names; any of them is a hit
}

// TestSearchQuality runs every query of testdata/queries.json over the
// corpus and reports the share of queries whose first result, and whose
// first three results, hold an expected tool. It fails below 90 % top-3.
func TestSearchQuality(t *testing.T) {
	x, tools := newCorpusIndex(t)
	known := map[string]bool{}
	for _, tool := range tools {
		known[tool.Name] = true
	}
	var queries []qualityQuery
	readJSON(t, "testdata/queries.json", &queries)
	if len(queries) < 40 {
		t.Fatalf("%d queries, want at least 40", len(queries))
	}
	top1, top3 := 0, 0
	for _, q := range queries {
		for _, e := range q.Expect {
			if !known[e] {
				t.Fatalf("query %q expects %s, which the corpus does not have", q.Query, e)
			}
		}
		res := x.Search(q.Query, SearchOptions{Server: q.Server, Limit: 3})
		var got []string
		for _, r := range res {
			got = append(got, r.Tool.Name)
			if q.Server != "" && r.Tool.Server != q.Server {
				t.Errorf("query %q with server %q returned %s of server %s", q.Query, q.Server, r.Tool.Name, r.Tool.Server)
			}
		}
		rank := slices.IndexFunc(got, func(n string) bool { return slices.Contains(q.Expect, n) })
		switch {
		case rank == 0:
			top1++
			top3++
		case rank > 0:
			top3++
			t.Logf("top-3 only: %q → %s (want %s)", q.Query, strings.Join(got, ", "), strings.Join(q.Expect, " or "))
		default:
			t.Logf("miss: %q → %s (want %s)", q.Query, strings.Join(got, ", "), strings.Join(q.Expect, " or "))
		}
	}
	r1 := float64(top1) / float64(len(queries))
	r3 := float64(top3) / float64(len(queries))
	t.Logf("%d queries over %d tools: top-1 %.1f %%, top-3 %.1f %%", len(queries), len(tools), 100*r1, 100*r3)
	if r3 < 0.90 {
		t.Errorf("top-3 hit rate %.1f %%, want at least 90 %%", 100*r3)
	}
}
