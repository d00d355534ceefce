package manager

import (
	"context"
	"sync"
)

// Rounds of a multi-round-trip call. Under protocol 2026-07-28 a server
// that needs input during a tool call answers "input required" with its
// input requests, and the go-sdk fulfils them through the client's
// callbacks and makes the call again, round after round. The go-sdk
// fulfils one round's requests together, under a context of their own
// derived from the call's, so the callbacks tell the rounds apart by that
// context: the distinct contexts the host's callbacks saw for a call are
// the rounds they answered (ToolCallFinished.InputRounds).

type roundsKey struct{}

// inputRounds are the rounds of one call seen by the host's callbacks.
type inputRounds struct {
	mu   sync.Mutex
	seen map[<-chan struct{}]bool
}

// withInputRounds returns ctx carrying a fresh count for one call.
func withInputRounds(ctx context.Context) (context.Context, *inputRounds) {
	r := &inputRounds{}
	return context.WithValue(ctx, roundsKey{}, r), r
}

// noteRound notes, from a host callback's context, the round it answers;
// a callback outside a call (a server-to-client request of the legacy
// era) carries no count.
func noteRound(ctx context.Context) {
	r, _ := ctx.Value(roundsKey{}).(*inputRounds)
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[<-chan struct{}]bool{}
	}
	r.seen[ctx.Done()] = true
}

// count returns how many rounds were seen.
func (r *inputRounds) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}
