// Package journal persists lifecycle events and then publishes them.
//
// A [Journal] appends events to a [store.Store] and, only after the store
// accepted them, hands them to its subscriptions. Appends go through one
// queue and the journal's writer goroutine, which stores what is queued in
// one commit when the store can ([store.BatchAppender]); [Journal.Append]
// waits for its events to be stored, [Journal.AppendDeferred] does not.
//
// With a bus (Options.Publisher and Subscriber, for subscribers in other
// processes), each envelope is published as a watermill message carrying
// its global sequence, type and session id in its metadata. Without one,
// the writer hands stored batches to the process's subscriptions directly.
// Either way a subscriber detects gaps by sequence and catches up from the
// store: order comes from the sequence, never from the bus.
//
// Projections attached with [Journal.Attach] are kept current synchronously
// inside Append, in sequence order and without gaps: events that other
// journals (other processes sharing the database) appended in between are
// read from the store and applied first. A projection that can checkpoint
// itself is restored from the store's latest checkpoint and caught up from
// there, so startup cost does not grow with history.
//
// While the store is unavailable (its appends and reads fail), deferred
// appends are held in order, in memory and then in a spool directory
// (Options.Spool), and stored once it is back, before anything appended
// after them; a spool that a journal left (it closed or was killed during
// an outage) is stored by the next journal on it. Past those bounds the
// loss is recorded as an [events.RecordingGap] where it happened.
//
// A session's events form one stream, named by its session id
// ([NewSessionID]).
//
// Example (the runnable form is the package's Example):
//
//	j, err := journal.New(memory.New(), nil)
//	if err != nil { ... }
//	defer j.Close()
//	id := journal.NewSessionID()
//	sub, err := j.Subscribe(ctx, journal.SubscribeOptions{Session: id})
//	if err != nil { ... }
//	defer sub.Close()
//	_, err = j.Append(ctx, id, &events.SessionStarted{Cwd: "/work"})
//	env := <-sub.C() // seq 1, SessionStarted
package journal
