package natsbus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
)

// DefaultMaxAge is how long a stream keeps messages. Subscribers never
// read old messages (they catch up from the store), so the stream only
// needs to hold what is in flight.
const DefaultMaxAge = time.Hour

// typeKey is the message metadata key holding the event type, which names
// the subject (the journal sets it on every message).
const typeKey = journal.MetaType

// Options configure a [Bus]. The zero value (or nil) means defaults.
type Options struct {
	// Name is the client name the NATS server shows for the connection
	// (default "mcplife").
	Name string
	// MaxAge is how long the streams the bus creates keep messages
	// (default DefaultMaxAge).
	MaxAge time.Duration
	// Logger receives the watermill adapter's logs (default: none).
	Logger watermill.LoggerAdapter
	// NatsOptions are added to the connection's options (credentials,
	// TLS, reconnect settings).
	NatsOptions []nats.Option
	// CheckEvery is how often each subscription is told to look in the
	// store for events the bus did not bring, besides after every
	// reconnect (default DefaultCheckEvery; negative: only after
	// reconnects). It bounds how late the last event before a lost
	// message arrives.
	CheckEvery time.Duration
}

// DefaultCheckEvery is the default of [Options.CheckEvery].
const DefaultCheckEvery = 5 * time.Second

// Bus is a watermill Publisher and Subscriber on NATS JetStream. It is
// safe for concurrent use.
type Bus struct {
	conn *nats.Conn
	js   nats.JetStreamContext
	pub  *wmnats.Publisher
	opts Options

	mu      sync.Mutex
	streams map[string]string // topic → the name of its stream, once known to exist
	subs    map[*subscription]struct{}
	lost    map[string]bool // topics whose failed publish is being announced (announceLoss)
	closed  bool
	closing chan struct{} // closed by Close: subscriptions end
}

// subscription is what the bus can ask of one Subscribe's forwarder:
// check the store, or subscribe afresh (its consumer was lost).
type subscription struct {
	check, renew chan struct{}
	// msgs carries the consumer's messages to the forwarder; it is never
	// closed, and done (closed when the forwarder ends) releases a
	// delivery waiting to send.
	msgs chan *message.Message
	done chan struct{}
}

// poke sends on c unless a signal is pending already.
func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

var (
	_ message.Publisher  = (*Bus)(nil)
	_ message.Subscriber = (*Bus)(nil)
)

// Open connects to the NATS server at url (nats://host:port). The
// connection reconnects on its own, for ever, when the server goes away.
func Open(url string, opts *Options) (*Bus, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Name == "" {
		o.Name = "mcplife"
	}
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.Logger == nil {
		o.Logger = watermill.NopLogger{}
	}
	if o.CheckEvery == 0 {
		o.CheckEvery = DefaultCheckEvery
	}
	b := &Bus{opts: o, streams: map[string]string{}, subs: map[*subscription]struct{}{}, lost: map[string]bool{}, closing: make(chan struct{})}
	nopts := append([]nats.Option{
		nats.Name(o.Name),
		// After a reconnect each subscription takes a fresh consumer (the
		// server may have lost the old one, or hold it stalled) and reads
		// the store for what the bus missed meanwhile.
		// A server may come back without its JetStream data: the streams
		// are looked up (and made) again before they are used.
		nats.ReconnectHandler(func(*nats.Conn) {
			b.forgetStreams()
			b.renewAll()
		}),
		// The client gives up an ordered consumer it could not re-create
		// (its stream was still being restored after a server restart):
		// the subscriptions then subscribe afresh.
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if strings.Contains(err.Error(), "recreating ordered consumer") {
				b.renewAll()
			}
		}),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		// While the server is away a publish fails at once (the journal
		// logs it; subscribers read the store), instead of queueing.
		nats.ReconnectBufSize(-1),
		nats.RetryOnFailedConnect(false),
	}, o.NatsOptions...)
	conn, err := nats.Connect(url, nopts...)
	if err != nil {
		return nil, fmt.Errorf("natsbus: connect to %s: %w", events.RedactURL(url), err)
	}
	js, err := conn.JetStream()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("natsbus: %s: JetStream: %w", events.RedactURL(url), err)
	}
	if _, err := js.AccountInfo(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("natsbus: %s: JetStream is not enabled on the server: %w", events.RedactURL(url), err)
	}
	identity := func(_, topic string) *wmnats.SubjectDetail { return &wmnats.SubjectDetail{Primary: topic} }
	jsCfg := wmnats.JetStreamConfig{
		TrackMsgId:     true, // the message id (the event's sequence) de-duplicates
		PublishOptions: []nats.PubOpt{nats.AckWait(2 * time.Second)},
	}
	pub, err := wmnats.NewPublisherWithNatsConn(conn, wmnats.PublisherPublishConfig{
		Marshaler: &wmnats.NATSMarshaler{}, SubjectCalculator: identity, JetStream: jsCfg,
	}, o.Logger)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("natsbus: publisher: %w", err)
	}
	b.conn, b.js, b.pub = conn, js, pub
	return b, nil
}

