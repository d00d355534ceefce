// Package events defines the lifecycle events of mcplife, the envelope that
// carries them, the server configuration they describe, the configuration
// hash used as a tool-cache key, and the redaction applied to every
// configuration before it is recorded.
//
// It depends on the standard library only, so every other package (stores,
// projectors, tools) can share one vocabulary.
//
// Every event is a plain struct with a past-tense name and an explicit,
// stable type string returned by its Type method. Encoding goes through
// [New] and decoding through [Decode], which consults one explicit table;
// nothing is registered by reflection or from other packages. An event type
// this version does not know decodes to [*Unknown], which keeps its bytes.
//
// Example (runnable as the example of [Decode]):
//
//	env, err := events.New("session-1", &events.ConnectStarted{Server: "git", Transport: events.TransportStdio, Attempt: 1}, time.Now())
//	if err != nil {
//		return err // not a type of the table
//	}
//	ev, err := events.Decode(env)
//	if err != nil {
//		return err // malformed data for a known type
//	}
//	if cs, ok := ev.(*events.ConnectStarted); ok {
//		fmt.Println(cs.Server, events.Describe(cs))
//	}
package events
