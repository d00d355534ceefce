// Package projector holds the pure folds that turn the event stream into
// the views the runtime and its tools read: [ToolView] (one session's server
// statuses and tool view, with the tools a tool budget loaded:
// [ToolView.LoadedTools]), [ToolCache] (the newest tool list per server and
// configuration, across sessions) and [SessionIndex] (one summary per
// recorded session). It also defines the tool naming rules ([ToolName],
// [AssignNames], and [NameClaims], which keeps a session's names meaning
// the same tools).
//
// Every projection has Apply(envelope) and LastSeq(), the journal's
// Projection interface (ToolCache is also its Checkpointer); the package
// imports events only. The live runner and the replay path call the same
// Apply, so a view rebuilt from the store equals the one a session had
// live. Apply never fails: envelopes of unknown types or with undecodable
// data are skipped and counted.
//
// Example: rebuilding a session's view from its stored events.
//
//	view := projector.NewToolView(sessionID)
//	for env, err := range st.ReadStream(ctx, sessionID, 1) {
//		if err != nil {
//			return err
//		}
//		view.Apply(env)
//	}
//	for _, t := range view.Tools() {
//		fmt.Println(t.Name, t.Server, t.Original, t.Deferred)
//	}
//
// The tool cache folds every session and checkpoints itself, so startup
// costs O(servers), not O(history):
//
//	cache := projector.NewToolCache()
//	if _, data, err := snap.LoadSnapshot(ctx, cache.Name()); err == nil {
//		if err := cache.UnmarshalSnapshot(data); err != nil { ... }
//	}
//	for env, err := range st.ReadAll(ctx, cache.LastSeq()+1) { ... cache.Apply(env) }
//	tools, age, ok := cache.Lookup("git", cfg.Hash(), time.Now())
//	...
//	seq, data, err := cache.Snapshot()
//	err = snap.SaveSnapshot(ctx, cache.Name(), seq, data)
package projector
