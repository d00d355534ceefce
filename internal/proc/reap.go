package proc

// ReapOptions configure [Reap]. The zero value reaps the recorded
// processes alone.
type ReapOptions struct {
	// Session is the id of the session whose processes are reaped: every
	// process of this user whose environment carries it as [SessionEnv]
	// is taken for one of the session's, recorded or not ("": none is).
	// Reap it only once the session's host is gone: the live processes
	// of a running session carry it too.
	Session string
}
