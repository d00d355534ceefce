package manager

import (
	"context"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/projector"
)

// Update tells a watcher that the session's view changed. It names the
// latest change folded in; earlier ones not yet read were coalesced into
// it. Read the new state with [Manager.Tools] or [Manager.Status].
type Update struct {
	Seq    uint64 // sequence of the latest event
	Type   string // its type
	Server string // its server, when it is about one
}

// Watch returns a channel that receives an [Update] whenever the session's
// statuses or tools may have changed: a late connect, a re-list after
// tools/list_changed, a drop, a disconnect, a reload. It is built on a
// journal subscription to the manager's session, so it also sees events
// other components record there.
//
// Updates are coalesced: the channel holds at most one, the latest. A
// slow watcher never blocks the manager or other watchers; it just
// receives fewer, newer updates. The channel is closed when ctx ends or the
// manager closes.
func (m *Manager) Watch(ctx context.Context) (<-chan Update, error) {
	sub, err := m.j.Subscribe(ctx, journal.SubscribeOptions{Session: m.session, Types: projector.ViewTypes})
	if err != nil {
		return nil, err
	}
	out := make(chan Update, 1)
	run := func() {
		defer close(out)
		defer sub.Close()
		for {
			var env events.Envelope
			var ok bool
			select {
			case env, ok = <-sub.C():
				if !ok {
					return
				}
			case <-ctx.Done():
				return
			case <-m.ctx.Done():
				return
			}
			u := Update{Seq: env.Seq, Type: env.Type}
			if ev, err := events.Decode(env); err == nil {
				if se, ok := ev.(events.ServerEvent); ok {
					u.Server = se.ServerName()
				}
			}
			// This goroutine is the only sender: dropping the unread
			// update makes room.
			select {
			case <-out:
			default:
			}
			out <- u
		}
	}
	if !m.goOwned(run) {
		sub.Close()
		close(out)
	}
	return out, nil
}
