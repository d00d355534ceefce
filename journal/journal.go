package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
)

// Message metadata keys set on every published message.
const (
	MetaSeq     = "mcplife_seq"
	MetaType    = "mcplife_type"
	MetaSession = "mcplife_session"
	MetaHost    = "mcplife_host"
	// MetaStore holds the identity of the store that holds the event
	// ([store.Identifier]): a subscription takes an event off the bus only
	// when it comes from its own store.
	MetaStore = "mcplife_store"
	// MetaCheckStore marks a message a bus sends to a subscription when
	// it may have lost messages (after a reconnect, say): the subscription
	// then reads from the store whatever it has not delivered yet.
	MetaCheckStore = "mcplife_check_store"
)

// DefaultTopic is the topic events are published on.
const DefaultTopic = "mcplife.events"

// DefaultCheckpointEvery is how many appended events a checkpointed
// projection may fall behind its stored checkpoint.
const DefaultCheckpointEvery = 1000

// ErrClosed is returned by a closed journal.
var ErrClosed = errors.New("journal: closed")

// Options configure a [Journal]. The zero value (or nil) means defaults.
type Options struct {
	// Publisher and Subscriber form the bus, for subscribers in other
	// processes or on other hosts. The Subscriber must deliver every
	// message to every Subscribe call (fan-out), as gochannel does. Both
	// nil means no bus: the journal hands stored envelopes to its own
	// subscriptions directly, without encoding them.
	Publisher  message.Publisher
	Subscriber message.Subscriber
	// Topic is the bus topic (default DefaultTopic).
	Topic string
	// Logger receives publish failures and checkpoint problems (default:
	// discard).
	Logger *slog.Logger
	// Now is the clock stamped on envelopes (default time.Now).
	Now func() time.Time
	// Host is the host id stamped on envelopes that carry none (default
	// [events.DefaultHost]).
	Host string
	// CheckpointEvery bounds how far a checkpointed projection's stored
	// checkpoint may lag (default DefaultCheckpointEvery).
	CheckpointEvery int
	// DeferredQueue bounds how many deferred appends may wait for the
	// writer (default DefaultDeferredQueue); see [Journal.AppendDeferred].
	DeferredQueue int
	// DeferredDelay is how long the writer waits for more deferred appends
	// before it stores the ones it has, so that they share a commit
	// (default DefaultDeferredDelay; negative: no wait). A waited-for
	// append, Flush or Close ends the wait at once. It bounds, with the
	// commit's own time, what a killed process can lose of its deferred
	// appends.
	DeferredDelay time.Duration
	// HeldBytes bounds, roughly in bytes, the deferred appends the journal
	// holds in memory while its store is unavailable (default
	// DefaultHeldBytes); past it they go to the spool, or, without one,
	// are lost and recorded as a RecordingGap. See [Journal.AppendDeferred].
	HeldBytes int
	// Spool is the directory where the journal keeps deferred appends
	// that do not fit in HeldBytes, and, at Close, those it still holds
	// (default "": none, they stay in memory). Use one directory per
	// store: a journal opened on it stores what another journal left there
	// before anything else (on Unix, where the journal locks its files;
	// elsewhere a journal uses only the files it created).
	Spool string
	// SpoolBytes bounds the spool (default DefaultSpoolBytes).
	SpoolBytes int64
	// DrainTimeout bounds how long Close waits for the events queued for
	// the bus to be published (default DefaultDrainTimeout; negative: no
	// wait). The events left then are not published: they are stored, and
	// subscribers read them from the store.
	DrainTimeout time.Duration
	// StoreTimeout bounds each commit of the writer and each check of
	// whether the store is up (default DefaultStoreTimeout; negative: no
	// bound). A store that stops answering without failing (a database
	// behind a partition that never resets the connection) then counts as
	// unavailable once it passed: the writer holds what it could not
	// store, as for a store that failed, instead of waiting for ever.
	StoreTimeout time.Duration
}

// DefaultDrainTimeout is the default of [Options.DrainTimeout].
const DefaultDrainTimeout = 5 * time.Second

// DefaultStoreTimeout is the default of [Options.StoreTimeout].
const DefaultStoreTimeout = 10 * time.Second

// publishQueue is how many stored batches may wait for the bus.
const publishQueue = 1024

