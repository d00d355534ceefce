// Package natsbus is the bus of an mcplife fleet: NATS JetStream through
// watermill-nats, as a watermill Publisher and Subscriber for
// [github.com/mcplife/mcplife/journal.Options].
//
// A journal publishes every stored event on its topic (by default
// "mcplife.events"); the bus sends each on a subject of its own event type,
// topic + "." + type ("mcplife.events.ToolsListed"), into one JetStream
// stream per topic (subjects topic + ".>", named by [StreamName]). The bus
// creates the stream when it is missing: at the first publish or
// subscription, and again whenever it may have been lost (after a
// reconnect, as a server that comes back without its JetStream data has
// none, and when a publish finds no stream to take it). The message id is
// the event's id, its store's identity and its sequence there, and is sent
// as the JetStream message id, so a message published twice (a retried
// publish) is stored once, and two stores' events never pass for each
// other. Publishing goes through watermill-nats; receiving uses the NATS
// client with watermill-nats's message format (see [Bus.Subscribe]).
//
// Each Subscribe is an ordered, ephemeral consumer that starts with the
// messages published after it, so every subscriber sees every message
// (fan-out), in order. The bus is a fast path, never the record, and a
// subscription reads the store for whatever the bus may have missed:
//   - after a reconnect, each subscription takes a fresh consumer (retried
//     with backoff while JetStream restores its streams) and then reads the
//     store;
//   - after a failed publish, the bus keeps trying to send a check-store
//     message until one goes through, so subscribers on every host read
//     the store;
//   - and every [Options.CheckEvery], for a message lost otherwise.
//
// A topic is best given to one store (mcp-audit derives its topic from
// the store's identity): a subscription ignores the events of other
// stores on its topic, but still receives them.
//
// A Bus is safe for concurrent use. [Bus.Close] ends every subscription
// and closes the connection: close the journals that use the bus first.
//
// Example, one host of a fleet whose hosts share a store st and a NATS
// server:
//
//	bus, err := natsbus.Open("nats://127.0.0.1:4222", nil)
//	if err != nil {
//		return err // the server could not be reached
//	}
//	defer bus.Close()
//	j, err := journal.New(st, &journal.Options{
//		Publisher:  bus,
//		Subscriber: bus,
//		// A topic of this store's own, as mcp-audit names it (the SQLite
//		// and PostgreSQL stores have an identity).
//		Topic: journal.DefaultTopic + "-" + store.ID(st),
//	})
//	if err != nil {
//		return err
//	}
//	defer j.Close()
package natsbus
