//go:build !linux

package proc

// Reap kills nothing and returns nil, nil: elsewhere than on Linux the
// start time of a process is unknown, so a recorded pid cannot be told
// apart from a process that reuses it, and there is no /proc to read
// the environments of processes from, so the processes carrying a
// session's id ([SessionEnv]) are not found either (a user can still
// find them, with ps(1) where it shows environments).
func Reap(ids []Identity, opts *ReapOptions) (killed []Identity, err error) { return nil, nil }
