package proc

import "time"

// ReapOptions configure [Reap]. The zero value reaps the recorded
// processes alone.
type ReapOptions struct {
	// Session is the id of the session whose processes are reaped: every
	// process of this user whose environment carries it as [SessionEnv]
	// is taken for one of the session's, recorded or not ("": none is).
	// Reap it only once the session's host is gone: the live processes
	// of a running session carry it too.
	Session string

	// Born names recorded process groups with a span of start times: a
	// live member of such a group whose leader is gone, and that started
	// within the span, is taken for one of the session's, although it was
	// never recorded and carries no id (a server's child that cleared its
	// environment before its host looked at the server's descendants).
	// The span must be one in which the group was the one recorded, as
	// from the start of its leader to when the leader was last known to
	// run: a group id cannot be reused while the leader's pid is held.
	Born []GroupSpan
}

// GroupSpan is a process group and a span of start times in which a
// process that started in it was born into the recorded group (see
// [ReapOptions.Born]).
type GroupSpan struct {
	Pgid int
	// From and To bound the start times, in clock ticks since boot as in
	// [Identity.StartTime], both included.
	From, To uint64
}

// Ticks returns d in the clock ticks of [Identity.StartTime]: Linux
// reports start times to user space in USER_HZ, 100 a second.
func Ticks(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	return uint64(d / (time.Second / 100))
}
