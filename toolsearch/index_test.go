package toolsearch

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/projector"
)

// tool returns a tool of server with its exposed name.
func tool(server, name, desc string, schema string) projector.Tool {
	def := events.ToolDef{Name: name, Description: desc}
	if schema != "" {
		def.InputSchema = json.RawMessage(schema)
	}
	return projector.Tool{Name: projector.ToolName(server, name), Server: server, Original: name, Def: def}
}

func names(rs []Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Tool.Name)
	}
	return out
}

func TestSearchRanksNameAboveDescription(t *testing.T) {
	x := New()
	x.SetServer("a", []projector.Tool{
		tool("a", "list_things", "Lists things; use it before you merge anything.", ""),
		tool("a", "merge_branch", "Combine two lines of work.", ""),
	})
	got := names(x.Search("merge", SearchOptions{}))
	if want := []string{"mcp_a_merge_branch", "mcp_a_list_things"}; !slices.Equal(got, want) {
		t.Errorf("Search = %q, want %q", got, want)
	}
}

func TestSearchFindsParameters(t *testing.T) {
	x := New()
	x.SetServer("db", []projector.Tool{
		tool("db", "run", "Runs a statement.", `{"type":"object","properties":{"opts":{"type":"object","properties":{"isolationLevel":{"type":"string","description":"Transaction isolation"}}}}}`),
		tool("db", "stats", "Shows statistics.", `{"type":"object","properties":{"table":{"type":"string"}}}`),
	})
	for _, q := range []string{"isolation level", "transaction"} {
		if got := names(x.Search(q, SearchOptions{})); !slices.Equal(got, []string{"mcp_db_run"}) {
			t.Errorf("Search(%q) = %q, want mcp_db_run only", q, got)
		}
	}
}

func TestSearchServerFilterAndLimit(t *testing.T) {
	x := New()
	for _, s := range []string{"github", "gitlab", "jira"} {
		x.SetServer(s, []projector.Tool{
			tool(s, "create_issue", "Create a new issue.", ""),
			tool(s, "list_issues", "List issues.", ""),
		})
	}
	got := names(x.Search("create issue", SearchOptions{Server: "gitlab"}))
	if want := []string{"mcp_gitlab_create_issue", "mcp_gitlab_list_issues"}; !slices.Equal(got, want) {
		t.Errorf("filtered Search = %q, want %q", got, want)
	}
	if got := x.Search("create issue", SearchOptions{Server: "nope"}); got != nil {
		t.Errorf("Search of an unknown server = %q, want nothing", names(got))
	}
	// Equal scores are ordered by exposed name.
	got = names(x.Search("create issue", SearchOptions{Limit: 2}))
	if want := []string{"mcp_github_create_issue", "mcp_gitlab_create_issue"}; !slices.Equal(got, want) {
		t.Errorf("Search with limit 2 = %q, want %q", got, want)
	}
	if got := x.Search("issue", SearchOptions{}); len(got) != 5 {
		t.Errorf("Search returned %d results, want DefaultLimit = %d", len(got), DefaultLimit)
	}
	if got := x.Search("the and of", SearchOptions{}); got != nil {
		t.Errorf("a query of stop words returned %q", names(got))
	}
}

func TestSetServerReplacesAndRemoves(t *testing.T) {
	x := New()
	x.SetServer("a", []projector.Tool{tool("a", "alpha", "First tool.", ""), tool("a", "beta", "Second tool.", "")})
	x.SetServer("b", []projector.Tool{tool("b", "gamma", "Third tool.", "")})
	x.SetServer("a", []projector.Tool{tool("a", "delta", "Replacement tool.", "")})
	if x.Len() != 2 {
		t.Fatalf("Len = %d, want 2", x.Len())
	}
	if got := x.Search("alpha", SearchOptions{}); got != nil {
		t.Errorf("a replaced tool is still found: %q", names(got))
	}
	if got := names(x.Search("replacement", SearchOptions{})); !slices.Equal(got, []string{"mcp_a_delta"}) {
		t.Errorf("Search(replacement) = %q", got)
	}
	x.RemoveServer("a")
	x.RemoveServer("missing")
	if got := x.Search("replacement", SearchOptions{}); got != nil {
		t.Errorf("a removed server's tool is still found: %q", names(got))
	}
	x.SetServer("b", nil)
	if x.Len() != 0 || len(x.terms) != 0 {
		t.Errorf("empty index holds %d tools and %d terms", x.Len(), len(x.terms))
	}
}

