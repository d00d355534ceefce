package contract

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcplife/mcplife/events"
)

// tool decodes a tool definition written as JSON.
func tool(t *testing.T, def string) events.ToolDef {
	t.Helper()
	var d events.ToolDef
	if err := json.Unmarshal([]byte(def), &d); err != nil {
		t.Fatalf("tool %s: %v", def, err)
	}
	return d
}

func tools(t *testing.T, defs ...string) *Surface {
	s := &Surface{Server: "s", HasTools: true, HasResources: true, HasPrompts: true}
	for _, d := range defs {
		s.Tools = append(s.Tools, tool(t, d))
	}
	return s
}

// line renders a change as the table lists it.
func line(c Change) string { return fmt.Sprintf("%s %s %s", c.Class, c.Kind, c.Pointer) }

func lines(cs []Change) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, line(c))
	}
	return out
}

// schemaPairs is the classification table: each row is a tool "t" before
// and after, and every change expected between them.
var schemaPairs = []struct {
	name          string
	before, after string
	want          []string
}{
	{"same schema, keys reordered",
		`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`,
		`{"inputSchema":{"properties":{"a":{"type":"string"}},"type":"object"},"name":"t"}`,
		nil},
	{"description changed",
		`{"name":"t","description":"old"}`, `{"name":"t","description":"new"}`,
		[]string{"non-breaking changed /tools/t/description"}},
	{"title added",
		`{"name":"t"}`, `{"name":"t","title":"T"}`,
		[]string{"non-breaking added /tools/t/title"}},
	{"parameter description changed",
		`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string","description":"x"}}}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string","description":"y"}}}}`,
		[]string{"non-breaking changed /tools/t/inputSchema/properties/a/description"}},
	{"optional parameter added",
		`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number"}}}}`,
		[]string{"non-breaking added /tools/t/inputSchema/properties/b"}},
	{"parameter added as required",
		`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number"}},"required":["b"]}}`,
		[]string{"breaking added /tools/t/inputSchema/properties/b"}},
	{"parameter removed",
		`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number"}}}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`,
		[]string{"breaking removed /tools/t/inputSchema/properties/b"}},
	{"parameter made required",
		`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}`,
		[]string{"breaking changed /tools/t/inputSchema/required"}},
	{"parameter made optional",
		`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`,
		[]string{"non-breaking changed /tools/t/inputSchema/required"}},
	{"type narrowed number → integer",
		`{"name":"t","inputSchema":{"type":"object","properties":{"n":{"type":"number"}}}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"n":{"type":"integer"}}}}`,
		[]string{"breaking changed /tools/t/inputSchema/properties/n/type"}},
	{"type widened integer → number",
		`{"name":"t","inputSchema":{"type":"object","properties":{"n":{"type":"integer"}}}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"n":{"type":"number"}}}}`,
		[]string{"non-breaking changed /tools/t/inputSchema/properties/n/type"}},
	{"type narrowed [string, null] → string",
		`{"name":"t","inputSchema":{"type":"object","properties":{"s":{"type":["string","null"]}}}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"s":{"type":"string"}}}}`,
		[]string{"breaking changed /tools/t/inputSchema/properties/s/type"}},
	{"type widened string → [string, null]",
		`{"name":"t","inputSchema":{"type":"object","properties":{"s":{"type":"string"}}}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"s":{"type":["string","null"]}}}}`,
		[]string{"non-breaking changed /tools/t/inputSchema/properties/s/type"}},
	{"type changed string → number",
		`{"name":"t","inputSchema":{"type":"object","properties":{"s":{"type":"string"}}}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"s":{"type":"number"}}}}`,
		[]string{"breaking changed /tools/t/inputSchema/properties/s/type"}},
	{"type set where any type went",
		`{"name":"t","inputSchema":{"type":"object","properties":{"v":{}}}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"v":{"type":"string"}}}}`,
		[]string{"breaking added /tools/t/inputSchema/properties/v/type"}},
	{"enum value removed",
		`{"name":"t","inputSchema":{"type":"object","properties":{"m":{"type":"string","enum":["fast","slow"]}}}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"m":{"type":"string","enum":["fast"]}}}}`,
		[]string{"breaking removed /tools/t/inputSchema/properties/m/enum"}},
	{"enum value added",
		`{"name":"t","inputSchema":{"type":"object","properties":{"m":{"type":"string","enum":["fast"]}}}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"m":{"type":"string","enum":["fast","slow"]}}}}`,
		[]string{"non-breaking added /tools/t/inputSchema/properties/m/enum"}},
	{"enum set on a free parameter",
		`{"name":"t","inputSchema":{"type":"object","properties":{"m":{"type":"string"}}}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"m":{"type":"string","enum":["fast"]}}}}`,
		[]string{"breaking added /tools/t/inputSchema/properties/m/enum"}},
	{"nested parameter removed",
		`{"name":"t","inputSchema":{"type":"object","properties":{"o":{"type":"object","properties":{"x":{"type":"string"},"y":{"type":"string"}}}}}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"o":{"type":"object","properties":{"x":{"type":"string"}}}}}}`,
		[]string{"breaking removed /tools/t/inputSchema/properties/o/properties/y"}},
	{"array items type narrowed",
		`{"name":"t","inputSchema":{"type":"object","properties":{"l":{"type":"array","items":{"type":"number"}}}}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"l":{"type":"array","items":{"type":"integer"}}}}}`,
		[]string{"breaking changed /tools/t/inputSchema/properties/l/items/type"}},
	{"maximum lowered, minimum lowered",
		`{"name":"t","inputSchema":{"type":"object","properties":{"n":{"type":"number","minimum":1,"maximum":10}}}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"n":{"type":"number","minimum":0,"maximum":5}}}}`,
		[]string{"breaking changed /tools/t/inputSchema/properties/n/maximum", "non-breaking changed /tools/t/inputSchema/properties/n/minimum"}},
	{"maxLength added, pattern removed",
		`{"name":"t","inputSchema":{"type":"object","properties":{"s":{"type":"string","pattern":"^a"}}}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"s":{"type":"string","maxLength":3}}}}`,
		[]string{"breaking added /tools/t/inputSchema/properties/s/maxLength", "non-breaking removed /tools/t/inputSchema/properties/s/pattern"}},
	{"additional properties forbidden",
		`{"name":"t","inputSchema":{"type":"object"}}`,
		`{"name":"t","inputSchema":{"type":"object","additionalProperties":false}}`,
		[]string{"breaking added /tools/t/inputSchema/additionalProperties"}},
	{"additional properties allowed",
		`{"name":"t","inputSchema":{"type":"object","additionalProperties":false}}`,
		`{"name":"t","inputSchema":{"type":"object"}}`,
		[]string{"non-breaking removed /tools/t/inputSchema/additionalProperties"}},
	{"anyOf branch added",
		`{"name":"t","inputSchema":{"type":"object","properties":{"v":{"anyOf":[{"type":"string"}]}}}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"null"}]}}}}`,
		[]string{"non-breaking changed /tools/t/inputSchema/properties/v/anyOf"}},
	{"keyword not analysed ($ref changed)",
		`{"name":"t","inputSchema":{"type":"object","properties":{"v":{"$ref":"#/$defs/a"}}}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"v":{"$ref":"#/$defs/b"}}}}`,
		[]string{"breaking changed /tools/t/inputSchema/properties/v/$ref"}},
	{"output property removed",
		`{"name":"t","outputSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}}`,
		`{"name":"t","outputSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`,
		[]string{"breaking removed /tools/t/outputSchema/properties/b"}},
	{"output property added",
		`{"name":"t","outputSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`,
		`{"name":"t","outputSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["b"]}}`,
		[]string{"non-breaking added /tools/t/outputSchema/properties/b"}},
	{"output type widened integer → number",
		`{"name":"t","outputSchema":{"type":"object","properties":{"n":{"type":"integer"}}}}`,
		`{"name":"t","outputSchema":{"type":"object","properties":{"n":{"type":"number"}}}}`,
		[]string{"breaking changed /tools/t/outputSchema/properties/n/type"}},
	{"output type narrowed number → integer",
		`{"name":"t","outputSchema":{"type":"object","properties":{"n":{"type":"number"}}}}`,
		`{"name":"t","outputSchema":{"type":"object","properties":{"n":{"type":"integer"}}}}`,
		[]string{"non-breaking changed /tools/t/outputSchema/properties/n/type"}},
	{"output property made optional",
		`{"name":"t","outputSchema":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}`,
		`{"name":"t","outputSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`,
		[]string{"breaking changed /tools/t/outputSchema/required"}},
	{"output schema added",
		`{"name":"t"}`, `{"name":"t","outputSchema":{"type":"object"}}`,
		[]string{"non-breaking added /tools/t/outputSchema"}},
	{"output schema removed",
		`{"name":"t","outputSchema":{"type":"object"}}`, `{"name":"t"}`,
		[]string{"breaking removed /tools/t/outputSchema"}},
	{"readOnlyHint true → false",
		`{"name":"t","annotations":{"readOnlyHint":true}}`, `{"name":"t","annotations":{"readOnlyHint":false}}`,
		[]string{"breaking changed /tools/t/annotations/readOnlyHint"}},
	{"readOnlyHint true → absent (default false)",
		`{"name":"t","annotations":{"readOnlyHint":true}}`, `{"name":"t"}`,
		[]string{"breaking removed /tools/t/annotations/readOnlyHint"}},
	{"readOnlyHint false → true",
		`{"name":"t","annotations":{"readOnlyHint":false}}`, `{"name":"t","annotations":{"readOnlyHint":true}}`,
		[]string{"non-breaking changed /tools/t/annotations/readOnlyHint"}},
	{"destructiveHint false → true",
		`{"name":"t","annotations":{"destructiveHint":false}}`, `{"name":"t","annotations":{"destructiveHint":true}}`,
		[]string{"breaking changed /tools/t/annotations/destructiveHint"}},
	{"destructiveHint false → absent (default true)",
		`{"name":"t","annotations":{"destructiveHint":false}}`, `{"name":"t","annotations":{}}`,
		[]string{"breaking removed /tools/t/annotations/destructiveHint"}},
	{"destructiveHint absent → true (the default, said)",
		`{"name":"t"}`, `{"name":"t","annotations":{"destructiveHint":true}}`,
		[]string{"non-breaking added /tools/t/annotations/destructiveHint"}},
	{"destructiveHint true → false",
		`{"name":"t","annotations":{"destructiveHint":true}}`, `{"name":"t","annotations":{"destructiveHint":false}}`,
		[]string{"non-breaking changed /tools/t/annotations/destructiveHint"}},
	{"destructiveHint dropped on a read-only tool",
		`{"name":"t","annotations":{"readOnlyHint":true,"destructiveHint":false}}`, `{"name":"t","annotations":{"readOnlyHint":true}}`,
		[]string{"non-breaking removed /tools/t/annotations/destructiveHint"}},
	{"idempotentHint true → false",
		`{"name":"t","annotations":{"idempotentHint":true}}`, `{"name":"t","annotations":{"idempotentHint":false}}`,
		[]string{"breaking changed /tools/t/annotations/idempotentHint"}},
	{"openWorldHint false → absent (default true)",
		`{"name":"t","annotations":{"openWorldHint":false}}`, `{"name":"t"}`,
		[]string{"breaking removed /tools/t/annotations/openWorldHint"}},
	{"read-only tool becomes a writer, its stated idempotentHint false dropped",
		`{"name":"t","annotations":{"readOnlyHint":true,"idempotentHint":false}}`, `{"name":"t","annotations":{}}`,
		[]string{"breaking removed /tools/t/annotations/readOnlyHint", "non-breaking removed /tools/t/annotations/idempotentHint"}},
	{"annotation title changed",
		`{"name":"t","annotations":{"title":"A"}}`, `{"name":"t","annotations":{"title":"B"}}`,
		[]string{"non-breaking changed /tools/t/annotations/title"}},
	{"icons added",
		`{"name":"t"}`, `{"name":"t","icons":[{"src":"data:image/png;base64,AA=="}]}`,
		[]string{"non-breaking added /tools/t/icons"}},
}

