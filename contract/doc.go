// Package contract compares what MCP servers listed — tools with their
// input and output schemas and annotations, resources, resource templates,
// prompts with their arguments — between two recordings, and classes each
// change as breaking or not for a client written against the first.
//
// [Snapshot] folds one session's events into the last listing of each
// server ([Surface]); [History] folds every session into the successive
// distinct surfaces of one server. [Compare] and [CompareSnapshots] return
// the changes, each with a kind (added, removed, changed), a JSON pointer
// into the listing (/tools/echo/inputSchema/properties/n/type) and a
// class.
//
// Breaking: a tool, resource, resource template or prompt removed; a
// parameter removed, added as required or made required; a prompt
// argument removed, added as required or made required; a type changed or
// narrowed (number → integer, ["string","null"] → "string"); an enum value
// removed, or an enum, const, pattern, format or tighter bound set; a
// resource's MIME type changed; an annotation hint that became more
// dangerous as a client must read it, with the protocol's defaults for
// hints left out (readOnlyHint false, destructiveHint true, idempotentHint
// false, openWorldHint true): readOnlyHint true → false or unset,
// destructiveHint false → true or unset, idempotentHint true → false,
// openWorldHint false → true or unset; any change of a schema keyword the
// comparison does not reason about ($ref, not, if/then/else…).
//
// Not breaking: title and description changes (of anything), an optional
// parameter or argument added, a parameter made optional, an enum value
// added, a type widened (integer → number), a bound relaxed, a hint that
// became safer or was set to its default, icons, and anything added.
//
// An output schema is read the other way round: it is what the server
// promises, so a property removed or made optional, or a type widened,
// breaks a reader, and a narrowing does not.
//
// Example: what changed between the last two sessions.
//
//	a, b := contract.NewSnapshot(prev), contract.NewSnapshot(last)
//	for env, err := range st.ReadAll(ctx, 1) {
//		if err != nil {
//			return err
//		}
//		a.Apply(env)
//		b.Apply(env)
//	}
//	for _, c := range contract.CompareSnapshots(a, b) {
//		fmt.Println(c.Class, c.Kind, c.Server, c.Pointer, c.Detail)
//	}
package contract
