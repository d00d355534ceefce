// Package natsbus is the bus of an mcplife fleet: NATS JetStream through
// watermill-nats, as a watermill Publisher and Subscriber for
// [github.com/mcplife/mcplife/journal.Options].
//
// A journal publishes every stored event on its topic (by default
// "mcplife.events"); the bus sends each on a subject of its own event type,
// topic + "." + type ("mcplife.events.ToolsListed"), into one JetStream
// stream per topic that it creates when missing (subjects topic + ".>").
// The message id is the event's id, its sequence in the shared store, and
// is sent as the JetStream message id, so a message published twice (a
// retried publish) is stored once. Each Subscribe is an ordered, ephemeral
// consumer that starts with the messages published after it, so every
// subscriber sees every message (fan-out), in order; the consumer is
// re-created by the NATS client when the connection or the server comes
// back, and the bus then tells each subscription to read from the store
// what it missed meanwhile (as it does every few seconds, for a message
// lost otherwise). The bus is a fast path, never the record: one topic belongs to
// one store.
//
// Example:
//
//	bus, err := natsbus.Open("nats://127.0.0.1:4222", nil)
//	if err != nil { ... }
//	defer bus.Close()
//	j, err := journal.New(st, &journal.Options{Publisher: bus, Subscriber: bus})
package natsbus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"

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
	sub  *wmnats.Subscriber
	opts Options

	mu      sync.Mutex
	streams map[string]bool // topics whose stream exists
	subs    map[chan struct{}]struct{}
	closed  bool
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
	b := &Bus{opts: o, streams: map[string]bool{}, subs: map[chan struct{}]struct{}{}}
	nopts := append([]nats.Option{
		nats.Name(o.Name),
		nats.ReconnectHandler(func(*nats.Conn) { b.checkAll() }),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		// While the server is away a publish fails at once (the journal
		// logs it; subscribers read the store), instead of queueing.
		nats.ReconnectBufSize(-1),
		nats.RetryOnFailedConnect(false),
	}, o.NatsOptions...)
	conn, err := nats.Connect(url, nopts...)
	if err != nil {
		return nil, fmt.Errorf("natsbus: connect to %s: %w", redactURL(url), err)
	}
	js, err := conn.JetStream()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("natsbus: %s: JetStream: %w", redactURL(url), err)
	}
	if _, err := js.AccountInfo(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("natsbus: %s: JetStream is not enabled on the server: %w", redactURL(url), err)
	}
	identity := func(_, topic string) *wmnats.SubjectDetail { return &wmnats.SubjectDetail{Primary: topic} }
	jsCfg := wmnats.JetStreamConfig{
		TrackMsgId:     true, // the message id (the event's sequence) de-duplicates
		AckAsync:       true, // ordered consumers take no acknowledgement
		PublishOptions: []nats.PubOpt{nats.AckWait(2 * time.Second)},
		SubscribeOptions: []nats.SubOpt{
			nats.OrderedConsumer(),
			nats.DeliverNew(),
			// A consumer the server lost (it restarted) is noticed after
			// two missed heartbeats and re-created.
			nats.IdleHeartbeat(time.Second),
		},
	}
	pub, err := wmnats.NewPublisherWithNatsConn(conn, wmnats.PublisherPublishConfig{
		Marshaler: &wmnats.NATSMarshaler{}, SubjectCalculator: identity, JetStream: jsCfg,
	}, o.Logger)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("natsbus: publisher: %w", err)
	}
	sub, err := wmnats.NewSubscriberWithNatsConn(conn, wmnats.SubscriberSubscriptionConfig{
		Unmarshaler:       &wmnats.NATSMarshaler{},
		SubscribersCount:  1, // one consumer per Subscribe keeps the order
		SubjectCalculator: identity,
		AckWaitTimeout:    time.Second,
		CloseTimeout:      time.Second,
		SubscribeTimeout:  10 * time.Second,
		JetStream:         jsCfg,
	}, o.Logger)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("natsbus: subscriber: %w", err)
	}
	b.conn, b.js, b.pub, b.sub = conn, js, pub, sub
	return b, nil
}

