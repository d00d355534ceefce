package groupcommit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
)

// harness is a Committer whose write function records each group it gets
// and, while hold is set, blocks its first group until release is called.
type harness struct {
	c       *Committer
	sem     chan struct{}
	queued  chan int      // the queue's length after each Commit joins it
	entered chan struct{} // closed when the first group reaches write

	hold  bool
	block chan struct{}

	mu     sync.Mutex
	groups [][]string // the streams of each group written, in order
	closed bool       // Acquire fails
	held   int        // Acquires not yet released
}

var errClosed = errors.New("closed")

func newHarness(t *testing.T, hold bool) *harness {
	t.Helper()
	h := &harness{
		sem:     make(chan struct{}, 1),
		queued:  make(chan int, 64),
		entered: make(chan struct{}),
		hold:    hold,
		block:   make(chan struct{}),
	}
	h.c = New(Config{
		Store: "test",
		Check: func(stream string, _ int64, _ []events.Envelope) error {
			if stream == "" {
				return errors.New("test: empty stream name")
			}
			return nil
		},
		Acquire: func() error {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.closed {
				return errClosed
			}
			h.held++
			return nil
		},
		Release: func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.held--
		},
		Sem:   h.sem,
		Write: h.write,
	})
	h.c.TestHookQueued = func(n int) { h.queued <- n }
	return h
}

func (h *harness) write(live []*Request) {
	h.mu.Lock()
	var streams []string
	for _, r := range live {
		streams = append(streams, r.Stream)
	}
	h.groups = append(h.groups, streams)
	first := len(h.groups) == 1
	h.mu.Unlock()
	if first && h.hold {
		close(h.entered)
		<-h.block
	}
	for _, r := range live {
		if r.Stream == "fail" {
			r.Err = errors.New("refused")
			continue
		}
		r.Out = r.Envs
	}
}

func (h *harness) release() { close(h.block) }

func (h *harness) written() [][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.groups)
}

// start commits one request per stream, together, in a goroutine and waits
// until they have joined the queue. The requests are done when the
// returned channel is closed.
func (h *harness) start(ctx context.Context, streams ...string) ([]*Request, <-chan struct{}) {
	rs := make([]*Request, len(streams))
	for i, s := range streams {
		rs[i] = &Request{Stream: s, Envs: []events.Envelope{{Type: s}}}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.c.commit(ctx, rs)
	}()
	<-h.queued
	return rs, done
}

func checkWritten(t *testing.T, rs []*Request) {
	t.Helper()
	for _, r := range rs {
		if r.Err != nil || len(r.Out) != 1 || r.Out[0].Type != r.Stream {
			t.Errorf("request %s: %v, %v; want its one event written", r.Stream, r.Out, r.Err)
		}
	}
}

// TestQueuedBehindAWriteShareTheNext holds the first group's write until
// more requests have queued behind it, one of them a batch: they are all
// written in one group, in the order they queued.
func TestQueuedBehindAWriteShareTheNext(t *testing.T) {
	h := newHarness(t, true)
	ctx := t.Context()
	first, firstDone := h.start(ctx, "first")
	<-h.entered
	var (
		all   []*Request
		dones []<-chan struct{}
	)
	for _, streams := range [][]string{{"a"}, {"b1", "b2", "b3"}, {"c"}, {"d"}} {
		rs, done := h.start(ctx, streams...)
		all = append(all, rs...)
		dones = append(dones, done)
	}
	h.release()
	<-firstDone
	for _, d := range dones {
		<-d
	}
	checkWritten(t, append(first, all...))
	want := [][]string{{"first"}, {"a", "b1", "b2", "b3", "c", "d"}}
	if got := h.written(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("groups written %v, want %v", got, want)
	}
}

// TestTokenHeldElsewhereHoldsTheQueue takes the writer token as a store's
// own write does: requests wait for it and then share one write.
func TestTokenHeldElsewhereHoldsTheQueue(t *testing.T) {
	h := newHarness(t, false)
	h.sem <- struct{}{}
	ctx := t.Context()
	var (
		all   []*Request
		dones []<-chan struct{}
	)
	for _, s := range []string{"a", "b", "c"} {
		rs, done := h.start(ctx, s)
		all = append(all, rs...)
		dones = append(dones, done)
	}
	if got := h.written(); len(got) != 0 {
		t.Fatalf("written while the token was held: %v", got)
	}
	<-h.sem
	for _, d := range dones {
		<-d
	}
	checkWritten(t, all)
	if got := h.written(); fmt.Sprint(got) != "[[a b c]]" {
		t.Fatalf("groups written %v, want [[a b c]]", got)
	}
}

