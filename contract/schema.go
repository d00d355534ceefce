package contract

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// variance says which way a schema constrains its data. A tool's input
// schema says what the server accepts: a change that rejects arguments
// that were valid before (a narrowing) breaks a caller. Its output schema
// says what the server promises to return: there a widening (a value the
// caller did not expect) is what breaks it.
type variance int

const (
	input variance = iota
	output
)

func (v variance) name() string {
	if v == input {
		return "input"
	}
	return "output"
}

// narrowed is the class of a change that accepts less than before.
func (v variance) narrowed() Class {
	if v == input {
		return Breaking
	}
	return NonBreaking
}

// widened is the class of a change that accepts more than before.
func (v variance) widened() Class {
	if v == input {
		return NonBreaking
	}
	return Breaking
}

func (v variance) member() string {
	if v == input {
		return "parameter"
	}
	return "property"
}

// Keywords that describe a schema and constrain nothing.
var metadataKeywords = map[string]bool{
	"title": true, "description": true, "examples": true, "default": true, "deprecated": true,
	"readOnly": true, "writeOnly": true, "$comment": true, "$schema": true, "$id": true,
}

// Bounds: a lower bound raised, or an upper bound lowered, narrows.
var lowerBounds = map[string]bool{"minimum": true, "exclusiveMinimum": true, "minLength": true, "minItems": true, "minProperties": true}
var upperBounds = map[string]bool{"maximum": true, "exclusiveMaximum": true, "maxLength": true, "maxItems": true, "maxProperties": true}

// Keywords that, set, narrow what matches, and any change of which is
// breaking in both directions.
var restrictions = map[string]bool{"pattern": true, "format": true, "multipleOf": true, "contentMediaType": true, "contentEncoding": true}

// schema compares two JSON Schemas (decoded) at ptr.
func (d *differ) schema(ptr string, a, b any, v variance) {
	if equal(a, b) {
		return
	}
	ma, okA := a.(map[string]any)
	mb, okB := b.(map[string]any)
	if !okA || !okB {
		// Boolean schemas: true (or {}) accepts everything, false nothing.
		switch {
		case a == true || (okA && len(ma) == 0):
			d.add(Changed, ptr, v.narrowed(), "schema narrowed", a, b)
		case b == true || (okB && len(mb) == 0):
			d.add(Changed, ptr, v.widened(), "schema widened", a, b)
		default:
			d.add(Changed, ptr, Breaking, "schema changed", a, b)
		}
		return
	}
	done := map[string]bool{}
	d.typeKeyword(ptr, ma, mb, v)
	done["type"] = true
	d.enum(ptr, ma, mb, v)
	done["enum"] = true
	d.properties(ptr, ma, mb, v)
	done["properties"], done["required"] = true, true
	for _, k := range union(sortedKeys(ma), sortedKeys(mb)) {
		if done[k] {
			continue
		}
		va, inA := ma[k]
		vb, inB := mb[k]
		if inA == inB && equal(va, vb) {
			continue
		}
		kind := kindOf(inA, inB)
		kptr := join(ptr, k)
		switch {
		case metadataKeywords[k] || strings.HasPrefix(k, "x-"):
			d.add(kind, kptr, NonBreaking, k+" "+string(kind), va, vb)
		case k == "items":
			d.subschema(kptr, k, va, vb, inA, inB, v)
		case k == "additionalProperties":
			d.additional(kptr, va, vb, inA, inB, v)
		case lowerBounds[k] || upperBounds[k]:
			d.bound(kptr, k, va, vb, inA, inB, v)
		case k == "uniqueItems":
			if truthy(vb) && !truthy(va) {
				d.add(kind, kptr, v.narrowed(), "items made unique", va, vb)
			} else {
				d.add(kind, kptr, v.widened(), "items no longer unique", va, vb)
			}
		case restrictions[k]:
			switch kind {
			case Added:
				d.add(kind, kptr, v.narrowed(), k+" added", va, vb)
			case Removed:
				d.add(kind, kptr, v.widened(), k+" removed", va, vb)
			default:
				d.add(kind, kptr, Breaking, k+" changed", va, vb)
			}
		case k == "const":
			switch kind {
			case Added:
				d.add(kind, kptr, v.narrowed(), "const added", va, vb)
			case Removed:
				d.add(kind, kptr, v.widened(), "const removed", va, vb)
			default:
				d.add(kind, kptr, Breaking, "const changed", va, vb)
			}
		case k == "$defs" || k == "definitions":
			d.definitions(kptr, va, vb, v)
		case k == "anyOf" || k == "oneOf":
			d.alternatives(kptr, k, va, vb, inA, inB, v, false)
		case k == "allOf":
			d.alternatives(kptr, k, va, vb, inA, inB, v, true)
		default:
			// A keyword this comparison does not reason about: any change
			// may reject what was accepted, so it is taken as breaking.
			d.add(kind, kptr, Breaking, k+" "+string(kind)+" (not analysed)", va, vb)
		}
	}
}

