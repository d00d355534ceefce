// Package memory is an in-memory [store.Store] for tests, examples and
// short-lived tools. It passes the same conformance suite
// ([github.com/mcplife/mcplife/store/storetest]) as the SQLite store, except
// for durability: nothing survives the process.
//
// Example:
//
//	s := memory.New()
//	defer s.Close()
//	stored, err := s.Append(ctx, "session-1", store.NoStream, []events.Envelope{env})
//	...
//	for env, err := range s.ReadAll(ctx, 0) { ... }
package memory
