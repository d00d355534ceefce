package toolsearch

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcplife/mcplife/projector"
)

// syntheticTools returns n tools: copies of the corpus spread over
// synthetic servers ("github-3"), as a session with many servers of the
// same kinds would have.
func syntheticTools(t testing.TB, n int) []projector.Tool {
	var raw []corpusTool
	readJSON(t, "testdata/corpus.json", &raw)
	var out []corpusTool
	for copyN := 0; len(out) < n; copyN++ {
		for _, c := range raw {
			if len(out) == n {
				break
			}
			c.Server = fmt.Sprintf("%s-%d", c.Server, copyN)
			out = append(out, c)
		}
	}
	return toTools(out)
}

// reportPercentiles reports the 50th and 99th percentile of durations.
func reportPercentiles(b *testing.B, durations []time.Duration) {
	if len(durations) == 0 {
		return
	}
	slices.Sort(durations)
	at := func(p float64) float64 {
		return float64(durations[int(p*float64(len(durations)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

// BenchmarkSearch10k searches an index of 10,000 tools with the queries of
// testdata/queries.json (goal: p99 < 2 ms).
func BenchmarkSearch10k(b *testing.B) {
	x := New()
	x.Sync(syntheticTools(b, 10000))
	if x.Len() != 10000 {
		b.Fatalf("index holds %d tools", x.Len())
	}
	var queries []qualityQuery
	readJSON(b, "testdata/queries.json", &queries)
	durations := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := queries[i%len(queries)]
		start := time.Now()
		if len(x.Search(q.Query, SearchOptions{})) == 0 {
			b.Fatalf("no result for %q", q.Query)
		}
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, durations)
}

// BenchmarkSetServer100 replaces the 100 tools of one server in an index
// of 10,000 tools, as a ToolsListed does (goal: < 1 ms). Each round swaps
// between two different tool sets, so every update analyses new
// definitions.
func BenchmarkSetServer100(b *testing.B) {
	x := New()
	x.Sync(syntheticTools(b, 10000))
	corpus := loadCorpus(b)
	sets := [2][]projector.Tool{corpus[:100], corpus[100:200]}
	durations := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		x.SetServer("updated", sets[i%2])
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, durations)
}