func kindOf(inA, inB bool) Kind {
	switch {
	case !inA:
		return Added
	case !inB:
		return Removed
	}
	return Changed
}

// typeKeyword compares "type". An absent type allows every type; integer
// is within number.
func (d *differ) typeKeyword(ptr string, a, b map[string]any, v variance) {
	ta, inA := a["type"]
	tb, inB := b["type"]
	if inA == inB && equal(ta, tb) {
		return
	}
	sa, sb := typeSet(ta, inA), typeSet(tb, inB)
	aInB, bInA := subset(sa, sb), subset(sb, sa)
	kind, kptr := kindOf(inA, inB), join(ptr, "type")
	switch {
	case aInB && bInA:
		d.add(kind, kptr, NonBreaking, "type rewritten, same types", ta, tb)
	case aInB:
		d.add(kind, kptr, v.widened(), "type widened", ta, tb)
	case bInA:
		d.add(kind, kptr, v.narrowed(), "type narrowed", ta, tb)
	default:
		d.add(kind, kptr, Breaking, "type changed", ta, tb)
	}
}

// typeSet returns the types a "type" value allows; nil means every type.
func typeSet(t any, present bool) map[string]bool {
	if !present {
		return nil
	}
	set := map[string]bool{}
	switch t := t.(type) {
	case string:
		set[t] = true
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok {
				set[s] = true
			}
		}
	}
	return set
}

// subset reports whether every value of type set a is allowed by b.
func subset(a, b map[string]bool) bool {
	if b == nil {
		return true
	}
	if a == nil {
		return false
	}
	for t := range a {
		if !b[t] && !(t == "integer" && b["number"]) {
			return false
		}
	}
	return true
}

// enum compares "enum": a value removed narrows, a value added widens.
func (d *differ) enum(ptr string, a, b map[string]any, v variance) {
	ea, inA := a["enum"]
	eb, inB := b["enum"]
	if inA == inB && equal(ea, eb) {
		return
	}
	kptr := join(ptr, "enum")
	la, okA := ea.([]any)
	lb, okB := eb.([]any)
	switch {
	case !inA:
		d.add(Added, kptr, v.narrowed(), "enum added", nil, eb)
		return
	case !inB:
		d.add(Removed, kptr, v.widened(), "enum removed", ea, nil)
		return
	case !okA || !okB:
		d.add(Changed, kptr, Breaking, "enum changed", ea, eb)
		return
	}
	for _, x := range la {
		if !containsValue(lb, x) {
			d.add(Removed, kptr, v.narrowed(), "enum value "+short(x)+" removed", x, nil)
		}
	}
	for _, x := range lb {
		if !containsValue(la, x) {
			d.add(Added, kptr, v.widened(), "enum value "+short(x)+" added", nil, x)
		}
	}
}

func containsValue(list []any, x any) bool {
	return slices.ContainsFunc(list, func(y any) bool { return equal(x, y) })
}

// properties compares "properties" and "required" together: a parameter
// removed breaks a caller that sends it; one added as required, or made
// required, breaks a caller that does not. In an output schema a property
// removed, or made optional, breaks a reader that expects it.
func (d *differ) properties(ptr string, a, b map[string]any, v variance) {
	pa, _ := a["properties"].(map[string]any)
	pb, _ := b["properties"].(map[string]any)
	ra, rb := stringSet(a["required"]), stringSet(b["required"])
	member := v.member()
	for _, name := range union(sortedKeys(pa), sortedKeys(pb)) {
		sa, inA := pa[name]
		sb, inB := pb[name]
		pptr := join(ptr, "properties", name)
		switch {
		case !inB:
			d.add(Removed, pptr, Breaking, member+" removed", sa, nil)
		case !inA && v == input && rb[name]:
			d.add(Added, pptr, Breaking, "parameter added as required", nil, sb)
		case !inA && v == input:
			d.add(Added, pptr, NonBreaking, "optional parameter added", nil, sb)
		case !inA:
			d.add(Added, pptr, NonBreaking, "property added", nil, sb)
		default:
			d.schema(pptr, sa, sb, v)
		}
	}
	names := union(sortedKeys(ra), sortedKeys(rb))
	for _, name := range names {
		_, inA := pa[name]
		_, inB := pb[name]
		if inA != inB {
			continue // added or removed above
		}
		switch {
		case rb[name] && !ra[name]:
			d.add(Changed, join(ptr, "required"), v.narrowed(), fmt.Sprintf("%s %q made required", member, name), a["required"], b["required"])
		case ra[name] && !rb[name]:
			d.add(Changed, join(ptr, "required"), v.widened(), fmt.Sprintf("%s %q made optional", member, name), a["required"], b["required"])
		}
	}
}

