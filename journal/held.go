package journal

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
)

// DefaultHeldBytes bounds the deferred events the journal holds in memory
// while its store is unavailable (see Options.HeldBytes).
const DefaultHeldBytes = 8 << 20

// DefaultSpoolBytes bounds the spool files (see Options.SpoolBytes).
const DefaultSpoolBytes = 256 << 20

// Retry delays of a journal holding events: the first retry comes after
// retryFirst, each later one after twice the delay before, up to retryMax.
const (
	retryFirst = 50 * time.Millisecond
	retryMax   = time.Second
)

// maxLostCalls bounds how many lost tool-call starts the journal remembers
// in order to drop their later events.
const maxLostCalls = 1 << 16

// heldItem is one held append: a request's envelopes, or a gap to record.
// It is what a spool file holds, one JSON line each: exactly what the store
// would have held, no more.
type heldItem struct {
	Session string               `json:"session"`
	Envs    []events.Envelope    `json:"envs,omitempty"`
	Gap     *events.RecordingGap `json:"gap,omitempty"`

	// In memory only: the events Envs encode, and the deferred append's
	// failure callback.
	evs    []events.Event
	failed func(error)
}

// size is what the item costs held in memory, roughly.
func (it *heldItem) size() int {
	n := 64 + len(it.Session)
	for _, e := range it.Envs {
		n += 160 + len(e.Data) + len(e.Stream) + len(e.CorrelationID) + len(e.Host) + len(e.Type)
	}
	return n
}

type callKey struct{ session, correlation string }

// held is what the writer keeps while the store is unavailable, in order:
// the items of memory, or (once memory ran over its bound, and at Close)
// the items of the spool, never both; then, per session, the events lost
// since (tail), recorded as a RecordingGap in front of whatever is held
// after them. Owned by the writer, under j.mu.
type held struct {
	mem      []*heldItem
	memBytes int
	memLimit int
	spool    *spool // nil: memory only

	tail      map[string]*events.RecordingGap
	tailOrder []string
	// lostCalls are the tool calls whose ToolCallStarted was not stored:
	// their later events are dropped too.
	lostCalls map[callKey]struct{}

	// down is set while the store is unavailable; lastErr is its latest
	// error. retry is the delay before the next attempt and next its
	// time; single makes the next attempt store one item only (after an
	// attempt that failed while the store answered reads).
	down    bool
	lastErr error
	retry   time.Duration
	next    time.Time
	single  bool
	warned  bool // the outage was logged
	logged  bool // the loss of events was logged during this outage
	stored  int  // items stored since the outage began
	dropped int  // events lost since the outage began
}

// pending reports whether anything is held.
func (h *held) pending() bool {
	return len(h.mem) > 0 || (h.spool != nil && h.spool.pending()) || len(h.tailOrder) > 0
}

// hasItems reports whether items (not only lost counts) are held.
func (h *held) hasItems() bool {
	return len(h.mem) > 0 || (h.spool != nil && h.spool.pending())
}

// lose counts envs, which will never be stored, into session's gap.
func (h *held) lose(session string, envs []events.Envelope) {
	if len(envs) == 0 {
		return
	}
	g := h.tail[session]
	if g == nil {
		if h.tail == nil {
			h.tail = map[string]*events.RecordingGap{}
		}
		g = &events.RecordingGap{From: envs[0].Time}
		h.tail[session] = g
		h.tailOrder = append(h.tailOrder, session)
	}
	g.To = envs[len(envs)-1].Time
	g.Dropped += len(envs)
	h.dropped += len(envs)
	h.forget(session, envs)
}

// forget remembers the tool calls envs start, which are not stored, so
// their later events are dropped.
func (h *held) forget(session string, envs []events.Envelope) {
	for _, e := range envs {
		if e.Type != events.TypeToolCallStarted || e.CorrelationID == "" {
			continue
		}
		if h.lostCalls == nil {
			h.lostCalls = map[callKey]struct{}{}
		}
		if len(h.lostCalls) < maxLostCalls {
			h.lostCalls[callKey{session, e.CorrelationID}] = struct{}{}
		}
	}
}

