package projector

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/mcplife/mcplife/events"
)

// toolOrder ranks the tools of a session in the order they were first
// exposed, so a host can keep its tool list in that order: a provider's
// prompt cache holds the tool definitions as a prefix, and a list that
// reorders when a late server connects or a search loads a tool throws
// the cache away. Ranks come from the events as they are folded (one
// counter for the session, taken in each event's list order), so a replay
// gives every tool the ranks it had live.
//
// Like [NameClaims], a copy shares its maps until one of the copies
// changes.
type toolOrder struct {
	next uint64
	// listed holds the rank of each tool's first exposure (listed live or
	// served from the cache, past the filters); loaded that of its first
	// load by ToolsActivated.
	listed, loaded map[ToolRef]uint64
	shared         bool
}

func (o *toolOrder) own() {
	if o.shared {
		o.listed, o.loaded, o.shared = maps.Clone(o.listed), maps.Clone(o.loaded), false
	}
}

// list ranks the tools of server that have no listed rank yet, in the
// order given.
func (o *toolOrder) list(server string, tools []events.ToolDef) {
	for _, t := range tools {
		r := ToolRef{Server: server, Tool: t.Name}
		if _, ok := o.listed[r]; ok {
			continue
		}
		o.own()
		if o.listed == nil {
			o.listed = make(map[ToolRef]uint64)
		}
		o.next++
		o.listed[r] = o.next
	}
}

// load ranks r's first load.
func (o *toolOrder) load(r ToolRef) {
	if _, ok := o.loaded[r]; ok {
		return
	}
	o.own()
	if o.loaded == nil {
		o.loaded = make(map[ToolRef]uint64)
	}
	o.next++
	o.loaded[r] = o.next
}

// forget drops the ranks of the refs keep reports false for.
func (o *toolOrder) forget(keep func(ToolRef) bool) {
	o.own()
	maps.DeleteFunc(o.listed, func(r ToolRef, _ uint64) bool { return !keep(r) })
	maps.DeleteFunc(o.loaded, func(r ToolRef, _ uint64) bool { return !keep(r) })
}

// clone returns a copy of o; both copies copy the maps before a change.
func (o *toolOrder) clone() toolOrder {
	o.shared = o.listed != nil || o.loaded != nil
	return toolOrder{next: o.next, listed: o.listed, loaded: o.loaded, shared: o.shared}
}

// ToolRank is where a tool stands in its session's order of exposure.
// Ranks start at 1 and grow with every tool exposed or loaded for the
// first time, in the order of the events (and, within one event, of its
// list), so a tool exposed later has a higher rank, and a replay gives
// every tool the ranks it had live.
type ToolRank struct {
	// Listed is the rank of the tool's first exposure: its server listed
	// it live or it was served from the cache, past the server's filters.
	// It is kept while the tool is away (its server reconnects, or
	// dropped it) and when it comes back.
	Listed uint64
	// Loaded is the rank of its first load by ToolsActivated (a tool
	// budget's search or a host's load), 0 when it was never loaded.
	Loaded uint64
}

// Rank returns the rank of the tool exposed under name, and false when
// the view does not expose it. A lean view (see [SessionIndex]) ranks
// nothing.
func (v *ToolView) Rank(name string) (ToolRank, bool) {
	ref, ok := v.Resolve(name)
	if !ok {
		return ToolRank{}, false
	}
	return ToolRank{Listed: v.order.listed[ref], Loaded: v.order.loaded[ref]}, true
}

// ToolsInOrder returns the exposed tools of every server in the order
// they were first exposed in the session ([ToolRank.Listed]): a tool that
// arrives later (a late server, a new tool in a re-list) comes after every
// tool exposed before it, and a tool that goes leaves the others in their
// order. It is the order in which a host should offer the tools to a
// model, so that the tool definitions stay a stable prefix of its prompt.
func (v *ToolView) ToolsInOrder() []Tool {
	tools := v.Tools()
	sortByRank(tools, func(t Tool) uint64 { return v.order.listed[ToolRef{Server: t.Server, Tool: t.Original}] })
	return tools
}

// sortByRank sorts tools by rank, and tools of equal rank (none: a lean
// view's) by name.
func sortByRank(tools []Tool, rank func(Tool) uint64) {
	slices.SortFunc(tools, func(a, b Tool) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a.Name, b.Name))
	})
}
