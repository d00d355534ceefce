package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mcplife/mcplife/events"
)

// Kind says what happened at a change's pointer.
type Kind string

// Kinds of [Change].
const (
	Added   Kind = "added"
	Removed Kind = "removed"
	Changed Kind = "changed"
)

// Class says whether a change can break a client written against the
// listing before it.
type Class string

// Classes of [Change].
const (
	Breaking    Class = "breaking"
	NonBreaking Class = "non-breaking"
)

// Change is one difference between two listings of a server.
type Change struct {
	Server string `json:"server"`
	Kind   Kind   `json:"kind"`
	// Pointer is a JSON pointer (RFC 6901) into the server's listing seen
	// as one document {"tools": {NAME: tool}, "resources": {URI: resource},
	// "resourceTemplates": {URI_TEMPLATE: template}, "prompts": {NAME:
	// prompt}}, where a prompt's arguments are an object keyed by name:
	// /tools/echo/inputSchema/properties/text/type.
	Pointer string `json:"pointer"`
	Class   Class  `json:"class"`
	// Detail says what changed, in words: "type narrowed", "parameter
	// made required".
	Detail string `json:"detail"`
	// Before and After are the values at Pointer (absent for an added or
	// a removed one).
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
}

// AnyBreaking reports whether any of changes is breaking.
func AnyBreaking(changes []Change) bool {
	return slices.ContainsFunc(changes, func(c Change) bool { return c.Class == Breaking })
}

// Compare returns the changes from a to b, two surfaces of the same
// server, in a stable order: tools, resources, resource templates, then
// prompts, each by name (or URI), and within one in document order. Kinds
// unknown on either side are not compared.
func Compare(a, b *Surface) []Change {
	d := &differ{server: b.Server}
	if a.HasTools && b.HasTools {
		d.tools(a.Tools, b.Tools)
	}
	if a.HasResources && b.HasResources {
		d.resources(a.Resources, b.Resources)
		d.templates(a.Templates, b.Templates)
	}
	if a.HasPrompts && b.HasPrompts {
		d.prompts(a.Prompts, b.Prompts)
	}
	return d.out
}

// CompareSnapshots returns the changes from snapshot a to snapshot b for
// every server either lists, sorted by server. A server only one of them
// lists is one change at the empty pointer: removed (breaking) or added.
func CompareSnapshots(a, b *Snapshot) []Change {
	var out []Change
	names := map[string]bool{}
	for _, s := range a.Servers() {
		names[s.Server] = true
	}
	for _, s := range b.Servers() {
		names[s.Server] = true
	}
	for _, name := range slices.Sorted(mapsKeys(names)) {
		sa, okA := a.Server(name)
		sb, okB := b.Server(name)
		switch {
		case okA && okB:
			out = append(out, Compare(sa, sb)...)
		case okA:
			out = append(out, Change{Server: name, Kind: Removed, Pointer: "", Class: Breaking, Detail: "server listed nothing"})
		default:
			out = append(out, Change{Server: name, Kind: Added, Pointer: "", Class: NonBreaking, Detail: "server added"})
		}
	}
	return out
}

// Unknown names the kinds of s that are not known ("tools", "resources",
// "prompts"), which [Compare] leaves out.
func Unknown(s *Surface) []string {
	var out []string
	if !s.HasTools {
		out = append(out, "tools")
	}
	if !s.HasResources {
		out = append(out, "resources")
	}
	if !s.HasPrompts {
		out = append(out, "prompts")
	}
	return out
}

type differ struct {
	server string
	out    []Change
}

func (d *differ) add(kind Kind, ptr string, class Class, detail string, before, after any) {
	d.out = append(d.out, Change{Server: d.server, Kind: kind, Pointer: ptr, Class: class, Detail: detail,
		Before: rawOf(before), After: rawOf(after)})
}

// rawOf encodes v for Before and After: nil stays absent, a RawMessage
// is compacted.
func rawOf(v any) json.RawMessage {
	switch v := v.(type) {
	case nil:
		return nil
	case json.RawMessage:
		if len(v) == 0 {
			return nil
		}
		var b bytes.Buffer
		if json.Compact(&b, v) != nil {
			return nil
		}
		return b.Bytes()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// Pointer joins tokens into a JSON pointer, escaping "~" and "/".
func Pointer(tokens ...string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapeToken(t))
	}
	return b.String()
}