// TestCancelledWhileQueued cancels a batch waiting behind a held write: it
// leaves the queue, fails with the context's error and is never written,
// while the requests around it are.
func TestCancelledWhileQueued(t *testing.T) {
	h := newHarness(t, true)
	ctx := t.Context()
	_, firstDone := h.start(ctx, "first")
	<-h.entered
	before, beforeDone := h.start(ctx, "before")
	cctx, cancel := context.WithCancel(ctx)
	cancelled, cancelledDone := h.start(cctx, "x1", "x2")
	after, afterDone := h.start(ctx, "after")
	cancel()
	<-cancelledDone
	for _, r := range cancelled {
		if !errors.Is(r.Err, context.Canceled) || r.Out != nil {
			t.Errorf("request %s cancelled while queued: %v, %v; want context.Canceled", r.Stream, r.Out, r.Err)
		}
	}
	h.release()
	<-firstDone
	<-beforeDone
	<-afterDone
	checkWritten(t, append(before, after...))
	if got := h.written(); fmt.Sprint(got) != "[[first] [before after]]" {
		t.Fatalf("groups written %v, want [[first] [before after]]", got)
	}
}

// TestTakenAfterContextEnded has a leader take a request whose context
// ended while it sat in the queue and before its caller could remove it:
// the leader leaves it out with the context's error and writes the rest.
func TestTakenAfterContextEnded(t *testing.T) {
	h := newHarness(t, false)
	// The first caller stops in the hook, its request queued, until
	// resume is closed: it cannot see its context end and dequeue.
	resume := make(chan struct{})
	h.c.TestHookQueued = func(n int) {
		h.queued <- n
		if n == 1 {
			<-resume
		}
	}
	cctx, cancel := context.WithCancel(t.Context())
	late, lateDone := h.start(cctx, "late")
	cancel()
	live, liveDone := h.start(t.Context(), "live")
	<-liveDone // "live" led, and took "late" with it
	checkWritten(t, live)
	select {
	case <-late[0].done:
	default:
		t.Fatal("the leader did not complete the request it took")
	}
	close(resume)
	<-lateDone
	if r := late[0]; !errors.Is(r.Err, context.Canceled) || r.Out != nil {
		t.Fatalf("request taken after its context ended: %v, %v; want context.Canceled", r.Out, r.Err)
	}
	if got := h.written(); fmt.Sprint(got) != "[[live]]" {
		t.Fatalf("groups written %v, want [[live]]", got)
	}
}

// TestCancelledWhileWrittenCommits cancels a request's context while its
// group is being written: it gets the group's result, not the context's
// error.
func TestCancelledWhileWrittenCommits(t *testing.T) {
	h := newHarness(t, true)
	cctx, cancel := context.WithCancel(t.Context())
	rs, done := h.start(cctx, "first")
	<-h.entered
	cancel()
	h.release()
	<-done
	checkWritten(t, rs)
}

// TestOneFailsAlone checks that the write function's result for each
// request reaches it: one refused, the others in its group written.
func TestOneFailsAlone(t *testing.T) {
	h := newHarness(t, false)
	rs, done := h.start(t.Context(), "a", "fail", "b")
	<-done
	checkWritten(t, []*Request{rs[0], rs[2]})
	if rs[1].Err == nil {
		t.Fatal("the refused request got no error")
	}
}

// TestConcurrentCommits runs many callers at once, under -race: every
// request is written exactly once.
func TestConcurrentCommits(t *testing.T) {
	h := newHarness(t, false)
	h.c.TestHookQueued = nil
	var wg sync.WaitGroup
	rs := make([]*Request, 200)
	for i := range rs {
		rs[i] = &Request{Stream: fmt.Sprint(i), Envs: []events.Envelope{{Type: fmt.Sprint(i)}}}
		wg.Go(func() { h.c.commit(t.Context(), rs[i:i+1]) })
	}
	wg.Wait()
	checkWritten(t, rs)
	seen := map[string]int{}
	for _, g := range h.written() {
		for _, s := range g {
			seen[s]++
		}
	}
	for _, r := range rs {
		if seen[r.Stream] != 1 {
			t.Fatalf("request %s written %d times", r.Stream, seen[r.Stream])
		}
	}
}

