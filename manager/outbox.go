package manager

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
)

// The outbox is how the manager records: every event goes into one queue,
// in the order it was emitted, and the manager's pump goroutine hands the
// queue to the journal in that order. Emitting takes only the outbox's own
// lock, which nothing holds while it waits, so a store that stops
// answering (a hung disk, a database behind a partition) stops the pump
// and nothing else: calls, Status, Tools, disconnects and Close go on,
// and locks such as the registry's, under which events are emitted to
// keep them in order, are never held across an append.
//
// While the pump is behind by maxQueuedBeforeLogDrop events (emitted and
// not yet handed to the journal, whether they wait in the outbox or in the
// batch the pump took), server logs are dropped and counted; the count is
// recorded as one ServerLog (Dropped set) before the server's next event
// once the pump caught up.
// Every other event waits in the outbox, in order. Close hands over what
// is left; when its context ends first it stops waiting and logs how many
// events it could not record.

// maxQueuedBeforeLogDrop is how far the pump may fall behind before server
// logs are dropped.
const maxQueuedBeforeLogDrop = 1024

// errNotRecorded is the error of a recording abandoned by Close: its
// context ended while the store did not answer.
var errNotRecorded = errors.New("manager: event not recorded: the store did not answer before Close's context ended")

type outbox struct {
	mu      sync.Mutex
	q       []*outItem     // (mu) emitted, not yet handed to the journal
	dropped map[string]int // (mu) server logs dropped per server while behind
	stopped bool           // (mu) the pump ended: emits go to the journal directly
	busy    bool           // (mu) the pump is handing over a batch
	lost    int            // (mu) events Close gave up on
	// logDropAt is how far behind the pump drops server logs
	// (maxQueuedBeforeLogDrop; tests lower it). Guarded by mu.
	logDropAt int
	// inPump is how many items of the pump's batch it has not handed
	// over yet: they are behind as much as those in q. Set under mu,
	// counted down by the pump without it.
	inPump atomic.Int64

	wake     chan struct{} // (cap 1) something was queued
	drain    chan struct{} // closed by Close: hand over the rest, then end
	abandon  chan struct{} // closed when Close's context ended first
	abandonO sync.Once
	drainO   sync.Once
	pumpCtx  context.Context
	cancel   context.CancelFunc
	done     chan struct{} // the pump ended
}

// outItem is one emit. wait is nil for a deferred emit; a waited-for one
// (or a flush, with no events) gets the journal's pending append on it.
type outItem struct {
	correlation string
	evs         []events.Event
	deferred    *journal.Deferred // a deferred emit's envelopes, built before queueing
	wait        chan pendingAppend
}

type pendingAppend struct {
	p   *journal.Pending
	err error
}

func newOutbox() *outbox {
	o := &outbox{
		dropped:   map[string]int{},
		logDropAt: maxQueuedBeforeLogDrop,
		wake:      make(chan struct{}, 1),
		drain:     make(chan struct{}),
		abandon:   make(chan struct{}),
		done:      make(chan struct{}),
	}
	o.pumpCtx, o.cancel = context.WithCancel(context.Background())
	return o
}

// put queues it and reports true, or reports false once the pump ended
// (the caller then appends itself). When nothing waits in the outbox and
// the journal has room, it goes to the journal at once. A server log is dropped (and counted)
// while the pump is behind; a server's first event once it caught up is
// preceded by the count of its dropped logs.
func (m *Manager) put(it *outItem) bool {
	o := m.out
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped {
		return false
	}
	if len(o.q) == 0 && !o.busy && len(o.dropped) == 0 && m.handOver(it, false) {
		// Nothing is ahead of it: handed to the journal at once, which
		// keeps its order (under o.mu) and costs no wake-up of the pump.
		return true
	}
	behind := len(o.q) + int(o.inPump.Load())
	if behind >= o.logDropAt && it.wait == nil && len(it.evs) == 1 {
		if l, ok := it.evs[0].(*events.ServerLog); ok {
			o.dropped[l.Server]++
			return true
		}
	}
	if len(o.dropped) > 0 && behind < o.logDropAt {
		for _, ev := range it.evs {
			se, ok := ev.(events.ServerEvent)
			if !ok {
				continue
			}
			if n := o.dropped[se.ServerName()]; n > 0 {
				delete(o.dropped, se.ServerName())
				summary := []events.Event{&events.ServerLog{
					Server: se.ServerName(), Level: events.LogWarning, Logger: "mcplife", Dropped: n,
					Text: fmt.Sprintf("%d log messages dropped: the store fell behind", n),
				}}
				if d, err := m.j.PrepareDeferred(m.session, "", m.notRecorded(summary), summary...); err == nil {
					o.q = append(o.q, &outItem{evs: summary, deferred: d})
				}
			}
		}
	}
	o.q = append(o.q, it)
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return true
}

