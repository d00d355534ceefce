package manager

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/fixture"
)

// bigText is what the fixture's big_result tool returns for n bytes.
func bigText(n int) string {
	return strings.Repeat("0123456789abcdef", n/16+1)[:n]
}

// TestOutputBudget: a result whose text is over its server's budget
// reaches the caller cut to the budget, with a marker naming a 0600 file
// under the output directory that holds the whole text; ToolCallFinished
// records truncated and the size, never the content. A result under the
// budget, and any result of a server whose budget is 0, is untouched.
func TestOutputBudget(t *testing.T) {
	for _, c := range []struct {
		name   string
		budget *int64 // the config's MaxOutputBytes
		bytes  int    // the result's text
		cut    int64  // the budget that applies; 0: not cut
	}{
		{"default over", nil, 300_000, defaultMaxOutputBytes},
		{"default under", nil, defaultMaxOutputBytes, 0},
		{"configured over", new(int64(4096)), 4097, 4096},
		{"configured under", new(int64(4096)), 1000, 0},
		{"no limit", new(int64(0)), 300_000, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "outputs")
			e := newEnv(t, &Options{OutputDir: dir})
			ctx := testCtx(t)
			cfg := stdio(t, "bulky", "only=big_result")
			cfg.MaxOutputBytes = c.budget
			if res, err := e.m.ConnectServers(ctx, []events.ServerConfig{cfg}, nil); err != nil || len(res.Errors) > 0 {
				t.Fatal(res, err)
			}
			r, err := tool(t, e.m, "mcp_bulky_big_result").Call(ctx, map[string]any{"bytes": c.bytes})
			if err != nil || r.Result.IsError {
				t.Fatalf("call: %.200v %v", r, err)
			}
			whole := bigText(c.bytes)
			fins := ofType[*events.ToolCallFinished](e, "s1")
			if len(fins) != 1 || fins[0].OutputBytes != int64(c.bytes) || fins[0].Truncated != (c.cut > 0) {
				t.Fatalf("ToolCallFinished %+v, want outputBytes %d truncated %t", fins, c.bytes, c.cut > 0)
			}
			for _, env := range e.events("s1") {
				if bytes.Contains(env.Data, []byte("0123456789abcdef")) {
					t.Errorf("%s records the result's content", env.Type)
				}
			}
			if c.cut == 0 {
				if r.Truncated || r.FullOutput != "" || len(r.Result.Content) != 1 || textOf(r.Result.Content[0]) != whole {
					t.Fatalf("result under the budget changed: truncated %t, %d items, %d bytes", r.Truncated, len(r.Result.Content), len(r.Text()))
				}
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					t.Errorf("output directory created for an uncut result: %v", err)
				}
				return
			}
			if !r.Truncated || len(r.Result.Content) != 2 || textOf(r.Result.Content[0]) != whole[:c.cut] {
				t.Fatalf("cut result: truncated %t, %d items, first %d bytes", r.Truncated, len(r.Result.Content), len(textOf(r.Result.Content[0])))
			}
			marker := textOf(r.Result.Content[1])
			t.Logf("marker: %s", marker)
			if filepath.Dir(r.FullOutput) != dir || !strings.HasSuffix(r.FullOutput, ".txt") {
				t.Fatalf("FullOutput %q, want a .txt file in %s", r.FullOutput, dir)
			}
			for _, want := range []string{"output cut to", "maxOutputBytes", `"bulky"`, r.FullOutput} {
				contains(t, "marker", marker, want)
			}
			fi, err := os.Stat(r.FullOutput)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600", fi.Mode().Perm())
			}
			got, err := os.ReadFile(r.FullOutput)
			if err != nil || string(got) != whole {
				t.Errorf("file holds %d bytes, want the whole %d: %v", len(got), len(whole), err)
			}
		})
	}
}

// TestOutputBudgetCutsInOrder: the budget counts text items and embedded
// text in order; what does not fit is cut at a character boundary or
// dropped, binary content stays, and a result that is not only text is
// saved whole as JSON.
func TestOutputBudgetCutsInOrder(t *testing.T) {
	dir := t.TempDir()
	m := &Manager{opts: Options{OutputDir: dir}, now: time.Now, log: slog.New(slog.DiscardHandler)}
	sent := fixture.MediaResult()
	sent.Content = append([]mcp.Content{&mcp.TextContent{Text: "ab€cd"}}, sent.Content...) // € is 3 bytes
	sent.Content = append(sent.Content, &mcp.TextContent{Text: "dropped"})
	whole, _ := json.Marshal(sent)
	r := &CallResult{Result: sent}
	size, cut := m.applyBudget("fx", "media", r, 4)
	if want := int64(len("ab€cd") + len("embedded note") + len("six items") + len("dropped")); size != want || !cut {
		t.Fatalf("size %d cut %t, want %d true", size, cut, want)
	}
	if after, _ := json.Marshal(sent); !bytes.Equal(after, whole) {
		t.Errorf("the go-sdk's result was changed in place: %.200s", after)
	}
	var kinds []string
	for _, c := range r.Result.Content {
		b, _ := json.Marshal(c)
		var k struct{ Type, Text string }
		json.Unmarshal(b, &k)
		kind := k.Type
		switch c := c.(type) {
		case *mcp.TextContent:
			kind += ":" + c.Text
		case *mcp.EmbeddedResource:
			kind += ":" + c.Resource.URI
		}
		kinds = append(kinds, kind)
	}
	want := []string{"text:ab", "image", "audio", "resource_link", "resource:file:///fixture/pixel.png"}
	if len(kinds) != len(want)+1 || strings.Join(kinds[:len(want)], " ") != strings.Join(want, " ") || !strings.HasPrefix(kinds[len(want)], "text:[mcplife: output cut to 4 of ") {
		t.Fatalf("cut content %q, want %q and the marker", kinds, want)
	}
	if !strings.HasSuffix(r.FullOutput, ".json") {
		t.Fatalf("FullOutput %q, want JSON", r.FullOutput)
	}
	if got, err := os.ReadFile(r.FullOutput); err != nil || !bytes.Equal(got, whole) {
		t.Errorf("file holds %.200s, want the whole result %.200s (%v)", got, whole, err)
	}
}

// TestOutputBudgetUnsaved: when the whole result cannot be written the
// result is still cut, and the marker says why instead of naming a file.
func TestOutputBudgetUnsaved(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	m := &Manager{opts: Options{OutputDir: filepath.Join(blocker, "outputs")}, now: time.Now, log: slog.New(slog.DiscardHandler)}
	r := &CallResult{Result: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: bigText(100)}}}}
	if _, cut := m.applyBudget("fx", "big", r, 10); !cut || !r.Truncated || r.FullOutput != "" {
		t.Fatalf("cut %t, result %+v", cut, r)
	}
	contains(t, "marker", textOf(r.Result.Content[1]), "the whole result could not be saved: ")
}
