package events_test

import (
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/mcplife/mcplife/events"
)

// An event goes into an envelope with [events.New] and comes back out with
// [events.Decode]; the envelope's Type is the event's stable type string.
func ExampleDecode() {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	env, err := events.New("session-1", &events.ConnectStarted{Server: "git", Transport: events.TransportStdio, Attempt: 1, Round: 1}, at)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(env.Type, env.Stream, env.Time.Format(time.RFC3339))

	ev, err := events.Decode(env)
	if err != nil {
		log.Fatal(err)
	}
	if cs, ok := ev.(*events.ConnectStarted); ok {
		fmt.Println(cs.Server, events.Describe(cs))
	}

	// A type this version does not know keeps its bytes.
	ev, err = events.Decode(events.Envelope{Type: "SomethingNew", Schema: 1, Data: json.RawMessage(`{"x":1}`)})
	if err != nil {
		log.Fatal(err)
	}
	u := ev.(*events.Unknown)
	fmt.Println(u.Type(), string(u.Data))
	// Output:
	// ConnectStarted session-1 2026-05-01T12:00:00Z
	// git git transport=stdio attempt=1 round=1
	// SomethingNew {"x":1}
}

// A configuration is recorded redacted: env and header values and
// credential-like URL parameters never reach the store.
func ExampleServerConfig_Redact() {
	cfg := events.ServerConfig{
		Name:    "tracker",
		URL:     "https://tracker.example/mcp?api_key=s3cret&team=core",
		Headers: map[string]string{"Authorization": "Bearer ${TRACKER_TOKEN}"},
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(cfg.Redact()); err != nil {
		log.Fatal(err)
	}
	// Output:
	// {"url":"https://tracker.example/mcp?api_key=<redacted>&team=core","headers":{"Authorization":"<redacted>"}}
}

// Validate returns every problem of a configuration at once, each naming
// the server and the field.
func ExampleServerConfig_Validate() {
	timeout := int64(-1)
	cfg := events.ServerConfig{Name: "files", Type: events.TransportStdio, TimeoutMs: &timeout}
	fmt.Println(cfg.Validate())
	// Output:
	// Server "files": stdio server requires "command" field; Server "files": "timeout" must not be negative
}