// Projection is a pure fold over envelopes, applied in sequence order.
// The live runner and the replay path feed the same Apply, so a view
// rebuilt from history equals the one built live. The projector package's
// views implement it.
//
// Once attached, a projection is given every stored envelope above its
// LastSeq at [Journal.Attach] exactly once, in sequence order, whoever
// appended it. The journal applies envelopes while holding its lock, so
// Apply must not call the journal.
type Projection interface {
	// Apply folds one envelope into the projection. It cannot fail: an
	// envelope the projection does not use, of an unknown type, or whose
	// data does not decode is skipped.
	Apply(env events.Envelope)
	// LastSeq is the sequence of the last envelope applied (0 if none),
	// so a runner catches up from LastSeq()+1.
	LastSeq() uint64
}

// SharedDecoding is a [Projection] that can take an envelope's decoding
// from the journal, so the projections that fold the same event (a tool
// list of thousands of schemas, say) decode it once between them.
type SharedDecoding interface {
	Projection
	// ApplyDecoded is Apply with decode, which returns env's event,
	// decoded at most once for all projections. The event is shared: it
	// must not be modified.
	ApplyDecoded(env events.Envelope, decode func() (events.Event, error))
}

// TypeFilter is a [Projection] that folds envelopes of a few types only
// and ignores every other. [Journal.Attach] then catches it up by reading
// those types alone, in sequence order, when the store can
// ([store.TypeReader]); once attached it is given every envelope like any
// projection.
type TypeFilter interface {
	Projection
	// EventTypes are the type strings of the envelopes the projection
	// uses.
	EventTypes() []string
}

// Checkpointer is a [Projection] that can be saved to and restored from a
// store checkpoint (see [store.Snapshotter]). The journal saves it at its
// LastSeq, and only while that is no higher than the last envelope the
// journal applied to it: a checkpointed projection should be fed by the
// journal alone.
type Checkpointer interface {
	Projection
	// Name identifies the checkpoint; change it when the format changes.
	Name() string
	MarshalSnapshot() ([]byte, error)
	// UnmarshalSnapshot restores the projection, including its LastSeq.
	UnmarshalSnapshot(data []byte) error
}

// Journal persists events, then publishes them. It is safe for concurrent
// use. Appends are serialised, so attached projections see envelopes in
// sequence order.
type Journal struct {
	st              store.Store
	pub             message.Publisher // nil: no bus, subscriptions are fed directly
	sub             message.Subscriber
	topic           string
	log             *slog.Logger
	now             func() time.Time
	host            string
	checkpointEvery int

	// storeID is the store's identity ([store.ID]), carried by every
	// message: "" when the store has none, and then no bus message is
	// taken as an event.
	storeID string

	// pubq carries stored batches to publishLoop, which publishes them on
	// the bus off the writer's path. A batch that finds it full is not
	// queued, so a slow bus never holds up the writer: pubLost is set
	// instead, and the loop then publishes a check-store message, so that
	// subscribers read the store for what was not published. pubDone is
	// closed when the loop has ended (at once when there is no bus), and
	// pubAbandon by Close when the drain timeout passed: the loop then
	// publishes nothing more.
	pubq         chan []events.Envelope
	pubLost      atomic.Bool
	pubDone      chan struct{}
	pubAbandon   chan struct{}
	drainTimeout time.Duration
	storeTimeout time.Duration // 0: none

	// The write queue (see writer.go): wq holds the appends not yet taken
	// by the writer, in call order; wclosed is set when Close begins. wake
	// tells the writer to look; slots bounds the deferred appends queued;
	// writerDone is closed when the writer has ended. While gathering is
	// set the writer waits out the deferred delay and takes what is queued
	// when it ends, so a deferred append wakes it only to keep a gathered
	// batch within maxGather; gathered is how many it holds already.
	// lingering is set while a lingering append waits in wq with its
	// timer due to wake the writer, so deferred appends after it need not.
	wmu        sync.Mutex
	wq         []*request
	wclosed    bool
	gathering  bool
	lingering  bool
	gathered   int
	wake       chan struct{}
	slots      chan struct{}
	writerDone chan struct{}
	// deferredDelay: see Options.DeferredDelay (≤ 0: no wait).
	deferredDelay time.Duration

	// held is what the writer keeps while the store is unavailable
	// (held.go). Guarded by mu.
	held *held

	// mu serialises writing and projecting and guards the fields below.
	mu          sync.Mutex
	closed      bool
	projections []*attached
	feeds       map[*feed]struct{} // subscriptions fed directly (no bus)
}