// TestClassification runs the classification table over one tool.
func TestClassification(t *testing.T) {
	for _, tc := range schemaPairs {
		t.Run(tc.name, func(t *testing.T) {
			got := lines(Compare(tools(t, tc.before), tools(t, tc.after)))
			want := tc.want
			if want == nil {
				want = []string{}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClassificationTable prints the table for the record (go test -v
// -run TestClassificationTable).
func TestClassificationTable(t *testing.T) {
	var b strings.Builder
	for _, tc := range schemaPairs {
		got := Compare(tools(t, tc.before), tools(t, tc.after))
		for _, c := range got {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", tc.name, c.Pointer, c.Kind, c.Class, c.Detail)
		}
		if len(got) == 0 {
			fmt.Fprintf(&b, "| %s | — | — | — | no change |\n", tc.name)
		}
	}
	t.Log("\n" + b.String())
}

func TestToolsAddedAndRemoved(t *testing.T) {
	a := tools(t, `{"name":"keep"}`, `{"name":"gone"}`)
	b := tools(t, `{"name":"keep"}`, `{"name":"new/tool"}`)
	got := lines(Compare(a, b))
	want := []string{"breaking removed /tools/gone", "non-breaking added /tools/new~1tool"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestResourcesTemplatesAndPrompts(t *testing.T) {
	a := &Surface{Server: "s", HasTools: true, HasResources: true, HasPrompts: true,
		Resources: []events.ResourceDef{{URI: "file:///a", Name: "a", MIMEType: "text/plain"}, {URI: "file:///b", Name: "b"}},
		Templates: []events.ResourceTemplateDef{{URITemplate: "x://{id}", Name: "x"}},
		Prompts: []events.PromptDef{
			{Name: "p", Arguments: []events.PromptArgument{{Name: "topic"}, {Name: "style"}, {Name: "tone", Required: true}}},
			{Name: "q"},
		},
	}
	b := &Surface{Server: "s", HasTools: true, HasResources: true, HasPrompts: true,
		Resources: []events.ResourceDef{{URI: "file:///a", Name: "a", MIMEType: "application/json", Description: "now JSON"}, {URI: "file:///c", Name: "c"}},
		Templates: []events.ResourceTemplateDef{{URITemplate: "y://{id}", Name: "y"}},
		Prompts: []events.PromptDef{
			{Name: "p", Description: "d", Arguments: []events.PromptArgument{{Name: "topic", Required: true}, {Name: "tone"}, {Name: "length", Required: true}, {Name: "extra"}}},
			{Name: "r"},
		},
	}
	got := lines(Compare(a, b))
	want := []string{
		"non-breaking added /resources/file:~1~1~1a/description",
		"breaking changed /resources/file:~1~1~1a/mimeType",
		"breaking removed /resources/file:~1~1~1b",
		"non-breaking added /resources/file:~1~1~1c",
		"breaking removed /resourceTemplates/x:~1~1{id}",
		"non-breaking added /resourceTemplates/y:~1~1{id}",
		"non-breaking added /prompts/p/description",
		"non-breaking added /prompts/p/arguments/extra",
		"breaking added /prompts/p/arguments/length",
		"breaking removed /prompts/p/arguments/style",
		"non-breaking changed /prompts/p/arguments/tone/required",
		"breaking changed /prompts/p/arguments/topic/required",
		"breaking removed /prompts/q",
		"non-breaking added /prompts/r",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

// A kind one side never listed is not compared.
func TestUnknownKindsAreNotCompared(t *testing.T) {
	a := &Surface{Server: "s", HasTools: true, HasPrompts: true, Prompts: []events.PromptDef{{Name: "p"}}}
	b := &Surface{Server: "s", HasTools: true}
	if got := Compare(a, b); len(got) != 0 {
		t.Errorf("changes %v, want none", lines(got))
	}
	if got := Unknown(b); !cmp.Equal(got, []string{"resources", "prompts"}) {
		t.Errorf("Unknown = %v", got)
	}
}

func TestChangeCarriesValues(t *testing.T) {
	got := Compare(
		tools(t, `{"name":"t","inputSchema":{"type":"object","properties":{"n":{"type":"number"}}}}`),
		tools(t, `{"name":"t","inputSchema":{"type":"object","properties":{"n":{"type":"integer"}}}}`))
	if len(got) != 1 || string(got[0].Before) != `"number"` || string(got[0].After) != `"integer"` || got[0].Detail != "type narrowed" || got[0].Server != "s" {
		t.Errorf("got %+v", got)
	}
	if !AnyBreaking(got) {
		t.Error("AnyBreaking = false")
	}
}
