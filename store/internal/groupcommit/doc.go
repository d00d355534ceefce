// Package groupcommit is the group-commit queue the durable stores
// (store/sqlite and store/postgres) share.
//
// Every append queues a [Request] and then waits for the first of three
// things: its request is done, its context is done, or the store's writer
// token is free. The one that gets the token leads: it takes every request
// queued so far, hands them to the store's write function, which writes
// them in one transaction and commits once, then completes them all and
// gives the token back. So appends that arrive while a commit is in flight
// share the next commit and its flush of the log, and one flush
// acknowledges them all. Requests are written in the order they joined the
// queue; those queued by one call stay together, in order (a leader takes
// all of them or none).
//
// A request whose context is done before a leader takes it is removed from
// the queue, writes nothing and fails with the context's error; a leader
// that finds a taken request's context already done leaves it out in the
// same way. Once handed to the write function, a request is committed with
// the rest or fails with the transaction. The write function gets no
// context: it writes for the whole group, not for the caller that happens
// to lead, so the leader's statements run without its context's
// cancellation.
//
// The writer token is the store's own: a channel of capacity one that
// holds a token while something writes. A store may take it for writes of
// its own (SQLite does, for snapshots and migrations on its one writer
// connection); the queue then waits for them as for a group in flight.
//
// The committer also does what a store's Append and AppendBatch share:
// checking each append, holding the store open while it waits, and
// naming the store and the stream in errors.
//
// Example:
//
//	db.commits = groupcommit.New(groupcommit.Config{
//		Store:   "sqlite",
//		Check:   checkAppend,
//		Acquire: func() error { return db.acquire(true) },
//		Release: db.release,
//		Sem:     db.wsem,
//		Write:   db.writeGroup, // one transaction for all of live
//	})
//	...
//	stored, err := db.commits.Append(ctx, stream, expected, envs)
package groupcommit
