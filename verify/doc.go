// Package verify checks recorded lifecycle histories against the ordering
// invariants of the event catalogue. `mcp-audit verify` and the golden tests
// both use it.
//
// The invariants, per server within a session:
//
//   - discovered-before-connect: ServerDiscovered precedes ConnectStarted;
//   - connect-outcome-after-start: ServerConnected or ConnectFailed only for a
//     connect attempt that started and has no outcome yet;
//   - list-after-connected: ToolsListed (and ToolsListFailed) only while
//     the server is connected;
//   - gate-once-per-round: at most one StartupGateElapsed per connect round,
//     after every ConnectStarted of that round;
//   - call-needs-server: no ToolCallStarted on a server before it is
//     connected or has deferred tools;
//   - call-finished-once: every ToolCallStarted has exactly one
//     ToolCallFinished (matched by correlation id); a closed session has no
//     call left open;
//   - disconnect-after-connect: Disconnected only after ConnectStarted;
//   - nothing-after-disconnect: after Disconnected, nothing for the server
//     but rediscovery, a new ConnectStarted, or the end of a call that was
//     already in flight; a Disconnected that announced a reconnect
//     (reconnecting) is followed by ReconnectScheduled and the attempts,
//     and calls may start meanwhile (they wait for the reconnect);
//   - reconnect-attempts-in-order: every ConnectStarted of a server has a
//     higher attempt than the one before, and a reconnect attempt (round
//     0) is the one its ReconnectScheduled announced;
//   - nothing-after-gave-up: after ReconnectGaveUp, nothing for the
//     server until an explicit connect (a ConnectStarted of a round);
//   - no-reconnect-after-requested-disconnect: a disconnect the session
//     chose (requested, a reload, a config change, a shared instance's
//     idle stop) is never followed by ReconnectScheduled or a reconnect
//     attempt.
//
// And in a shared host's session, per instance:
//
//   - attach-after-connected: HostAttached only once the instance
//     connected;
//   - detach-after-attach: HostDetached only of a host attached to it;
//   - idle-stop-unattached: a Disconnected for being idle only when no
//     host is attached to it.
//
// A RecordingGap says that events were lost at that point of the stream
// (the store was unavailable for too long). A call open at the gap may have
// finished inside it, so it is not reported as never finished; and each
// server's phase is unknown after it, so the rules that depend on the phase
// let the server's events through until one of them (ConnectStarted,
// ServerConnected, ConnectFailed, Disconnected) sets it again. Every other
// rule holds across a gap: a ToolCallFinished without its start, or a call
// started after the gap that never finishes, is still reported.
//
// A [Checker] is a fold: feed it a session's envelopes in order with
// Apply, then call Finish. It holds state per server, not per event, so
// sessions of any length stream through it.
//
// Example (the runnable form is the package's Example):
//
//	c := verify.NewChecker(id)
//	for env, err := range st.ReadStream(ctx, id, 1) {
//		if err != nil { ... }
//		c.Apply(env)
//	}
//	for _, v := range c.Finish() {
//		fmt.Println(v) // seq 3 ToolsListed git: list-after-connected: …
//	}
package verify
