package store

import (
	"context"
	"fmt"
	"strings"
)

// SessionRefError is the error of a session reference that names no one
// session: nothing is recorded yet ("last"), a prefix that more than one
// session id starts with (Matches), or one that none does.
type SessionRefError struct {
	Ref     string
	Matches int // sessions whose id starts with Ref
	Empty   bool
}

func (e *SessionRefError) Error() string {
	switch {
	case e.Empty:
		return "no sessions recorded yet"
	case e.Matches > 1:
		return fmt.Sprintf("session prefix %q is ambiguous (%d sessions)", e.Ref, e.Matches)
	}
	return fmt.Sprintf("no session %q", e.Ref)
}

// ResolveSession maps a session reference onto a recorded session id:
// "last" (the newest stream), an exact id, or a prefix of exactly one id.
// A reference that names no one session is a [*SessionRefError]; other
// errors are the store's.
func ResolveSession(ctx context.Context, st Store, ref string) (string, error) {
	var last string
	var matches []string
	for info, err := range st.Streams(ctx) {
		if err != nil {
			return "", err
		}
		if info.Stream == ref {
			return ref, nil
		}
		last = info.Stream
		if strings.HasPrefix(info.Stream, ref) {
			matches = append(matches, info.Stream)
		}
	}
	switch {
	case ref == "last" && last != "":
		return last, nil
	case ref == "last":
		return "", &SessionRefError{Ref: ref, Empty: true}
	case len(matches) == 1:
		return matches[0], nil
	}
	return "", &SessionRefError{Ref: ref, Matches: len(matches)}
}