type attached struct {
	p     Projection
	cp    Checkpointer // nil when p cannot checkpoint
	saved uint64       // seq of the last stored checkpoint
	// next is the sequence p needs next: every envelope below it has been
	// applied to p. The journal keeps it rather than asking p.LastSeq, which
	// a projection may advance only for the envelopes it uses.
	next uint64
	// ahead is set once a checkpoint was skipped because p claimed
	// sequences the journal did not apply to it, so that is logged once.
	ahead bool
}

// New returns a journal on st. It does not take ownership of st: closing
// the journal leaves the store open. A bus created by default is closed
// with the journal; a caller-supplied one is not.
func New(st store.Store, opts *Options) (*Journal, error) {
	if st == nil {
		return nil, errors.New("journal: nil store")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if (o.Publisher == nil) != (o.Subscriber == nil) {
		return nil, errors.New("journal: Publisher and Subscriber must be set together")
	}
	if o.CheckpointEvery < 0 {
		return nil, fmt.Errorf("journal: CheckpointEvery %d is negative", o.CheckpointEvery)
	}
	switch {
	case o.StoreTimeout == 0:
		o.StoreTimeout = DefaultStoreTimeout
	case o.StoreTimeout < 0:
		o.StoreTimeout = 0
	}
	if o.DeferredQueue < 0 {
		return nil, fmt.Errorf("journal: DeferredQueue %d is negative", o.DeferredQueue)
	}
	if o.DeferredQueue == 0 {
		o.DeferredQueue = DefaultDeferredQueue
	}
	if o.DeferredDelay == 0 {
		o.DeferredDelay = DefaultDeferredDelay
	}
	if o.HeldBytes < 0 || o.SpoolBytes < 0 {
		return nil, fmt.Errorf("journal: HeldBytes %d or SpoolBytes %d is negative", o.HeldBytes, o.SpoolBytes)
	}
	if o.HeldBytes == 0 {
		o.HeldBytes = DefaultHeldBytes
	}
	if o.SpoolBytes == 0 {
		o.SpoolBytes = DefaultSpoolBytes
	}
	h := &held{memLimit: o.HeldBytes}
	if o.Spool != "" {
		sp, err := openSpool(o.Spool, o.SpoolBytes)
		if err != nil {
			return nil, err
		}
		h.spool = sp
		if sp.pending() {
			// Another journal left these: they go to the store first.
			h.down, h.next = true, time.Now()
			if o.Logger != nil {
				o.Logger.Info("journal: storing the events a journal left in the spool", "files", sp.files())
			}
		}
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = DefaultDrainTimeout
	}
	j := &Journal{
		st:              st,
		pub:             o.Publisher,
		sub:             o.Subscriber,
		topic:           o.Topic,
		log:             o.Logger,
		now:             o.Now,
		host:            o.Host,
		checkpointEvery: o.CheckpointEvery,
		storeID:         store.ID(st),
		pubq:            make(chan []events.Envelope, publishQueue),
		pubDone:         make(chan struct{}),
		pubAbandon:      make(chan struct{}),
		drainTimeout:    o.DrainTimeout,
		storeTimeout:    o.StoreTimeout,
		wake:            make(chan struct{}, 1),
		slots:           make(chan struct{}, o.DeferredQueue),
		writerDone:      make(chan struct{}),
		deferredDelay:   o.DeferredDelay,
		held:            h,
	}
	if j.topic == "" {
		j.topic = DefaultTopic
	}
	if j.log == nil {
		j.log = slog.New(slog.DiscardHandler)
	}
	if j.now == nil {
		j.now = time.Now
	}
	if j.host == "" {
		j.host = events.DefaultHost()
	}
	if j.checkpointEvery == 0 {
		j.checkpointEvery = DefaultCheckpointEvery
	}
	if j.pub != nil {
		go j.publishLoop()
	} else {
		close(j.pubDone)
	}
	go j.writeLoop()
	return j, nil
}

// Store returns the underlying store.
func (j *Journal) Store() store.Store { return j.st }

// Host returns the host id the journal stamps on envelopes.
func (j *Journal) Host() string { return j.host }

// Now returns the journal's clock reading.
func (j *Journal) Now() time.Time { return j.now() }

// Append records evs in session's stream (the stream is the session id),
// applies them to the attached projections, and queues them for
// publishing. It returns the stored envelopes once they are stored and
// projected; the journal's own goroutine publishes them, in sequence order,
// right after (Close waits until everything queued is published, up to
// [Options.DrainTimeout]). A publish failure is logged, not returned: the
// events are stored, and subscribers catch up from the store. A bus that
// is slow or hangs never holds up Append: past a queue of batches waiting
// for it, events are left to the store and subscribers are told to read
// it.
//
// While the store is unavailable (see [Journal.AppendDeferred]), Append
// first tries to store what the journal holds, in order; if the store does
// not take it, Append fails with the store's error, and the events it was
// given are lost: they are counted in the session's [events.RecordingGap],
// recorded where they would have been once the store is back.
//
// When the store holds events the projections have not seen below the new
// ones (another process appended them), Append reads those from the store
// and applies them first. If that read fails, it is logged and the
// projections stay at the last envelope they saw, without the new ones; the
// next Append catches them up.
func (j *Journal) Append(ctx context.Context, session string, evs ...events.Event) ([]events.Envelope, error) {
	return j.AppendCorrelated(ctx, session, "", evs...)
}

// AppendCorrelated is [Journal.Append] with a correlation id on every
// envelope (one id per tool call, per reload, ...).
func (j *Journal) AppendCorrelated(ctx context.Context, session, correlation string, evs ...events.Event) ([]events.Envelope, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	envs, err := envelopes(session, correlation, evs)
	if err != nil {
		return nil, err
	}
	return j.appendWaited(ctx, session, envs, evs)
}

// AppendEnvelopes records pre-built envelopes (their Time is stamped with
// the journal's clock when zero). See [Journal.Append].
func (j *Journal) AppendEnvelopes(ctx context.Context, session string, envs []events.Envelope) ([]events.Envelope, error) {
	return j.appendWaited(ctx, session, envs, nil)
}

// appendWaited queues envs, encoding evs when evs is not nil, and waits
// until they are stored or have failed.
func (j *Journal) appendWaited(ctx context.Context, session string, envs []events.Envelope, evs []events.Event) ([]events.Envelope, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("journal: append to %q: %w", session, err)
	}
	r := &request{ctx: ctx, session: session, envs: envs, evs: evs, done: make(chan struct{})}
	if err := j.enqueue(r); err != nil {
		return nil, err
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		if j.dequeue(r) {
			return nil, fmt.Errorf("journal: append to %q: %w", session, ctx.Err())
		}
		<-r.done // the writer has it: it is stored or failed
	}
	return r.out, r.err
}

