package natsbus_test

import (
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"

	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/natsbus"
	"github.com/mcplife/mcplife/natsbus/natstest"
)

// Distinct topics get distinct stream names, and a plain topic keeps the
// name it always had.
func TestStreamNameIsInjective(t *testing.T) {
	if got := natsbus.StreamName("mcplife.events"); got != "MCPLIFE_mcplife_events" {
		t.Errorf("StreamName(mcplife.events) = %q", got)
	}
	topics := []string{
		"mcplife.events", "mcplife_events", "mcplife.events_team.a", "mcplife.events_team_a",
		"mcplife.events.team.a", "a.b", "a_b", "a._b", "a_.b", "a__b", "a.b_2e", "a_2eb", "a.2eb",
		"x.a", "a.", "x.a.2e", "a-b", "a.b-c", "ä.b", "a/b", "a:b",
	}
	seen := map[string]string{}
	for _, topic := range topics {
		name := natsbus.StreamName(topic)
		if other, ok := seen[name]; ok {
			t.Errorf("topics %q and %q share the stream %s", other, topic, name)
		}
		seen[name] = topic
		if strings.ContainsAny(name, ".*> \t/\\") {
			t.Errorf("StreamName(%q) = %q is not a valid stream name", topic, name)
		}
	}
}

// Two fleets whose topics differ only where the old naming mapped every
// character to '_' (schemas "team.a" and "team_a") both publish and
// subscribe on one server.
func TestTopicsDifferingInDotsAndUnderscores(t *testing.T) {
	url := natstest.URL(t)
	base := natstest.Topic()
	b := open(t, url)
	for _, topic := range []string{base + ".events_team.a", base + ".events_team_a"} {
		dropStream(t, url, topic)
		msgs, err := b.Subscribe(t.Context(), topic)
		if err != nil {
			t.Fatalf("subscribe to %s: %v", topic, err)
		}
		m := message.NewMessage("1", []byte(`{}`))
		m.Metadata.Set(journal.MetaType, "ToolsListed")
		if err := b.Publish(topic, m); err != nil {
			t.Fatalf("publish on %s: %v", topic, err)
		}
		if got := <-msgs; got.UUID != "1" {
			t.Fatalf("subscription to %s received %q", topic, got.UUID)
		}
	}
}

// A stream that has the topic's name but other subjects (made by hand, or
// for another topic) fails publishing and subscribing with an error that
// says so.
func TestStreamWithOtherSubjects(t *testing.T) {
	url := natstest.URL(t)
	topic := natstest.Topic()
	other := natstest.Topic() + ".>"
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := nc.JetStream()
	name := natsbus.StreamName(topic)
	if _, err := js.AddStream(&nats.StreamConfig{Name: name, Subjects: []string{other}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { js.DeleteStream(name) })
	b := open(t, url)
	_, subErr := b.Subscribe(t.Context(), topic)
	m := message.NewMessage("1", []byte(`{}`))
	m.Metadata.Set(journal.MetaType, "ToolsListed")
	pubErr := b.Publish(topic, m)
	for what, err := range map[string]error{"subscribe": subErr, "publish": pubErr} {
		if err == nil {
			t.Fatalf("%s on %s succeeded into a stream of subjects %s", what, topic, other)
		}
		for _, want := range []string{name, other, topic + ".>"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s error %q does not name %q", what, err, want)
			}
		}
	}
}

// A stream an earlier version named differently (every character but a
// letter, digit, '-' or '_' mapped to '_') that holds exactly the topic's
// subjects is used as it is: the new name could not be created beside it.
func TestStreamOfAnEarlierName(t *testing.T) {
	url := natstest.URL(t)
	topic := natstest.Topic() + ".events_team"
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := nc.JetStream()
	earlier := "MCPLIFE_" + strings.ReplaceAll(topic, ".", "_")
	if _, err := js.AddStream(&nats.StreamConfig{Name: earlier, Subjects: []string{topic + ".>"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { js.DeleteStream(earlier) })
	b := open(t, url)
	msgs, err := b.Subscribe(t.Context(), topic)
	if err != nil {
		t.Fatalf("subscribe to %s beside the stream %s: %v", topic, earlier, err)
	}
	m := message.NewMessage("1", []byte(`{}`))
	m.Metadata.Set(journal.MetaType, "ToolsListed")
	if err := b.Publish(topic, m); err != nil {
		t.Fatal(err)
	}
	if got := <-msgs; got.UUID != "1" {
		t.Fatalf("received %q", got.UUID)
	}
	if info, err := js.StreamInfo(earlier); err != nil || info.State.Msgs != 1 {
		t.Fatalf("stream %s: %+v, %v; want the message in it", earlier, info, err)
	}
}