// dropLostCalls removes from envs the events of calls whose start was not
// stored, counting them in session's gap while that is not recorded yet; a
// call's ToolCallFinished ends what is remembered of it.
func (h *held) dropLostCalls(session string, envs []events.Envelope) []events.Envelope {
	if len(h.lostCalls) == 0 {
		return envs
	}
	kept := envs[:0:0]
	for _, e := range envs {
		k := callKey{session, e.CorrelationID}
		if _, lost := h.lostCalls[k]; lost && e.CorrelationID != "" {
			if e.Type == events.TypeToolCallFinished {
				delete(h.lostCalls, k)
			}
			if g := h.tail[session]; g != nil {
				// Lost with the gap not yet recorded: counted in it.
				g.To = e.Time
				g.Dropped++
				h.dropped++
			}
			continue
		}
		kept = append(kept, e)
	}
	return kept
}

// sealTail queues the gaps of the events lost so far as items, so what is
// held after them is stored after them.
func (h *held) sealTail() error {
	for len(h.tailOrder) > 0 {
		s := h.tailOrder[0]
		if err := h.push(&heldItem{Session: s, Gap: h.tail[s]}, true); err != nil {
			return err
		}
		delete(h.tail, s)
		h.tailOrder = h.tailOrder[1:]
	}
	h.tail, h.tailOrder = nil, nil
	return nil
}

// hold queues it behind everything held. It reports false when it does not
// fit (memory and spool are full, or the spool failed): it is lost then.
func (h *held) hold(it *heldItem) bool {
	if len(h.tailOrder) > 0 {
		if !h.fits(it) {
			return false
		}
		if err := h.sealTail(); err != nil {
			return false
		}
	}
	return h.push(it, false) == nil
}

// fits reports whether it would be held.
func (h *held) fits(it *heldItem) bool {
	if h.spool == nil || !h.spool.pending() {
		if h.memBytes+it.size() <= h.memLimit {
			return true
		}
		if h.spool == nil {
			return false
		}
	}
	return h.spool.room() >= int64(it.size())
}

// errFull is what push returns for an item that does not fit.
var errFull = errorString("journal: held events: bound reached")

type errorString string

func (e errorString) Error() string { return string(e) }

// push queues it in memory while memory holds it and the spool is empty,
// else in the spool (moving what memory holds there first). force ignores
// the bounds (for the small gap items).
func (h *held) push(it *heldItem, force bool) error {
	if h.spool == nil || !h.spool.pending() {
		if force || h.memBytes+it.size() <= h.memLimit {
			h.mem = append(h.mem, it)
			h.memBytes += it.size()
			return nil
		}
		if h.spool == nil {
			return errFull
		}
		if err := h.spill(); err != nil {
			return err
		}
	}
	return h.spool.push(it, force)
}

// spill moves what memory holds into the spool, in order.
func (h *held) spill() error {
	if h.spool == nil || len(h.mem) == 0 {
		return nil
	}
	for i, it := range h.mem {
		if err := h.spool.push(it, true); err != nil {
			h.mem = h.mem[i:]
			h.recount()
			return err
		}
	}
	h.mem, h.memBytes = nil, 0
	return nil
}

func (h *held) recount() {
	h.memBytes = 0
	for _, it := range h.mem {
		h.memBytes += it.size()
	}
}

// peek returns up to n items from the front, without removing them.
func (h *held) peek(n int) ([]*heldItem, error) {
	if len(h.mem) > 0 {
		return slices.Clone(h.mem[:min(n, len(h.mem))]), nil
	}
	if h.spool != nil {
		items, err := h.spool.peek(n)
		return slices.Clone(items), err
	}
	return nil, nil
}

// pop removes the first n items, which peek returned.
func (h *held) pop(n int) error {
	if len(h.mem) > 0 {
		for _, it := range h.mem[:n] {
			h.memBytes -= it.size()
		}
		clear(h.mem[:n])
		h.mem = h.mem[n:]
		if len(h.mem) == 0 {
			h.mem, h.memBytes = nil, 0
		}
		return nil
	}
	return h.spool.pop(n)
}