// forgetStreams makes the next use of every topic look up its stream, and
// create it when it is gone.
func (b *Bus) forgetStreams() {
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.streams)
}

// renewAll tells every subscription to subscribe afresh.
func (b *Bus) renewAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		poke(s.renew)
	}
}

// Publish sends each message on the subject of its event type under topic
// (a check-store message, [journal.MetaCheckStore], on a subject of its
// own). It returns when JetStream has stored them, or with the first
// error. A publish that finds no stream to take it (the server lost it)
// makes the stream again and is sent once more.
func (b *Bus) Publish(topic string, msgs ...*message.Message) error {
	if _, err := b.ensureStream(topic, false); err != nil {
		return err
	}
	for _, msg := range msgs {
		subject := topic + "." + subjectToken(msg.Metadata.Get(typeKey))
		if msg.Metadata.Get(journal.MetaCheckStore) != "" {
			subject = topic + "." + checkSubject
		}
		if err := b.publishOne(topic, subject, msg); err != nil {
			b.announceLoss(topic)
			return fmt.Errorf("natsbus: publish on %s: %w", subject, err)
		}
	}
	return nil
}

// publishOne publishes msg on subject, making topic's stream again and
// sending once more when no stream answered.
func (b *Bus) publishOne(topic, subject string, msg *message.Message) error {
	err := b.pub.Publish(subject, msg)
	if !noStream(err) {
		return err
	}
	if _, serr := b.ensureStream(topic, true); serr != nil {
		return fmt.Errorf("%w, and the stream could not be made again: %w", err, serr)
	}
	return b.pub.Publish(subject, msg)
}

// noStream reports whether a publish failed because no stream took it: the
// stream is gone (or JetStream is still restoring it after a restart).
func noStream(err error) bool {
	return errors.Is(err, nats.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrStreamNotFound)
}

// announceLoss makes sure the subscribers of topic, on every host, read
// the store once the bus takes messages again: it keeps trying to publish
// a check-store message, backing off, until one goes through or the bus
// closes. One such goroutine runs per topic at a time; a later failure
// while it runs is covered by the message it will send.
func (b *Bus) announceLoss(topic string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lost[topic] || b.closed {
		return
	}
	b.lost[topic] = true
	go func() {
		defer func() {
			b.mu.Lock()
			delete(b.lost, topic)
			b.mu.Unlock()
		}()
		for wait := renewBackoff; ; wait = min(2*wait, maxRenewBackoff) {
			select {
			case <-b.closing:
				return
			case <-time.After(wait):
			}
			if b.publishOne(topic, topic+"."+checkSubject, checkStore()) == nil {
				return
			}
		}
	}()
}

// checkSubject is the last token of the subject that carries check-store
// messages, which no event type can take (types have no underscore
// prefix).
const checkSubject = "_check_store"

