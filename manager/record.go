package manager

import (
	"context"
	"fmt"

	"github.com/mcplife/mcplife/events"
)

// RecordDiscovery records the outcomes of config discovery for this
// manager's session, in order: ServerDiscovered, ServerSkipped,
// ServerInvalid and DiscoveryFailed events (loader.Discovery.Events gives
// the first three; a file that failed, or a discovery that failed as a
// whole, is a DiscoveryFailed). They are folded into the manager's view
// like its own events, and a recorded ServerDiscovered is not recorded
// again when the same server and config are connected. An event of any
// other type is refused, with nothing recorded.
func (m *Manager) RecordDiscovery(ctx context.Context, outcomes ...events.Event) error {
	for _, ev := range outcomes {
		switch ev.(type) {
		case *events.ServerDiscovered, *events.ServerSkipped, *events.ServerInvalid, *events.DiscoveryFailed:
		default:
			return fmt.Errorf("manager: record discovery: %s is not a discovery outcome", ev.Type())
		}
	}
	return m.record(ctx, outcomes)
}

// RecordSession records what the host of this manager's session observes
// of the session itself: its SessionStarted (first, before any server
// connects), the ToolsActivated of tools it loaded for the model, and its
// SessionClosed (last); and a shared host's HostAttached and HostDetached.
// An event of any other type is refused, with nothing recorded.
func (m *Manager) RecordSession(ctx context.Context, ev events.Event) error {
	switch ev.(type) {
	case *events.SessionStarted, *events.ToolsActivated, *events.SessionClosed, *events.HostAttached, *events.HostDetached:
	default:
		return fmt.Errorf("manager: record session: %s is not a session event", ev.Type())
	}
	return m.record(ctx, []events.Event{ev})
}

// record appends evs, which the callers checked, and waits for them.
func (m *Manager) record(ctx context.Context, evs []events.Event) error {
	if len(evs) == 0 {
		return nil
	}
	if err := m.waitRecorded(ctx, &outItem{evs: evs, wait: make(chan pendingAppend, 1)}); err != nil {
		return fmt.Errorf("manager: record %s: %w", evs[0].Type(), err)
	}
	m.mu.Lock()
	for _, ev := range evs {
		if d, ok := ev.(*events.ServerDiscovered); ok {
			m.discovered[d.Server] = discovery{d.ConfigHash, d.Source}
		}
	}
	m.mu.Unlock()
	return nil
}