func escapeToken(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}

func join(ptr string, tokens ...string) string { return ptr + Pointer(tokens...) }

// byKey indexes a list by key; a later duplicate replaces an earlier one.
func byKey[T any](list []T, key func(*T) string) (map[string]*T, []string) {
	m := make(map[string]*T, len(list))
	for i := range list {
		m[key(&list[i])] = &list[i]
	}
	return m, slices.Sorted(mapsKeys(m))
}

// union returns the sorted union of two sorted key lists.
func union(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

func (d *differ) text(ptr, field, before, after string) {
	if before == after {
		return
	}
	kind := Changed
	switch {
	case before == "":
		kind = Added
	case after == "":
		kind = Removed
	}
	d.add(kind, join(ptr, field), NonBreaking, field+" "+string(kind), nilIfEmpty(before), nilIfEmpty(after))
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (d *differ) tools(a, b []events.ToolDef) {
	ma, ka := byKey(a, func(t *events.ToolDef) string { return t.Name })
	mb, kb := byKey(b, func(t *events.ToolDef) string { return t.Name })
	for _, name := range union(ka, kb) {
		ta, tb := ma[name], mb[name]
		ptr := Pointer("tools", name)
		switch {
		case tb == nil:
			d.add(Removed, ptr, Breaking, "tool removed", nil, nil)
		case ta == nil:
			d.add(Added, ptr, NonBreaking, "tool added", nil, nil)
		default:
			d.tool(ptr, ta, tb)
		}
	}
}

func (d *differ) tool(ptr string, a, b *events.ToolDef) {
	d.text(ptr, "title", a.Title, b.Title)
	d.text(ptr, "description", a.Description, b.Description)
	d.schemaField(join(ptr, "inputSchema"), a.InputSchema, b.InputSchema, input)
	d.schemaField(join(ptr, "outputSchema"), a.OutputSchema, b.OutputSchema, output)
	d.annotations(join(ptr, "annotations"), a.Annotations, b.Annotations)
	d.opaque(join(ptr, "icons"), "icons", a.Icons, b.Icons)
}

// opaque reports a change of a value that means nothing to a client's
// calls (icons, annotations of resources): never breaking.
func (d *differ) opaque(ptr, what string, a, b json.RawMessage) {
	va, okA := decode(a)
	vb, okB := decode(b)
	if okA == okB && equal(va, vb) {
		return
	}
	kind := Changed
	switch {
	case !okA:
		kind = Added
	case !okB:
		kind = Removed
	}
	d.add(kind, ptr, NonBreaking, what+" "+string(kind), a, b)
}

// schemaField compares a tool's input or output schema.
func (d *differ) schemaField(ptr string, a, b json.RawMessage, v variance) {
	va, okA := decode(a)
	vb, okB := decode(b)
	switch {
	case !okA && !okB:
		return
	case !okA:
		// A schema where there was none: inputs must now match it, and an
		// output is now promised.
		d.add(Added, ptr, v.narrowed(), v.name()+" schema added", nil, b)
		return
	case !okB:
		d.add(Removed, ptr, v.widened(), v.name()+" schema removed", a, nil)
		return
	}
	d.schema(ptr, va, vb, v)
}

// Annotation hints and their defaults when absent: a tool is taken to
// write (not read-only), to be destructive, not idempotent, and to reach
// an open world unless it says otherwise.
var hints = []struct {
	name string
	// dangerous is the value that promises less to the client.
	dangerous bool
}{
	{"readOnlyHint", false},
	{"destructiveHint", true},
	{"idempotentHint", false},
	{"openWorldHint", true},
}

func isHint(name string) bool {
	for _, h := range hints {
		if h.name == name {
			return true
		}
	}
	return false
}

// effectiveHints returns the hints of a tool's annotations as the client
// must take them: missing ones at their defaults, and destructiveHint and
// idempotentHint, which mean something only for a tool that is not
// read-only, at their safe values for a read-only tool (it changes
// nothing, so it destroys nothing and can be repeated).
func effectiveHints(ann map[string]any) map[string]bool {
	get := func(name string, def bool) bool {
		if v, ok := ann[name].(bool); ok {
			return v
		}
		return def
	}
	ro := get("readOnlyHint", false)
	return map[string]bool{
		"readOnlyHint":    ro,
		"destructiveHint": !ro && get("destructiveHint", true),
		"idempotentHint":  ro || get("idempotentHint", false),
		"openWorldHint":   get("openWorldHint", true),
	}
}

// annotations compares a tool's annotations. A hint whose recorded value
// changed (set, unset or flipped) is one change, breaking when the hint,
// taken as the client must take it, became more dangerous: readOnlyHint
// true→false, destructiveHint false→true, idempotentHint true→false,
// openWorldHint false→true. A hint whose value did not change is not
// reported even when another hint changed what it means (readOnlyHint
// true→false makes an unset destructiveHint count as true): the change of
// readOnlyHint is the one reported, and it is breaking.
func (d *differ) annotations(ptr string, a, b json.RawMessage) {
	va, _ := decode(a)
	vb, _ := decode(b)
	ma, _ := va.(map[string]any)
	mb, _ := vb.(map[string]any)
	if ma == nil {
		ma = map[string]any{}
	}
	if mb == nil {
		mb = map[string]any{}
	}
	ea, eb := effectiveHints(ma), effectiveHints(mb)
	for _, h := range hints {
		ra, okA := ma[h.name]
		rb, okB := mb[h.name]
		if okA == okB && equal(ra, rb) {
			continue
		}
		kind := Changed
		switch {
		case !okA:
			kind = Added
		case !okB:
			kind = Removed
		}
		// The value as stated, the default filling a missing one; the
		// change is breaking only when both it and the value as the
		// client must take it moved to the dangerous side.
		stated := func(m map[string]any) bool {
			if v, ok := m[h.name].(bool); ok {
				return v
			}
			return h.dangerous // every hint defaults to its dangerous value
		}
		sa, sb := stated(ma), stated(mb)
		class, detail := NonBreaking, ""
		switch {
		case sa != h.dangerous && sb == h.dangerous && ea[h.name] != h.dangerous && eb[h.name] == h.dangerous:
			class = Breaking
			detail = fmt.Sprintf("%s more dangerous: %t → %t", h.name, ea[h.name], eb[h.name])
		case ea[h.name] != eb[h.name] && eb[h.name] != h.dangerous:
			detail = fmt.Sprintf("%s safer: %t → %t", h.name, ea[h.name], eb[h.name])
		case sa != sb:
			detail = fmt.Sprintf("%s %s: %t → %t, no more dangerous", h.name, kind, sa, sb)
		default:
			detail = fmt.Sprintf("%s %s, still %t", h.name, kind, sb)
		}
		d.add(kind, join(ptr, h.name), class, detail, ra, rb)
	}
	for _, k := range union(sortedKeys(ma), sortedKeys(mb)) {
		if isHint(k) {
			continue
		}
		ra, okA := ma[k]
		rb, okB := mb[k]
		if okA == okB && equal(ra, rb) {
			continue
		}
		kind := Changed
		switch {
		case !okA:
			kind = Added
		case !okB:
			kind = Removed
		}
		d.add(kind, join(ptr, k), NonBreaking, "annotation "+k+" "+string(kind), ra, rb)
	}
}

func (d *differ) resources(a, b []events.ResourceDef) {
	ma, ka := byKey(a, func(r *events.ResourceDef) string { return r.URI })
	mb, kb := byKey(b, func(r *events.ResourceDef) string { return r.URI })
	for _, uri := range union(ka, kb) {
		ra, rb := ma[uri], mb[uri]
		ptr := Pointer("resources", uri)
		switch {
		case rb == nil:
			d.add(Removed, ptr, Breaking, "resource removed", nil, nil)
		case ra == nil:
			d.add(Added, ptr, NonBreaking, "resource added", nil, nil)
		default:
			d.text(ptr, "name", ra.Name, rb.Name)
			d.text(ptr, "title", ra.Title, rb.Title)
			d.text(ptr, "description", ra.Description, rb.Description)
			d.mimeType(ptr, ra.MIMEType, rb.MIMEType)
			if ra.Size != rb.Size {
				d.add(Changed, join(ptr, "size"), NonBreaking, "size changed", ra.Size, rb.Size)
			}
			d.opaque(join(ptr, "annotations"), "annotations", ra.Annotations, rb.Annotations)
			d.opaque(join(ptr, "icons"), "icons", ra.Icons, rb.Icons)
		}
	}
}

func (d *differ) templates(a, b []events.ResourceTemplateDef) {
	ma, ka := byKey(a, func(r *events.ResourceTemplateDef) string { return r.URITemplate })
	mb, kb := byKey(b, func(r *events.ResourceTemplateDef) string { return r.URITemplate })
	for _, uri := range union(ka, kb) {
		ra, rb := ma[uri], mb[uri]
		ptr := Pointer("resourceTemplates", uri)
		switch {
		case rb == nil:
			d.add(Removed, ptr, Breaking, "resource template removed", nil, nil)
		case ra == nil:
			d.add(Added, ptr, NonBreaking, "resource template added", nil, nil)
		default:
			d.text(ptr, "name", ra.Name, rb.Name)
			d.text(ptr, "title", ra.Title, rb.Title)
			d.text(ptr, "description", ra.Description, rb.Description)
			d.mimeType(ptr, ra.MIMEType, rb.MIMEType)
			d.opaque(join(ptr, "annotations"), "annotations", ra.Annotations, rb.Annotations)
			d.opaque(join(ptr, "icons"), "icons", ra.Icons, rb.Icons)
		}
	}
}

// mimeType compares a resource's MIME type: a reader that expects one
// type of contents gets another, so any change of a stated type is
// breaking; stating one where there was none is not.
func (d *differ) mimeType(ptr, a, b string) {
	switch {
	case a == b:
	case a == "":
		d.add(Added, join(ptr, "mimeType"), NonBreaking, "mimeType added", nil, b)
	default:
		d.add(map[bool]Kind{true: Removed, false: Changed}[b == ""], join(ptr, "mimeType"), Breaking, "mimeType changed", a, nilIfEmpty(b))
	}
}

func (d *differ) prompts(a, b []events.PromptDef) {
	ma, ka := byKey(a, func(p *events.PromptDef) string { return p.Name })
	mb, kb := byKey(b, func(p *events.PromptDef) string { return p.Name })
	for _, name := range union(ka, kb) {
		pa, pb := ma[name], mb[name]
		ptr := Pointer("prompts", name)
		switch {
		case pb == nil:
			d.add(Removed, ptr, Breaking, "prompt removed", nil, nil)
		case pa == nil:
			d.add(Added, ptr, NonBreaking, "prompt added", nil, nil)
		default:
			d.text(ptr, "title", pa.Title, pb.Title)
			d.text(ptr, "description", pa.Description, pb.Description)
			d.promptArguments(join(ptr, "arguments"), pa.Arguments, pb.Arguments)
			d.opaque(join(ptr, "icons"), "icons", pa.Icons, pb.Icons)
		}
	}
}

func (d *differ) promptArguments(ptr string, a, b []events.PromptArgument) {
	ma, ka := byKey(a, func(p *events.PromptArgument) string { return p.Name })
	mb, kb := byKey(b, func(p *events.PromptArgument) string { return p.Name })
	for _, name := range union(ka, kb) {
		aa, ab := ma[name], mb[name]
		aptr := join(ptr, name)
		switch {
		case ab == nil:
			d.add(Removed, aptr, Breaking, "argument removed", nil, nil)
		case aa == nil && ab.Required:
			d.add(Added, aptr, Breaking, "required argument added", nil, nil)
		case aa == nil:
			d.add(Added, aptr, NonBreaking, "optional argument added", nil, nil)
		default:
			d.text(aptr, "title", aa.Title, ab.Title)
			d.text(aptr, "description", aa.Description, ab.Description)
			switch {
			case !aa.Required && ab.Required:
				d.add(Changed, join(aptr, "required"), Breaking, "argument made required", false, true)
			case aa.Required && !ab.Required:
				d.add(Changed, join(aptr, "required"), NonBreaking, "argument made optional", true, false)
			}
		}
	}
}

func decode(raw json.RawMessage) (any, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		// Not JSON: compared as its bytes.
		return string(raw), true
	}
	return v, true
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(mapsKeys(m)) }