// project applies stored, just appended, to every attached projection in
// sequence order, after the events below it the projection has not seen,
// read from the store; then it stores the checkpoints that are due. A
// projection never skips a sequence: one whose gap cannot be read stays
// where it is. Requires j.mu.
func (j *Journal) project(ctx context.Context, stored []events.Envelope, typed []events.Event) {
	if len(j.projections) == 0 {
		return
	}
	// The events are stored: keeping the projections current no longer
	// depends on the caller's context.
	ctx = context.WithoutCancel(ctx)
	for i, env := range stored {
		j.catchUp(ctx, env.Seq)
		j.apply(env, typed[i])
	}
	for _, a := range j.projections {
		j.maybeCheckpoint(ctx, a, false)
	}
}

// catchUp applies the stored events below seq to the projections that
// have not seen them, reading the store once from the lowest sequence any
// of them needs. A failed read is logged and leaves them behind. Requires
// j.mu.
func (j *Journal) catchUp(ctx context.Context, seq uint64) {
	from := seq
	for _, a := range j.projections {
		from = min(from, a.next)
	}
	if from == seq {
		return
	}
	for env, err := range j.st.ReadAll(ctx, from) {
		if err != nil {
			j.log.Warn("journal: read events appended elsewhere; projections catch up at the next append",
				"from", from, "to", seq-1, "err", err)
			return
		}
		if env.Seq >= seq {
			return
		}
		j.apply(env, nil)
	}
}

// apply applies env to each projection whose next sequence it is. ev is
// the event env encodes when the caller has it at hand (the appended
// event itself), else nil: it is decoded once, when a projection needs it.
// Requires j.mu.
func (j *Journal) apply(env events.Envelope, ev events.Event) {
	var (
		err     error
		decoded = ev != nil
	)
	decode := func() (events.Event, error) {
		if !decoded {
			ev, err = events.Decode(env)
			decoded = true
		}
		return ev, err
	}
	for _, a := range j.projections {
		if a.next == env.Seq {
			if sd, ok := a.p.(SharedDecoding); ok {
				sd.ApplyDecoded(env, decode)
			} else {
				a.p.Apply(env)
			}
			a.next++
		}
	}
}