// Subscribe delivers every message published on topic (any event type)
// after it returns, in order, until ctx ends or the bus closes; and, when
// the bus may have lost messages (a reconnect, a consumer the server lost,
// every [Options.CheckEvery]), a check-store message
// ([journal.MetaCheckStore]).
//
// Messages are received with the NATS client directly, as an ordered
// consumer, and decoded with watermill-nats's own message format: the
// watermill-nats subscriber closes its output while a delivery may still
// be sending on it, which a subscription ending under traffic would turn
// into a panic.
func (b *Bus) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	stream, err := b.ensureStream(topic, false)
	if err != nil {
		return nil, err
	}
	sub := &subscription{
		check: make(chan struct{}, 1), renew: make(chan struct{}, 1),
		msgs: make(chan *message.Message, 256), done: make(chan struct{}),
	}
	ns, err := b.consume(topic, stream, sub)
	if err != nil {
		return nil, fmt.Errorf("natsbus: subscribe to %s: %w", topic, err)
	}
	b.mu.Lock()
	b.subs[sub] = struct{}{}
	b.mu.Unlock()
	out := make(chan *message.Message)
	go func() {
		defer close(out)
		defer func() {
			close(sub.done)
			if ns != nil {
				ns.Unsubscribe()
			}
			b.mu.Lock()
			delete(b.subs, sub)
			b.mu.Unlock()
		}()
		var tick <-chan time.Time
		if b.opts.CheckEvery > 0 {
			t := time.NewTicker(b.opts.CheckEvery)
			defer t.Stop()
			tick = t.C
		}
		// retry renews again after a failed renewal (JetStream may still
		// be restoring the stream after a restart), backing off.
		var retry <-chan time.Time
		backoff := renewBackoff
		for {
			var m *message.Message
			select {
			case m = <-sub.msgs:
			case <-retry:
				retry = nil
				poke(sub.renew)
				continue
			case <-sub.renew:
				// A fresh consumer from now on (a message the old one
				// still delivers comes twice, which the journal skips).
				// It exists before the store is read below, so every
				// event is in one or the other.
				if ns != nil {
					ns.Unsubscribe()
				}
				// The stream itself may be gone (the server came back
				// without its data): it is made again first.
				stream, err := b.ensureStream(topic, true)
				if err == nil {
					ns, err = b.consume(topic, stream, sub)
				}
				if err != nil {
					ns = nil
					retry = time.After(backoff)
					backoff = min(2*backoff, maxRenewBackoff)
				} else {
					backoff = renewBackoff
				}
				m = checkStore()
			case <-sub.check:
				m = b.checked(sub, ns)
			case <-tick:
				m = b.checked(sub, ns)
			case <-b.closing:
				return
			case <-ctx.Done():
				return
			}
			select {
			case out <- m:
			case <-b.closing:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// Delays between attempts to take a fresh consumer that failed.
const (
	renewBackoff    = 100 * time.Millisecond
	maxRenewBackoff = 5 * time.Second
)

// checked returns a check-store message, and asks for a fresh consumer
// when ns is gone (the client gave it up).
func (b *Bus) checked(sub *subscription, ns *nats.Subscription) *message.Message {
	if ns == nil || !ns.IsValid() {
		poke(sub.renew)
	}
	return checkStore()
}

// consume starts an ordered consumer of topic's events, in stream, that
// hands each decoded message to sub.
func (b *Bus) consume(topic, stream string, sub *subscription) (*nats.Subscription, error) {
	var dec wmnats.NATSMarshaler
	return b.js.Subscribe(topic+".>", func(msg *nats.Msg) {
		m, err := dec.Unmarshal(msg)
		if err != nil {
			return // not an event of ours
		}
		select {
		case sub.msgs <- m:
		case <-sub.done:
		}
	}, nats.OrderedConsumer(), nats.DeliverNew(), nats.BindStream(stream),
		// A consumer the server lost (it restarted) is noticed after two
		// missed heartbeats and re-created by the client.
		nats.IdleHeartbeat(time.Second))
}

// checkStore returns a message telling a journal subscription to read
// from the store what the bus may have lost.
func checkStore() *message.Message {
	m := message.NewMessage(watermill.NewShortUUID(), nil)
	m.Metadata.Set(journal.MetaCheckStore, "1")
	return m
}

// StreamName returns the name of the JetStream stream that holds topic,
// distinct for distinct topics. A topic of dot-separated tokens of
// letters, digits and '-' gives "MCPLIFE_" and its tokens joined by '_'
// ("mcplife.events" → "MCPLIFE_mcplife_events"); any other topic gives
// "MCPLIFE__" and the topic with every byte but a letter, digit or '-'
// written as '_' and two hex digits ("mcplife.events_team" →
// "MCPLIFE__mcplife_2eevents_5fteam"). The first form never has '_' after
// "MCPLIFE_" where the second has it, and each form can be read back, so
// no two topics share a name.
func StreamName(topic string) string {
	plain := topic != ""
	for tok := range strings.SplitSeq(topic, ".") {
		if tok == "" || strings.ContainsFunc(tok, func(r rune) bool { return !nameRune(r) }) {
			plain = false
			break
		}
	}
	if plain {
		return "MCPLIFE_" + strings.ReplaceAll(topic, ".", "_")
	}
	var b strings.Builder
	b.WriteString("MCPLIFE__")
	for i := 0; i < len(topic); i++ {
		if c := topic[i]; nameRune(rune(c)) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "_%02x", c)
		}
	}
	return b.String()
}

// nameRune reports whether r stands for itself in a stream name.
func nameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-'
}