func stringSet(v any) map[string]bool {
	set := map[string]bool{}
	if l, ok := v.([]any); ok {
		for _, e := range l {
			if s, ok := e.(string); ok {
				set[s] = true
			}
		}
	}
	return set
}

// subschema compares a keyword whose value is one schema (items).
func (d *differ) subschema(ptr, k string, a, b any, inA, inB bool, v variance) {
	switch {
	case !inA:
		d.add(Added, ptr, v.narrowed(), k+" schema added", nil, b)
	case !inB:
		d.add(Removed, ptr, v.widened(), k+" schema removed", a, nil)
	default:
		d.schema(ptr, a, b, v)
	}
}

// additional compares additionalProperties: absent is true (anything
// goes), false allows nothing, a schema allows what it matches.
func (d *differ) additional(ptr string, a, b any, inA, inB bool, v variance) {
	if !inA {
		a = true
	}
	if !inB {
		b = true
	}
	kind := kindOf(inA, inB)
	rank := func(x any) int { // 2 anything, 1 a schema, 0 nothing
		switch x {
		case true:
			return 2
		case false:
			return 0
		}
		if m, ok := x.(map[string]any); ok && len(m) == 0 {
			return 2
		}
		return 1
	}
	switch ra, rb := rank(a), rank(b); {
	case ra == 1 && rb == 1:
		d.schema(ptr, a, b, v)
	case ra == rb:
		d.add(kind, ptr, NonBreaking, "additionalProperties rewritten", rawIf(a, inA), rawIf(b, inB))
	case rb < ra:
		d.add(kind, ptr, v.narrowed(), "additional properties restricted", rawIf(a, inA), rawIf(b, inB))
	default:
		d.add(kind, ptr, v.widened(), "additional properties allowed", rawIf(a, inA), rawIf(b, inB))
	}
}

func rawIf(x any, present bool) any {
	if !present {
		return nil
	}
	return x
}

// bound compares a numeric bound.
func (d *differ) bound(ptr, k string, a, b any, inA, inB bool, v variance) {
	na, okA := a.(float64)
	nb, okB := b.(float64)
	kind := kindOf(inA, inB)
	switch {
	case !inA:
		d.add(kind, ptr, v.narrowed(), k+" added", nil, b)
	case !inB:
		d.add(kind, ptr, v.widened(), k+" removed", a, nil)
	case !okA || !okB:
		d.add(kind, ptr, Breaking, k+" changed", a, b)
	case (lowerBounds[k] && nb > na) || (upperBounds[k] && nb < na):
		d.add(kind, ptr, v.narrowed(), k+" tightened", a, b)
	default:
		d.add(kind, ptr, v.widened(), k+" relaxed", a, b)
	}
}

// definitions compares $defs (or definitions): each by name.
func (d *differ) definitions(ptr string, a, b any, v variance) {
	ma, _ := a.(map[string]any)
	mb, _ := b.(map[string]any)
	for _, name := range union(sortedKeys(ma), sortedKeys(mb)) {
		sa, inA := ma[name]
		sb, inB := mb[name]
		switch {
		case !inB:
			d.add(Removed, join(ptr, name), Breaking, "definition removed", sa, nil)
		case !inA:
			d.add(Added, join(ptr, name), NonBreaking, "definition added", nil, sb)
		default:
			d.schema(join(ptr, name), sa, sb, v)
		}
	}
}

// alternatives compares anyOf and oneOf (conjunction false: a branch
// added widens) or allOf (conjunction true: a schema added narrows).
// Lists of the same length are compared branch by branch.
func (d *differ) alternatives(ptr, k string, a, b any, inA, inB bool, v variance, conjunction bool) {
	la, okA := a.([]any)
	lb, okB := b.([]any)
	more, fewer := v.widened(), v.narrowed()
	if conjunction {
		more, fewer = fewer, more
	}
	switch {
	case !inA || !inB || !okA || !okB:
		d.add(kindOf(inA, inB), ptr, Breaking, k+" "+string(kindOf(inA, inB)), a, b)
	case len(la) == len(lb):
		for i := range la {
			d.schema(join(ptr, fmt.Sprint(i)), la[i], lb[i], v)
		}
	case len(lb) > len(la) && allIn(la, lb):
		d.add(Changed, ptr, more, k+" branch added", a, b)
	case len(lb) < len(la) && allIn(lb, la):
		d.add(Changed, ptr, fewer, k+" branch removed", a, b)
	default:
		d.add(Changed, ptr, Breaking, k+" changed", a, b)
	}
}

func allIn(small, big []any) bool {
	for _, x := range small {
		if !containsValue(big, x) {
			return false
		}
	}
	return true
}

func truthy(x any) bool { b, _ := x.(bool); return b }

func equal(a, b any) bool { return reflect.DeepEqual(a, b) }

// short renders a small value for a detail.
func short(x any) string {
	b := rawOf(x)
	if len(b) > 40 {
		return string(b[:37]) + "…"
	}
	return string(b)
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) { return maps.Keys(m) }