// queuePublish queues stored for publishing without ever waiting: when
// the queue is full (the bus is slow or hangs), stored is left to the
// store, and the loop tells subscribers so. Requires j.mu (batches are
// queued in sequence order).
func (j *Journal) queuePublish(stored []events.Envelope) {
	select {
	case j.pubq <- stored:
	default:
		if !j.pubLost.Swap(true) {
			j.log.Warn("journal: the bus does not keep up; events not published are read from the store by subscribers",
				"queued", publishQueue, "firstSeq", stored[0].Seq)
		}
	}
}

// publishLoop publishes queued batches in order until the queue closes,
// and a check-store message after any batch that could not be queued. It
// is owned by the journal: Close closes the queue and waits for it up to
// the drain timeout, after which it publishes nothing more (a publish in
// flight then ends on its own, or when the bus closes).
func (j *Journal) publishLoop() {
	defer close(j.pubDone)
	abandoned := false
	for envs := range j.pubq {
		if !abandoned {
			select {
			case <-j.pubAbandon:
				abandoned = true
			default:
			}
		}
		if abandoned {
			continue
		}
		j.publish(envs)
		// A batch dropped while the queue was full came after every
		// batch then queued, so it is stored by now: a subscriber told to
		// look finds it.
		if j.pubLost.Swap(false) {
			j.publishCheckStore()
		}
	}
}

// publishCheckStore tells every subscription on the bus to read the store
// for what it has not received.
func (j *Journal) publishCheckStore() {
	msg := message.NewMessage(watermill.NewUUID(), nil)
	msg.Metadata.Set(MetaCheckStore, "1")
	msg.Metadata.Set(MetaStore, j.storeID)
	if err := j.pub.Publish(j.topic, msg); err != nil {
		j.log.Warn("journal: publish a check-store message failed; subscribers will catch up from the store", "err", err)
	}
}

// publish sends each envelope on the bus, logging failures. The payload
// is the event's JSON data as stored; the sequence, type and session are
// metadata of their own, and the other envelope fields share one more
// entry, so nothing is encoded twice and the metadata stays small.
func (j *Journal) publish(envs []events.Envelope) {
	msgs := make([]*message.Message, len(envs))
	for i, env := range envs {
		seq := strconv.FormatUint(env.Seq, 10)
		// The message id is the event's id, its store and its sequence
		// there: a bus that de-duplicates by id stores a re-published event
		// once, and never takes another store's event N for this one's. A
		// store without an identity gets fresh ids (its subscribers take
		// nothing off the bus but the news that there is more).
		id := j.storeID + ":" + seq
		if j.storeID == "" {
			id = watermill.NewUUID()
		}
		msg := message.NewMessage(id, message.Payload(env.Data))
		msg.Metadata = message.Metadata{
			MetaSeq:     seq,
			MetaType:    env.Type,
			MetaSession: env.SessionID,
			MetaHost:    env.Host,
			MetaStore:   j.storeID,
			metaRest:    packRest(env),
		}
		msgs[i] = msg
	}
	if err := j.pub.Publish(j.topic, msgs...); err != nil {
		j.log.Warn("journal: publish failed; subscribers will catch up from the store", "err", err)
	}
}

// metaRest holds the envelope fields not in a metadata key of their own:
// "version schema unixnanos len(stream) " + stream + correlation.
const metaRest = "mcplife_env"

func packRest(env events.Envelope) string {
	b := make([]byte, 0, 48+len(env.Stream)+len(env.CorrelationID))
	b = strconv.AppendUint(b, env.Version, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(env.Schema), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, env.Time.UnixNano(), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(env.Stream)), 10)
	b = append(b, ' ')
	b = append(b, env.Stream...)
	b = append(b, env.CorrelationID...)
	return string(b)
}