// TestAppend checks Append's errors: Check's as they are, the others
// naming the store and the stream, and the store held only while queued.
func TestAppend(t *testing.T) {
	h := newHarness(t, false)
	h.c.TestHookQueued = nil
	ctx := t.Context()
	envs := []events.Envelope{{Type: "T"}}
	if out, err := h.c.Append(ctx, "s", store.NoStream, envs); err != nil || len(out) != 1 {
		t.Fatalf("Append = %v, %v", out, err)
	}
	if _, err := h.c.Append(ctx, "", store.NoStream, envs); err == nil || err.Error() != "test: empty stream name" {
		t.Fatalf("Append refused by Check: %v", err)
	}
	if _, err := h.c.Append(ctx, "fail", store.NoStream, envs); err == nil || err.Error() != `test: append "fail": refused` {
		t.Fatalf("Append refused by the write: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := h.c.Append(cctx, "s", store.NoStream, envs); !errors.Is(err, context.Canceled) || err.Error() != `test: append "s": context canceled` {
		t.Fatalf("Append with a cancelled context: %v", err)
	}
	h.closed = true
	if _, err := h.c.Append(ctx, "s", store.NoStream, envs); !errors.Is(err, errClosed) || err.Error() != `test: append "s": closed` {
		t.Fatalf("Append to a closed store: %v", err)
	}
	if got := h.written(); fmt.Sprint(got) != "[[s] [fail]]" {
		t.Fatalf("groups written %v, want [[s] [fail]]", got)
	}
	if h.held != 0 {
		t.Fatalf("%d Acquires not released", h.held)
	}
}

// TestAppendBatch checks that a batch is written in one group, in order,
// with each result in its place: one refused by Check is left out, one
// refused by the write fails alone.
func TestAppendBatch(t *testing.T) {
	h := newHarness(t, false)
	h.c.TestHookQueued = nil
	ctx := t.Context()
	req := func(stream string) store.AppendRequest {
		return store.AppendRequest{Stream: stream, Expected: store.AnyVersion, Envs: []events.Envelope{{Type: stream}}}
	}
	if res := h.c.AppendBatch(ctx, nil); len(res) != 0 {
		t.Fatalf("AppendBatch of nothing = %v", res)
	}
	res := h.c.AppendBatch(ctx, []store.AppendRequest{req("a"), req(""), req("fail"), req("b")})
	for i, want := range []string{"", "test: empty stream name", `test: append "fail": refused`, ""} {
		if got := fmt.Sprint(res[i].Err); want != "" && got != want || want == "" && res[i].Err != nil {
			t.Errorf("result %d: error %v, want %q", i, res[i].Err, want)
		}
	}
	if len(res[0].Envs) != 1 || res[0].Envs[0].Type != "a" || len(res[3].Envs) != 1 || res[3].Envs[0].Type != "b" || res[2].Envs != nil {
		t.Errorf("results %+v", res)
	}
	if got := h.written(); fmt.Sprint(got) != "[[a fail b]]" {
		t.Fatalf("groups written %v, want [[a fail b]]", got)
	}
	if res := h.c.AppendBatch(ctx, []store.AppendRequest{req("")}); res[0].Err == nil {
		t.Fatal("a batch of refused appends succeeded")
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	h.closed = true
	for name, c := range map[string]context.Context{"cancelled": cctx, "closed": ctx} {
		res := h.c.AppendBatch(c, []store.AppendRequest{req("x"), req("y")})
		for i, s := range []string{"x", "y"} {
			if res[i].Err == nil || !strings.HasPrefix(res[i].Err.Error(), fmt.Sprintf("test: append %q: ", s)) {
				t.Errorf("%s: result %d: %v", name, i, res[i].Err)
			}
		}
	}
	if got := h.written(); len(got) != 1 {
		t.Fatalf("groups written %v, want only the first batch", got)
	}
	if h.held != 0 {
		t.Fatalf("%d Acquires not released", h.held)
	}
}