// pump hands the outbox to the journal, in order, until Close drains it or
// gives up on the store.
func (m *Manager) pump() {
	o := m.out
	defer close(o.done)
	for {
		o.mu.Lock()
		batch := o.q
		o.q = nil
		o.busy = len(batch) > 0
		o.inPump.Store(int64(len(batch)))
		if len(batch) == 0 {
			select {
			case <-o.drain:
				o.stopped = true
				o.mu.Unlock()
				return
			default:
			}
			o.mu.Unlock()
			select {
			case <-o.wake:
			case <-o.drain:
			case <-o.abandon:
				return
			}
			continue
		}
		o.mu.Unlock()
		for i, it := range batch {
			if !m.handOver(it, true) {
				o.giveUp(batch[i:])
				return
			}
			o.inPump.Add(-1)
		}
	}
}

// handOver gives it to the journal. Without wait it only tries: it
// reports false when the journal's queue is full. With wait (the pump) it
// waits for room, and reports false only when Close gave up on the store.
func (m *Manager) handOver(it *outItem, wait bool) bool {
	o := m.out
	if it.wait != nil {
		p, err := m.j.AppendAsync(context.Background(), m.session, it.correlation, it.evs...)
		it.wait <- pendingAppend{p, err}
		return true
	}
	if !wait {
		err := m.j.TryQueueDeferred(it.deferred)
		if errors.Is(err, journal.ErrQueueFull) {
			return false
		}
		if err != nil {
			m.notRecorded(it.evs)(err)
		}
		return true
	}
	if err := m.j.QueueDeferred(o.pumpCtx, it.deferred); err != nil {
		if o.pumpCtx.Err() != nil {
			return false
		}
		m.notRecorded(it.evs)(err)
	}
	return true
}

// giveUp counts the events of items as lost (Close's context ended).
func (o *outbox) giveUp(items []*outItem) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, it := range items {
		o.lost += len(it.evs)
	}
	for _, it := range o.q {
		o.lost += len(it.evs)
	}
	o.q = nil
	o.inPump.Store(0)
	o.stopped = true
}

// lose counts evs as lost and reports true once Close gave up on the
// store: an event emitted after that (a teardown that finished late) is
// not handed to a journal that may never answer.
func (o *outbox) lose(evs []events.Event) bool {
	select {
	case <-o.abandon:
	default:
		return false
	}
	o.mu.Lock()
	o.lost += len(evs)
	o.mu.Unlock()
	return true
}

// abandonNow makes every wait for a recording end, and the pump stop.
func (o *outbox) abandonNow() {
	o.abandonO.Do(func() {
		close(o.abandon)
		o.cancel()
	})
}

// notRecorded returns the failure report of evs: logged once, at Error,
// with their types and servers.
func (m *Manager) notRecorded(evs []events.Event) func(error) {
	return func(err error) {
		types, servers := describeEvents(evs)
		m.log.Error("MCP lifecycle event not recorded", "type", types, "server", servers, "err", err)
	}
}

// emitDeferred queues evs under correlation; they are recorded in the
// order they were emitted, without the emitter waiting for the store. A
// failure to store them is logged.
func (m *Manager) emitDeferred(correlation string, evs ...events.Event) {
	m.queueDeferred(false, 0, correlation, evs)
}