// envelopeOf rebuilds the envelope a message carries.
func envelopeOf(msg *message.Message) (events.Envelope, error) {
	md := msg.Metadata
	bad := func(err error) (events.Envelope, error) {
		return events.Envelope{}, fmt.Errorf("journal: message %s: %w", msg.UUID, err)
	}
	seq, err := strconv.ParseUint(md.Get(MetaSeq), 10, 64)
	if err != nil {
		return bad(err)
	}
	var nums [4]int64
	rest := md.Get(metaRest)
	for i := range nums {
		field, tail, ok := strings.Cut(rest, " ")
		if !ok {
			return bad(errors.New("short envelope metadata"))
		}
		if nums[i], err = strconv.ParseInt(field, 10, 64); err != nil {
			return bad(err)
		}
		rest = tail
	}
	if nums[0] < 0 || nums[3] < 0 || nums[3] > int64(len(rest)) {
		return bad(errors.New("bad envelope metadata"))
	}
	return events.Envelope{
		Seq: seq, Stream: rest[:nums[3]], Version: uint64(nums[0]), Type: md.Get(MetaType), Schema: int(nums[1]),
		Time: time.Unix(0, nums[2]).UTC(), SessionID: md.Get(MetaSession), CorrelationID: rest[nums[3]:],
		Host: md.Get(MetaHost),
		Data: json.RawMessage(msg.Payload),
	}, nil
}

// Attach restores p from the store's checkpoint when p is a [Checkpointer]
// and the store a [store.Snapshotter], catches it up from the store, and
// from then on applies every stored envelope to p inside Append: the
// journal's own and, read from the store before them, those other journals
// on the same store appended meanwhile (so p learns of those at this
// journal's next Append). Appends wait while p catches up. p must not be
// attached twice.
func (j *Journal) Attach(ctx context.Context, p Projection) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return ErrClosed
	}
	a := &attached{p: p}
	if cp, ok := p.(Checkpointer); ok {
		a.cp = cp
		if sn, ok := j.st.(store.Snapshotter); ok {
			seq, data, err := sn.LoadSnapshot(ctx, cp.Name())
			switch {
			case errors.Is(err, store.ErrNotFound):
			case err != nil:
				j.log.Warn("journal: load checkpoint; rebuilding from events", "name", cp.Name(), "err", err)
			case seq > p.LastSeq():
				if err := cp.UnmarshalSnapshot(data); err != nil {
					j.log.Warn("journal: bad checkpoint; rebuilding from events", "name", cp.Name(), "err", err)
				} else {
					a.saved = seq
				}
			}
		}
	}
	a.next = p.LastSeq() + 1
	if err := j.catchUpOne(ctx, a); err != nil {
		return fmt.Errorf("journal: catch up %T: %w", p, err)
	}
	j.maybeCheckpoint(ctx, a, false)
	j.projections = append(j.projections, a)
	return nil
}

// Detach stops applying envelopes to p and stores its checkpoint when it is
// a [Checkpointer] that is due one. It returns once no Append is applying
// an envelope to p. Detaching a projection that is not attached does
// nothing. A session's manager detaches its view when it closes, so a
// process that runs many sessions does not fold every append into the
// views of sessions long closed.
func (j *Journal) Detach(p Projection) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i, a := range j.projections {
		if a.p == p {
			if !j.closed {
				j.maybeCheckpoint(context.Background(), a, false)
			}
			j.projections = append(j.projections[:i], j.projections[i+1:]...)
			return
		}
	}
}

// catchUpOne applies to a newly attached projection every stored envelope
// from a.next on. A projection that folds a few event types ([TypeFilter])
// on a store that reads by type ([store.TypeReader]) is given only the
// envelopes of those types up to the store's last sequence, merged in
// sequence order, so its catch-up does not grow with the rest of the
// history. Requires j.mu.
func (j *Journal) catchUpOne(ctx context.Context, a *attached) error {
	tf, ok := a.p.(TypeFilter)
	tr, ok2 := j.st.(store.TypeReader)
	if !ok || !ok2 {
		for env, err := range j.st.ReadAll(ctx, a.next) {
			if err != nil {
				return err
			}
			a.p.Apply(env)
			a.next = env.Seq + 1
		}
		return nil
	}
	last, err := j.st.LastSeq(ctx)
	if err != nil {
		return err
	}
	var reads []iter.Seq2[events.Envelope, error]
	for _, typ := range slices.Compact(slices.Sorted(slices.Values(tf.EventTypes()))) {
		reads = append(reads, tr.ReadType(ctx, typ, a.next, last))
	}
	for env, err := range mergeBySeq(reads) {
		if err != nil {
			return err
		}
		a.p.Apply(env)
	}
	a.next = max(a.next, last+1)
	return nil
}