// errSubjectOverlap is the JetStream error code of a stream whose subjects
// overlap another stream's.
const errSubjectOverlap nats.ErrorCode = 10065

// ensureStream returns the name of topic's stream, making the stream when
// it does not exist. It looks the stream up on the server when fresh is
// set or the bus has not seen it since it connected; otherwise it answers
// at once. It fails when a stream of that name holds other subjects.
func (b *Bus) ensureStream(topic string, fresh bool) (string, error) {
	if topic == "" || strings.ContainsAny(topic, "*> \t") {
		return "", fmt.Errorf("natsbus: topic %q is not a NATS subject without wildcards", topic)
	}
	b.mu.Lock()
	name, known := b.streams[topic]
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return "", errors.New("natsbus: closed")
	}
	if known && !fresh {
		return name, nil
	}
	// The look-up and the creation are requests to the server: they are
	// made without b.mu, so a slow server holds up nobody else. Two of
	// them at once for one topic are harmless (see makeStream).
	name, err := b.makeStream(topic)
	if err != nil {
		return "", err
	}
	b.mu.Lock()
	b.streams[topic] = name
	b.mu.Unlock()
	return name, nil
}

// makeStream looks up topic's stream and creates it when missing, and
// returns its name. A stream another process creates meanwhile is used. A
// stream of another name that holds exactly topic's subjects (one an
// earlier version of this package named differently) is used too.
func (b *Bus) makeStream(topic string) (string, error) {
	name, subject := StreamName(topic), topic+".>"
	info, err := b.js.StreamInfo(name)
	if errors.Is(err, nats.ErrStreamNotFound) {
		info, err = b.js.AddStream(&nats.StreamConfig{
			Name:        name,
			Description: "mcplife events published on " + topic,
			Subjects:    []string{subject},
			Storage:     nats.FileStorage,
			MaxAge:      b.opts.MaxAge,
			Duplicates:  min(2*time.Minute, b.opts.MaxAge),
		})
		var apiErr *nats.APIError
		switch {
		case errors.Is(err, nats.ErrStreamNameAlreadyInUse):
			// Another process created it meanwhile (with other limits).
			info, err = b.js.StreamInfo(name)
		case errors.As(err, &apiErr) && apiErr.ErrorCode == errSubjectOverlap:
			if other, lerr := b.js.StreamNameBySubject(subject); lerr == nil {
				if oinfo, ierr := b.js.StreamInfo(other); ierr == nil && slices.Equal(oinfo.Config.Subjects, []string{subject}) {
					info, err = oinfo, nil
				} else if ierr == nil {
					err = fmt.Errorf("%w: stream %s holds subjects %q", err, other, oinfo.Config.Subjects)
				}
			}
		}
	}
	if err != nil {
		return "", fmt.Errorf("natsbus: stream %s for topic %s: %w", name, topic, err)
	}
	if !slices.Contains(info.Config.Subjects, subject) {
		return "", fmt.Errorf("natsbus: stream %s exists with subjects %q, which do not include %q, so it cannot hold topic %s (it was made for another topic, or by hand: delete it, or use another topic)",
			info.Config.Name, info.Config.Subjects, subject, topic)
	}
	return info.Config.Name, nil
}

// Conn returns the bus's NATS connection (for its status and statistics).
func (b *Bus) Conn() *nats.Conn { return b.conn }

// Close ends every subscription and closes the connection. Idempotent.
func (b *Bus) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	close(b.closing)
	err := b.pub.Close()
	b.conn.Close()
	return err
}

// subjectToken makes s usable as one token of a subject.
func subjectToken(s string) string {
	if s == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '*' || r == '>' || r <= ' ' {
			return '_'
		}
		return r
	}, s)
}