// TestUpdatesMatchFreshIndex checks that an index updated many times
// scores exactly as one built from scratch: stale postings, reused slots
// and corpus statistics leave no trace.
func TestUpdatesMatchFreshIndex(t *testing.T) {
	corpus := loadCorpus(t)
	byServer := map[string][]projector.Tool{}
	var servers []string
	for _, tl := range corpus {
		if byServer[tl.Server] == nil {
			servers = append(servers, tl.Server)
		}
		byServer[tl.Server] = append(byServer[tl.Server], tl)
	}
	updated := New()
	for round := range 5 {
		for i, s := range servers {
			switch (i + round) % 3 {
			case 0:
				updated.RemoveServer(s)
			default:
				updated.SetServer(s, byServer[s])
			}
		}
	}
	for _, s := range servers {
		updated.SetServer(s, byServer[s])
	}
	fresh := New()
	fresh.Sync(corpus)
	if updated.Len() != fresh.Len() {
		t.Fatalf("Len = %d, fresh %d", updated.Len(), fresh.Len())
	}
	var queries []qualityQuery
	readJSON(t, "testdata/queries.json", &queries)
	for _, q := range queries {
		a := updated.Search(q.Query, SearchOptions{Limit: 10})
		b := fresh.Search(q.Query, SearchOptions{Limit: 10})
		if fmt.Sprint(names(a)) != fmt.Sprint(names(b)) {
			t.Fatalf("%q: updated index %q, fresh %q", q.Query, names(a), names(b))
		}
		for i := range a {
			if d := a[i].Score - b[i].Score; d > 1e-9 || d < -1e-9 {
				t.Fatalf("%q: %s scores %v, fresh %v", q.Query, a[i].Tool.Name, a[i].Score, b[i].Score)
			}
		}
	}
}

func TestSyncReindexesOnlyChangedServers(t *testing.T) {
	x := New()
	a := []projector.Tool{tool("a", "alpha", "First tool.", "")}
	b := []projector.Tool{tool("b", "beta", "Second tool.", "")}
	x.Sync(append(slices.Clone(a), b...))
	sa, sb := x.servers["a"], x.servers["b"]
	b2 := []projector.Tool{tool("b", "beta", "Second tool, now with a longer description.", "")}
	x.Sync(append(slices.Clone(a), b2...))
	if x.servers["a"] != sa {
		t.Error("Sync re-indexed an unchanged server")
	}
	if x.servers["b"] == sb {
		t.Error("Sync kept a changed server")
	}
	if got := names(x.Search("longer description", SearchOptions{})); !slices.Equal(got, []string{"mcp_b_beta"}) {
		t.Errorf("Search after Sync = %q", got)
	}
	x.Sync(b2)
	if x.Len() != 1 || x.servers["a"] != nil {
		t.Errorf("Sync kept a server that is gone (Len %d)", x.Len())
	}
}

func TestResultCarriesTool(t *testing.T) {
	x := New()
	in := tool("fs", "read_file", "Read a file.", `{"type":"object","properties":{"path":{"type":"string"}}}`)
	in.Server = "ignored"
	x.SetServer("fs", []projector.Tool{in})
	res := x.Search("read file", SearchOptions{})
	if len(res) != 1 {
		t.Fatalf("Search = %q", names(res))
	}
	got := res[0].Tool
	if got.Server != "fs" || got.Name != "mcp_fs_read_file" || got.Original != "read_file" || string(got.Def.InputSchema) != string(in.Def.InputSchema) || res[0].Score <= 0 {
		t.Errorf("result = %+v", res[0])
	}
}

// TestConcurrentUpdateAndSearch runs updates and searches at once; run
// with -race it checks the locking.
func TestConcurrentUpdateAndSearch(t *testing.T) {
	corpus := loadCorpus(t)
	x := New()
	x.Sync(corpus)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 40 {
			x.SetServer("github", corpus[i%10:20+i%10])
			x.Sync(corpus[:200+i])
		}
	}()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				for _, r := range x.Search("create pull request", SearchOptions{Limit: 3}) {
					if r.Tool.Name == "" || r.Score <= 0 {
						t.Errorf("bad result %+v", r)
					}
				}
			}
		}()
	}
	wg.Wait()
	if x.Len() != 239 {
		t.Errorf("Len = %d, want 239", x.Len())
	}
}
