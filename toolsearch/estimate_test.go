package toolsearch

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"testing"
	"unicode/utf8"

	"github.com/mcplife/mcplife/events"
)

// corpusTool is one tool of testdata/corpus.json or testdata/real_tools.json.
type corpusTool struct {
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

func (c corpusTool) def() events.ToolDef {
	return events.ToolDef{Name: c.Name, Title: c.Title, Description: c.Description, InputSchema: c.InputSchema}
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// referenceText is the text testdata/count_tokens.mjs counts for def.
func referenceText(def events.ToolDef) string {
	var schema bytes.Buffer
	if len(def.InputSchema) > 0 {
		if err := json.Compact(&schema, def.InputSchema); err != nil {
			panic(err)
		}
	}
	return def.Name + "\n" + def.Description + "\n" + schema.String()
}

// tokenCounts is testdata/tokens.json, written by testdata/count_tokens.mjs.
type tokenCounts struct {
	Tokenizer string `json:"tokenizer"`
	Tools     []struct {
		File   string `json:"file"`
		Server string `json:"server"`
		Name   string `json:"name"`
		Chars  int    `json:"chars"`
		Cl100k int    `json:"cl100k_base"`
		O200k  int    `json:"o200k_base"`
	} `json:"tools"`
}

// TestEstimateTokensAgainstTokenizer compares EstimateTokens with the real
// counts of testdata/tokens.json: within 15 % in aggregate for each file
// and encoding, and within 25 % for every single tool.
func TestEstimateTokensAgainstTokenizer(t *testing.T) {
	defs := map[[2]string]events.ToolDef{}
	for _, file := range []string{"corpus.json", "real_tools.json"} {
		var tools []corpusTool
		readJSON(t, "testdata/"+file, &tools)
		for _, c := range tools {
			defs[[2]string{file, c.Server + "/" + c.Name}] = c.def()
		}
	}
	var ref tokenCounts
	readJSON(t, "testdata/tokens.json", &ref)
	if len(ref.Tools) < len(defs) {
		t.Fatalf("tokens.json counts %d tools, the test data has %d: run testdata/count_tokens.mjs", len(ref.Tools), len(defs))
	}
	type sums struct{ est, cl, o int }
	per := map[string]*sums{}
	worst := 0.0
	for _, r := range ref.Tools {
		def, ok := defs[[2]string{r.File, r.Server + "/" + r.Name}]
		if !ok {
			t.Fatalf("tokens.json counts %s %s/%s, which the test data does not have", r.File, r.Server, r.Name)
		}
		if n := utf8.RuneCountInString(referenceText(def)); n != r.Chars {
			t.Fatalf("%s/%s: tokens.json counted %d characters, the text has %d: run testdata/count_tokens.mjs", r.Server, r.Name, r.Chars, n)
		}
		est := EstimateTokens(def)
		s := per[r.File]
		if s == nil {
			s = &sums{}
			per[r.File] = s
		}
		s.est += est
		s.cl += r.Cl100k
		s.o += r.O200k
		for _, real := range []int{r.Cl100k, r.O200k} {
			rel := math.Abs(float64(est-real)) / float64(real)
			worst = max(worst, rel)
			if rel > 0.25 {
				t.Errorf("%s/%s: estimate %d, real %d (cl100k_base %d, o200k_base %d)", r.Server, r.Name, est, real, r.Cl100k, r.O200k)
			}
		}
	}
	for file, s := range per {
		for enc, real := range map[string]int{"cl100k_base": s.cl, "o200k_base": s.o} {
			rel := float64(s.est-real) / float64(real)
			t.Logf("%s: estimate %d, %s %d: %+.1f %%", file, s.est, enc, real, 100*rel)
			if math.Abs(rel) > 0.15 {
				t.Errorf("%s: estimate %d is %+.1f %% off the %s count %d", file, s.est, 100*rel, enc, real)
			}
		}
	}
	t.Logf("worst single tool: %.1f %% off (%s)", 100*worst, ref.Tokenizer)
}

// TestEstimateTextTokens checks small texts whose real counts are known
// (cl100k_base / o200k_base, from gpt-tokenizer 4.0.0).
func TestEstimateTextTokens(t *testing.T) {
	for _, tc := range []struct {
		text     string
		min, max int
	}{
		{"", 0, 0},
		{"Create a new issue in a GitHub repository.", 9, 10},
		{`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`, 18, 19},
		{"pullNumber", 2, 2},
		{"12345678", 3, 3},
	} {
		if got := EstimateTextTokens(tc.text); got < tc.min || got > tc.max {
			t.Errorf("EstimateTextTokens(%q) = %d, want %d..%d", tc.text, got, tc.min, tc.max)
		}
	}
}