// backoff schedules the next attempt after a failed one at now.
func (h *held) backoff(now time.Time) {
	switch {
	case h.retry == 0:
		h.retry = retryFirst
	case h.retry < retryMax:
		h.retry = min(2*h.retry, retryMax)
	}
	h.next = now.Add(h.retry)
}

// maxDrain bounds how many held items one commit stores.
const maxDrain = 1024

// permanent reports whether err says the store will never take the
// append, however often it is tried.
func permanent(err error) bool {
	for _, e := range []error{store.ErrClosed, store.ErrReadOnly, store.ErrVersionConflict, store.ErrNewerSchema} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// storeDown reports whether the store is unavailable, rather than refusing
// an append it was given: it does not answer a read either. Requires j.mu.
func (j *Journal) storeDown() bool {
	ctx, cancel := j.storeContext()
	defer cancel()
	_, err := j.st.LastSeq(ctx)
	return err != nil
}

// failedFrom returns the index of the first failed result, and whether
// every result from it on failed (as when a commit failed as a whole, or
// one by one stopped there).
func failedFrom(res []store.AppendResult) (int, bool) {
	for i, r := range res {
		if r.Err != nil {
			for _, r := range res[i+1:] {
				if r.Err == nil {
					return i, false
				}
			}
			return i, true
		}
	}
	return len(res), true
}

// unavailable reports whether the failure err of a commit that stored
// nothing from some request on means the store is unavailable, so those
// requests should be held and tried again. A store that answers reads is
// tried again too when hold is set (the requests can be held): the next
// attempt stores one request at a time, and one that fails alone while the
// store answers is refused. Requires j.mu.
func (j *Journal) unavailable(err error, hold bool) bool {
	if permanent(err) {
		return false
	}
	j.held.lastErr = err
	if j.storeDown() {
		return true
	}
	if hold {
		j.held.single = true
		return true
	}
	return false
}

// holdOrLose keeps r, a request the store did not take, for when it is
// back: a deferred one is held (or lost past the bounds), a waited-for one
// fails now and is recorded as lost. Requires j.mu.
func (j *Journal) holdOrLose(r *request) {
	h := j.held
	if !h.down {
		h.down = true
		h.backoff(time.Now())
		if !h.single {
			h.warned = true
			j.log.Warn("journal: store unavailable; holding deferred events until it is back", "err", h.lastErr)
		}
	}
	if r.done == nil && h.hold(&heldItem{Session: r.session, Envs: r.envs, evs: r.evs, failed: r.failed}) {
		return
	}
	if r.done != nil {
		r.err = fmt.Errorf("journal: append to %q: store unavailable: %w", r.session, h.lastErr)
	}
	h.lose(r.session, r.envs)
	if !h.logged {
		h.logged = true
		j.log.Error("journal: store unavailable; events are lost and recorded as a RecordingGap once it is back",
			"session", r.session, "type", r.envs[0].Type, "err", h.lastErr)
	}
}

// drain stores what is held, in order, into out, until nothing is left or
// the store fails; then the next attempt is scheduled. Requires j.mu.
func (j *Journal) drain(out *storedBatch) {
	h := j.held
	for {
		if !h.hasItems() {
			if len(h.tailOrder) > 0 && !j.storeGaps(out) {
				return
			}
			break
		}
		n := maxDrain
		if h.single {
			n = 1
		}
		items, err := h.peek(n)
		if err != nil {
			h.lastErr = err
			h.backoff(time.Now())
			j.log.Error("journal: read held events", "err", err)
			return
		}
		if len(items) == 0 {
			continue // an empty spool file was removed
		}
		now := j.now().UTC()
		reqs := make([]store.AppendRequest, len(items))
		for i, it := range items {
			envs := it.Envs
			if it.Gap != nil {
				envs = []events.Envelope{j.gapEnvelope(it.Session, it.Gap, now)}
			}
			reqs[i] = store.AppendRequest{Stream: it.Session, Expected: store.AnyVersion, Envs: envs}
		}
		res := j.commit(reqs)
		f, rest := failedFrom(res)
		if f < len(res) && rest && !permanent(res[f].Err) {
			for k := range f {
				out.add(res[k].Envs, items[k].evs)
			}
			if f > 0 {
				if err := h.pop(f); err != nil {
					j.log.Error("journal: held events stored, spool not updated", "err", err)
				}
				h.stored += f
			}
			h.lastErr = res[f].Err
			if j.storeDown() {
				h.backoff(time.Now())
				return
			}
			if len(items)-f > 1 {
				h.single = true // find the one the store refuses
				continue
			}
			items, res = items[f:], res[f:]
		}
		for k, it := range items {
			if res[k].Err == nil {
				out.add(res[k].Envs, it.evs)
				h.stored++
				h.single = false
				continue
			}
			err := fmt.Errorf("journal: append to %q: %w", it.Session, res[k].Err)
			h.forget(it.Session, it.Envs)
			if it.failed != nil {
				out.refused = append(out.refused, refusal{it.failed, err})
			} else {
				j.log.Warn("journal: the store refused held events; dropped", "session", it.Session, "err", err)
			}
		}
		if err := h.pop(len(items)); err != nil {
			j.log.Error("journal: held events stored, spool not updated", "err", err)
		}
	}
	if h.warned {
		j.log.Info("journal: store is back; held events stored", "stored", h.stored, "lost", h.dropped)
	}
	h.down, h.single, h.logged, h.warned = false, false, false, false
	h.retry, h.stored, h.dropped, h.lastErr = 0, 0, 0, nil
}

// gapEnvelope is the envelope of session's gap, recorded at now.
func (j *Journal) gapEnvelope(session string, g *events.RecordingGap, now time.Time) events.Envelope {
	env, err := events.New(session, g, now)
	if err != nil {
		panic(err) // a RecordingGap always encodes
	}
	env.Host = j.host
	return env
}

// storeGaps stores the gaps of the events lost since the last held item,
// in one commit, and reports whether the store took them; until it does,
// they stay open, so later losses count in them. Requires j.mu.
func (j *Journal) storeGaps(out *storedBatch) bool {
	h := j.held
	now := j.now().UTC()
	reqs := make([]store.AppendRequest, len(h.tailOrder))
	for i, s := range h.tailOrder {
		reqs[i] = store.AppendRequest{Stream: s, Expected: store.AnyVersion, Envs: []events.Envelope{j.gapEnvelope(s, h.tail[s], now)}}
	}
	res := j.commit(reqs)
	down := false
	var keep []string
	for k, s := range h.tailOrder {
		err := res[k].Err
		if err == nil {
			out.add(res[k].Envs, nil)
			delete(h.tail, s)
			continue
		}
		if !down && !permanent(err) && j.storeDown() {
			down, h.lastErr = true, err
		}
		if down {
			keep = append(keep, s)
			continue
		}
		j.log.Error("journal: the store refused a RecordingGap", "session", s, "err", err)
		delete(h.tail, s)
	}
	h.tailOrder = keep
	if down {
		h.backoff(time.Now())
		return false
	}
	h.tail = nil
	return true
}

// closeHeld keeps what is still held, at Close, in the spool for the next
// journal on it (or logs what is lost without one), and releases the
// spool. Requires that the writer has ended its last write.
func (j *Journal) closeHeld() {
	j.mu.Lock()
	defer j.mu.Unlock()
	h := j.held
	if h.pending() {
		if h.spool == nil {
			n := len(h.mem)
			j.log.Error("journal: closed while the store is unavailable; held events lost", "appends", n, "err", h.lastErr)
		} else {
			err := h.sealTail()
			if err == nil {
				err = h.spill()
			}
			if err != nil {
				j.log.Error("journal: closed while the store is unavailable; held events lost", "err", err)
			} else {
				j.log.Warn("journal: closed while the store is unavailable; held events kept for the next journal on the spool",
					"files", h.spool.files())
			}
		}
	}
	if h.spool != nil {
		if err := h.spool.close(); err != nil {
			j.log.Error("journal: close spool", "err", err)
		}
	}
}