// checkAll tells every subscription to look in the store.
func (b *Bus) checkAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for c := range b.subs {
		select {
		case c <- struct{}{}:
		default: // one is pending already
		}
	}
}

// Publish sends each message on the subject of its event type under topic.
// It returns when JetStream has stored them, or with the first error.
func (b *Bus) Publish(topic string, msgs ...*message.Message) error {
	if err := b.ensureStream(topic); err != nil {
		return err
	}
	for _, msg := range msgs {
		subject := topic + "." + subjectToken(msg.Metadata.Get(typeKey))
		if err := b.pub.Publish(subject, msg); err != nil {
			return fmt.Errorf("natsbus: publish on %s: %w", subject, err)
		}
	}
	return nil
}

// Subscribe delivers every message published on topic (any event type)
// after it returns, in order, until ctx ends or the bus closes.
func (b *Bus) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if err := b.ensureStream(topic); err != nil {
		return nil, err
	}
	in, err := b.sub.Subscribe(ctx, topic+".>")
	if err != nil {
		return nil, fmt.Errorf("natsbus: subscribe to %s: %w", topic, err)
	}
	check := make(chan struct{}, 1)
	b.mu.Lock()
	b.subs[check] = struct{}{}
	b.mu.Unlock()
	out := make(chan *message.Message)
	go func() {
		defer close(out)
		defer func() {
			b.mu.Lock()
			delete(b.subs, check)
			b.mu.Unlock()
		}()
		var tick <-chan time.Time
		if b.opts.CheckEvery > 0 {
			t := time.NewTicker(b.opts.CheckEvery)
			defer t.Stop()
			tick = t.C
		}
		for {
			var m *message.Message
			select {
			case msg, ok := <-in:
				if !ok {
					return
				}
				m = msg
			case <-check:
				m = checkStore()
			case <-tick:
				m = checkStore()
			case <-ctx.Done():
				return
			}
			select {
			case out <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// checkStore returns a message telling a journal subscription to read
// from the store what the bus may have lost.
func checkStore() *message.Message {
	m := message.NewMessage(watermill.NewShortUUID(), nil)
	m.Metadata.Set(journal.MetaCheckStore, "1")
	return m
}

// StreamName returns the name of the JetStream stream that holds topic.
func StreamName(topic string) string {
	return "MCPLIFE_" + strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, topic)
}

// ensureStream creates topic's stream when it does not exist.
func (b *Bus) ensureStream(topic string) error {
	if topic == "" || strings.ContainsAny(topic, "*> \t") {
		return fmt.Errorf("natsbus: topic %q is not a NATS subject without wildcards", topic)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return errors.New("natsbus: closed")
	}
	if b.streams[topic] {
		return nil
	}
	name := StreamName(topic)
	_, err := b.js.StreamInfo(name)
	if errors.Is(err, nats.ErrStreamNotFound) {
		_, err = b.js.AddStream(&nats.StreamConfig{
			Name:        name,
			Description: "mcplife events published on " + topic,
			Subjects:    []string{topic + ".>"},
			Storage:     nats.FileStorage,
			MaxAge:      b.opts.MaxAge,
			Duplicates:  min(2*time.Minute, b.opts.MaxAge),
		})
		if errors.Is(err, nats.ErrStreamNameAlreadyInUse) {
			err = nil // another process created it meanwhile
		}
	}
	if err != nil {
		return fmt.Errorf("natsbus: stream %s for %s: %w", name, topic, err)
	}
	b.streams[topic] = true
	return nil
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
	err := b.sub.Close()
	b.pub.Close()
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

// redactURL drops the user information of a server URL, which may hold a
// password or token.
func redactURL(url string) string {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return url
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = "…@" + rest[at+1:]
	}
	return scheme + "://" + rest
}
