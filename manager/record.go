package manager

import (
	"context"
	"fmt"

	"github.com/mcplife/mcplife/events"
)

// Record appends events that another component observed about this
// manager's session, such as the loader's discovery outcomes
// (ServerDiscovered, ServerSkipped, ServerInvalid, DiscoveryFailed). They
// are folded into the manager's view like its own events, and a recorded
// ServerDiscovered is not recorded again when the same server and config
// are connected.
func (m *Manager) Record(ctx context.Context, evs ...events.Event) error {
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
