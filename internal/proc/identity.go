package proc

// Identity names one process so that a later look can tell whether its
// pid still stands for the same process: a pid is reused once its
// process is gone, its start time is not. It is what a host records of
// the processes it started, so that the next host can find those that
// outlived it (see [Reap]).
type Identity struct {
	// Pid is the process id.
	Pid int `json:"pid"`
	// Pgid is the process group the process was in when the identity was
	// taken; 0 means unknown.
	Pgid int `json:"pgid"`
	// StartTime is when the process started, in clock ticks since the
	// system booted (field 22 of /proc/<pid>/stat; the tick is
	// sysconf(_SC_CLK_TCK), 1/100 s on common Linux systems). 0 means
	// unknown, as it always is elsewhere than on Linux.
	StartTime uint64 `json:"startTime"`
}

// Identity returns the child's identity, taken right after it started.
// Its StartTime is 0 where the platform cannot tell (not Linux).
func (p *Process) Identity() Identity { return p.id }