// mergeBySeq yields the envelopes of several reads, each in sequence
// order, as one sequence in that order.
func mergeBySeq(reads []iter.Seq2[events.Envelope, error]) iter.Seq2[events.Envelope, error] {
	if len(reads) == 1 {
		return reads[0]
	}
	return func(yield func(events.Envelope, error) bool) {
		type head struct {
			next func() (events.Envelope, error, bool)
			env  events.Envelope
		}
		var heads []*head
		for _, r := range reads {
			next, stop := iter.Pull2(r)
			defer stop()
			h := &head{next: next}
			env, err, ok := next()
			if err != nil {
				yield(events.Envelope{}, err)
				return
			}
			if ok {
				h.env = env
				heads = append(heads, h)
			}
		}
		for len(heads) > 0 {
			i := 0
			for k, h := range heads {
				if h.env.Seq < heads[i].env.Seq {
					i = k
				}
			}
			h := heads[i]
			if !yield(h.env, nil) {
				return
			}
			env, err, ok := h.next()
			switch {
			case err != nil:
				yield(events.Envelope{}, err)
				return
			case ok:
				h.env = env
			default:
				heads = slices.Delete(heads, i, i+1)
			}
		}
	}
}

// maybeCheckpoint stores a's checkpoint when it lags by checkpointEvery
// events or more (or always when force is set), at the projection's
// LastSeq. It never stores one above the last envelope the journal applied
// to a: such a checkpoint would claim events the projection never saw, and
// a process restoring it would skip them for good. Best effort: failures
// are logged. Requires j.mu.
func (j *Journal) maybeCheckpoint(ctx context.Context, a *attached, force bool) {
	if a.cp == nil {
		return
	}
	sn, ok := j.st.(store.Snapshotter)
	if !ok {
		return
	}
	seq := a.p.LastSeq()
	if seq <= a.saved || (!force && seq-a.saved < uint64(j.checkpointEvery)) {
		return
	}
	if seq >= a.next {
		if !a.ahead {
			a.ahead = true
			j.log.Warn("journal: checkpoint not saved: the projection claims events the journal did not apply to it",
				"name", a.cp.Name(), "lastSeq", seq, "applied", a.next-1)
		}
		return
	}
	data, err := a.cp.MarshalSnapshot()
	if err == nil {
		err = sn.SaveSnapshot(context.WithoutCancel(ctx), a.cp.Name(), seq, data)
	}
	if err != nil {
		if !errors.Is(err, store.ErrReadOnly) {
			j.log.Warn("journal: save checkpoint", "name", a.cp.Name(), "err", err)
		}
		return
	}
	a.saved = seq
}

// Checkpoint stores the checkpoint of every attached [Checkpointer] now.
func (j *Journal) Checkpoint(ctx context.Context) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, a := range j.projections {
		j.maybeCheckpoint(ctx, a, true)
	}
}

// Close checkpoints attached projections, closes a bus the journal created,
// and makes later appends fail with ErrClosed. It stores everything queued,
// and waits for it to be published for at most [Options.DrainTimeout], so
// a bus that hangs delays it by no more than that. It is idempotent. The
// store stays open.
func (j *Journal) Close() error {
	// Stop taking appends, then let the writer store everything queued.
	j.wmu.Lock()
	if !j.wclosed {
		j.wclosed = true
		close(j.wake) // under wmu: enqueue sends only while !wclosed
	}
	j.wmu.Unlock()
	<-j.writerDone
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	for _, a := range j.projections {
		j.maybeCheckpoint(context.Background(), a, true)
	}
	j.closed = true
	for f := range j.feeds {
		f.close()
	}
	if j.pub != nil {
		close(j.pubq) // the writer, the only sender, has ended
	}
	j.mu.Unlock()
	j.drainPublishes()
	return nil
}

// drainPublishes waits for the publish loop to publish what is queued, no
// longer than the drain timeout: a bus that is slow or hangs then keeps
// Close waiting no more, and the loop publishes nothing more.
func (j *Journal) drainPublishes() {
	if j.drainTimeout > 0 {
		t := time.NewTimer(j.drainTimeout)
		defer t.Stop()
		select {
		case <-j.pubDone:
			return
		case <-t.C:
		}
	}
	select {
	case <-j.pubDone:
	default:
		close(j.pubAbandon)
		j.log.Warn("journal: close: events queued for the bus were not published in time; subscribers read them from the store",
			"drainTimeout", j.drainTimeout)
	}
}