// emitLingering is emitDeferred for events a waited-for emit follows
// soon: the journal may hold them for up to linger so that both share one
// commit (see journal.Deferred.Linger).
func (m *Manager) emitLingering(linger time.Duration, evs ...events.Event) {
	m.queueDeferred(false, linger, "", evs)
}

// emitHandedOver is emitDeferred for events their emitter never touches
// again, such as a tool call's: the journal's writer builds their
// envelopes, so the emitter does not wait for the encoding.
func (m *Manager) emitHandedOver(correlation string, evs ...events.Event) {
	m.queueDeferred(true, 0, correlation, evs)
}

// queueDeferred queues evs for emitDeferred (handedOver false),
// emitHandedOver (true) and emitLingering (linger set).
func (m *Manager) queueDeferred(handedOver bool, linger time.Duration, correlation string, evs []events.Event) {
	if len(evs) == 0 {
		return
	}
	// The envelopes are built here, outside the outbox's lock, which only
	// orders the queueing; or by the writer, for events handed over.
	prepare := m.j.PrepareDeferred
	if handedOver {
		prepare = m.j.PrepareDeferredEncoded
	}
	d, err := prepare(m.session, correlation, m.notRecorded(evs), evs...)
	if err != nil {
		m.notRecorded(evs)(err)
		return
	}
	if linger > 0 {
		d.Linger(linger)
	}
	if m.put(&outItem{correlation: correlation, evs: evs, deferred: d}) {
		return
	}
	if m.out.lose(evs) {
		return
	}
	if err := m.j.QueueDeferred(context.Background(), d); err != nil {
		m.notRecorded(evs)(err)
	}
}

// emit records evs and waits until they are stored (see emitCorrelated).
func (m *Manager) emit(evs ...events.Event) error {
	return m.emitCorrelated("", evs...)
}

// emitCorrelated records evs under correlation, in order with every other
// emit, and waits until they are stored, so that the view shows them when
// it returns. Recording does not depend on a caller's context: a cancelled
// call still records that it finished; only Close, when its own context
// ends, stops the wait. A failed append is logged once, at Error, and
// returned; a caller that can do nothing more about it ignores the error.
func (m *Manager) emitCorrelated(correlation string, evs ...events.Event) error {
	if len(evs) == 0 {
		return nil
	}
	err := m.waitRecorded(context.Background(), &outItem{correlation: correlation, evs: evs, wait: make(chan pendingAppend, 1)})
	if err != nil {
		m.notRecorded(evs)(err)
	}
	return err
}

// flush waits until everything emitted before it is stored (or failed),
// bounded by ctx.
func (m *Manager) flush(ctx context.Context) error {
	return m.waitRecorded(ctx, &outItem{wait: make(chan pendingAppend, 1)})
}

// waitRecorded queues it and waits for its append.
func (m *Manager) waitRecorded(ctx context.Context, it *outItem) error {
	o := m.out
	if !m.put(it) {
		if o.lose(it.evs) {
			return errNotRecorded
		}
		if len(it.evs) == 0 {
			return m.j.Flush(ctx)
		}
		_, err := m.j.AppendCorrelated(ctx, m.session, it.correlation, it.evs...)
		return err
	}
	var pa pendingAppend
	select {
	case pa = <-it.wait:
	case <-o.abandon:
		return errNotRecorded
	case <-ctx.Done():
		return ctx.Err()
	}
	if pa.err != nil {
		return pa.err
	}
	select {
	case <-pa.p.Done():
	case <-o.abandon:
		return errNotRecorded
	case <-ctx.Done():
		return ctx.Err()
	}
	_, err := pa.p.Result()
	return err
}

// closeOutbox hands what is left to the journal and stops the pump; when
// ctx ends first it gives up and logs how many events were not recorded.
func (m *Manager) closeOutbox(ctx context.Context) {
	o := m.out
	stop := context.AfterFunc(ctx, o.abandonNow)
	defer stop()
	o.drainO.Do(func() { close(o.drain) })
	select {
	case <-o.done:
	case <-o.abandon:
		<-o.done
	}
}

// lostEvents reports how many events Close gave up on.
func (o *outbox) lostEvents() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lost
}
