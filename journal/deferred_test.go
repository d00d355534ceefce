package journal_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
)

// gatedStore is a memory store whose appends (single or batched) wait
// while the gate is shut, so a test holds the journal's writer inside a
// commit; it counts the commits and can fail them.
type gatedStore struct {
	*memory.Store

	mu      sync.Mutex
	gate    chan struct{} // nil: open
	entered chan struct{} // receives once per commit that found the gate shut
	commits int
	fail    error
}

func newGatedStore() *gatedStore {
	return &gatedStore{Store: memory.New(), entered: make(chan struct{}, 100)}
}

// shut makes later commits wait until open is called.
func (s *gatedStore) shut() {
	s.mu.Lock()
	s.gate = make(chan struct{})
	s.mu.Unlock()
}

func (s *gatedStore) open() {
	s.mu.Lock()
	close(s.gate)
	s.gate = nil
	s.mu.Unlock()
}

func (s *gatedStore) failWith(err error) {
	s.mu.Lock()
	s.fail = err
	s.mu.Unlock()
}

func (s *gatedStore) commit() error {
	s.mu.Lock()
	g := s.gate
	s.commits++
	err := s.fail
	s.mu.Unlock()
	if g != nil {
		s.entered <- struct{}{}
		<-g
	}
	return err
}

func (s *gatedStore) numCommits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commits
}

func (s *gatedStore) Append(ctx context.Context, stream string, expected int64, envs []events.Envelope) ([]events.Envelope, error) {
	if err := s.commit(); err != nil {
		return nil, err
	}
	return s.Store.Append(ctx, stream, expected, envs)
}

func (s *gatedStore) AppendBatch(ctx context.Context, reqs []store.AppendRequest) []store.AppendResult {
	if err := s.commit(); err != nil {
		res := make([]store.AppendResult, len(reqs))
		for i := range res {
			res[i].Err = err
		}
		return res
	}
	return s.Store.AppendBatch(ctx, reqs)
}

func gatedJournal(t *testing.T, opts *journal.Options) (*journal.Journal, *gatedStore) {
	t.Helper()
	st := newGatedStore()
	j, err := journal.New(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close(); st.Close() })
	return j, st
}

func storedServers(t *testing.T, st store.Store) []string {
	t.Helper()
	var got []string
	for env, err := range st.ReadAll(context.Background(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		e, err := events.Decode(env)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.(*events.ToolListChanged).Server)
	}
	return got
}

// Deferred and waited-for appends are stored in call order, and appends
// queued while a commit is in flight share the next commit.
func TestDeferredKeepsCallOrderAndSharesCommits(t *testing.T) {
	j, st := gatedJournal(t, nil)
	ctx := context.Background()
	rec := &seqRecorder{}
	if err := j.Attach(ctx, rec); err != nil {
		t.Fatal(err)
	}
	st.shut()
	// The first append holds the writer in its commit...
	if err := j.AppendDeferred(ctx, "s", "", nil, ev(0)); err != nil {
		t.Fatal(err)
	}
	<-st.entered
	// ... while these queue behind it, deferred and waited-for mixed.
	var want []string
	want = append(want, "s0")
	for i := 1; i < 10; i++ {
		if err := j.AppendDeferred(ctx, "s", fmt.Sprintf("c%d", i), nil, ev(i)); err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("s%d", i))
	}
	waited := make(chan error)
	go func() {
		_, err := j.Append(ctx, "s", ev(10))
		waited <- err
	}()
	want = append(want, "s10")
	// The waited-for append is queued once Flush, queued after it, is
	// taken; Flush cannot return before the gate opens.
	flushed := make(chan error)
	go func() { flushed <- j.Flush(ctx) }()
	st.open()
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	got := storedServers(t, st)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("stored order = %v, want %v", got, want)
	}
	rec.checkApplied(t, 11)
	// One commit for the first append, then at most one per wake-up for
	// the ten queued behind it (the waited-for append and Flush may each
	// arrive after the writer took the others).
	if n := st.numCommits(); n > 4 {
		t.Errorf("%d commits for 11 appends, 10 of them queued during the first commit; want at most 4", n)
	}
}

// Close stores every deferred append queued before it.
func TestCloseStoresDeferred(t *testing.T) {
	st := memory.New()
	defer st.Close()
	j, err := journal.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 500 {
		if err := j.AppendDeferred(ctx, "s", "", nil, ev(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := st.LastSeq(ctx); err != nil || n != 500 {
		t.Fatalf("after Close: LastSeq = %d, %v; want 500", n, err)
	}
	if err := j.AppendDeferred(ctx, "s", "", nil, ev(0)); !errors.Is(err, journal.ErrClosed) {
		t.Fatalf("AppendDeferred after Close: %v, want ErrClosed", err)
	}
	if err := j.Flush(ctx); !errors.Is(err, journal.ErrClosed) {
		t.Fatalf("Flush after Close: %v, want ErrClosed", err)
	}
}

// The deferred queue is bounded: with the writer held, the append past
// the bound blocks until its context ends or the writer catches up.
func TestDeferredBackPressure(t *testing.T) {
	j, st := gatedJournal(t, &journal.Options{DeferredQueue: 3})
	ctx := context.Background()
	st.shut()
	for i := range 3 {
		if err := j.AppendDeferred(ctx, "s", "", nil, ev(i)); err != nil {
			t.Fatal(err)
		}
	}
	<-st.entered
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := j.AppendDeferred(cctx, "s", "", nil, ev(3)); !errors.Is(err, context.Canceled) {
		t.Fatalf("AppendDeferred on a full queue with a cancelled context: %v, want context.Canceled", err)
	}
	unblocked := make(chan error)
	go func() { unblocked <- j.AppendDeferred(ctx, "s", "", nil, ev(4)) }()
	st.open()
	if err := <-unblocked; err != nil {
		t.Fatal(err)
	}
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(storedServers(t, st)), "[s0 s1 s2 s4]"; got != want {
		t.Fatalf("stored %s, want %s", got, want)
	}
}

// A deferred append that the store refuses reports to its callback; a
// waited-for one returns the error; the journal goes on.
func TestDeferredFailureReported(t *testing.T) {
	j, st := gatedJournal(t, nil)
	ctx := context.Background()
	boom := errors.New("disk full")
	st.failWith(boom)
	failed := make(chan error, 2) // two appends fail
	if err := j.AppendDeferred(ctx, "s", "", func(err error) { failed <- err }, ev(0)); err != nil {
		t.Fatal(err)
	}
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-failed:
		if !errors.Is(err, boom) {
			t.Fatalf("failure callback got %v, want %v", err, boom)
		}
	default:
		t.Fatal("Flush returned before the failed deferred append was reported")
	}
	if _, err := j.Append(ctx, "s", ev(1)); !errors.Is(err, boom) {
		t.Fatalf("Append on a failing store: %v, want %v", err, boom)
	}
	st.failWith(nil)
	if _, err := j.Append(ctx, "s", ev(2)); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(storedServers(t, st)), "[s2]"; got != want {
		t.Fatalf("stored %s, want %s", got, want)
	}
}

// Deferred appends that arrive within the delay share one commit, made when
// the delay runs out; a waited-for append ends the wait at once.
func TestDeferredGatheredWithinDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newGatedStore()
		j, err := journal.New(st, &journal.Options{DeferredDelay: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		ctx := context.Background()
		for i := range 10 {
			if err := j.AppendDeferred(ctx, "s", "", nil, ev(i)); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait() // the writer waits out the delay
		if n := st.numCommits(); n != 0 {
			t.Fatalf("%d commits before the delay ran out, want 0", n)
		}
		time.Sleep(5 * time.Millisecond)
		synctest.Wait()
		if n, err := st.LastSeq(ctx); n != 10 || err != nil || st.numCommits() != 1 {
			t.Fatalf("after the delay: %d events in %d commits (%v), want 10 in 1", n, st.numCommits(), err)
		}
		// A waited-for append does not wait for the delay, and takes the
		// deferred ones queued before it into its commit.
		start := time.Now()
		if err := j.AppendDeferred(ctx, "s", "", nil, ev(10)); err != nil {
			t.Fatal(err)
		}
		if _, err := j.Append(ctx, "s", ev(11)); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("Append waited %v", waited)
		}
		if n := st.numCommits(); n != 2 {
			t.Errorf("%d commits, want 2", n)
		}
	})
}

// A writer gathering deferred appends is not woken by each, but once it
// holds as many as it gathers at most (1,024) it stores them without
// waiting out the delay.
func TestDeferredGatherBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newGatedStore()
		j, err := journal.New(st, &journal.Options{DeferredDelay: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		ctx := context.Background()
		for i := range 1023 {
			if err := j.AppendDeferred(ctx, "s", "", nil, ev(i)); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if n := st.numCommits(); n != 0 {
			t.Fatalf("%d commits of 1,023 deferred appends within the delay, want 0", n)
		}
		if err := j.AppendDeferred(ctx, "s", "", nil, ev(1023)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n, err := st.LastSeq(ctx); n != 1024 || err != nil || st.numCommits() != 1 {
			t.Fatalf("after the 1,024th: %d events in %d commits (%v), want 1024 in 1", n, st.numCommits(), err)
		}
	})
}

// A lingering deferred append, and the deferred ones queued after it,
// wait past the delay for a waited-for append and share its commit; with
// none, they are stored when the linger ends, no later. A journal that
// does not wait stores a lingering append at once.
func TestDeferredLinger(t *testing.T) {
	lingering := func(t *testing.T, j *journal.Journal, i int, linger time.Duration) {
		t.Helper()
		d, err := j.PrepareDeferred("s", "", nil, ev(i))
		if err != nil {
			t.Fatal(err)
		}
		d.Linger(linger)
		if err := j.QueueDeferred(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	synctest.Test(t, func(t *testing.T) {
		st := newGatedStore()
		j, err := journal.New(st, &journal.Options{DeferredDelay: 2 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		ctx := context.Background()
		lingering(t, j, 0, 20*time.Millisecond)
		for i := 1; i <= 2; i++ {
			if err := j.AppendDeferred(ctx, "s", "", nil, ev(i)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(10 * time.Millisecond) // past the delay, within the linger
		synctest.Wait()
		if n := st.numCommits(); n != 0 {
			t.Fatalf("%d commits within the linger, want 0", n)
		}
		if _, err := j.Append(ctx, "s", ev(3)); err != nil {
			t.Fatal(err)
		}
		if n, err := st.LastSeq(ctx); n != 4 || err != nil || st.numCommits() != 1 {
			t.Fatalf("after the waited-for append: %d events in %d commits (%v), want 4 in 1", n, st.numCommits(), err)
		}

		start := time.Now()
		lingering(t, j, 4, 20*time.Millisecond)
		if err := j.AppendDeferred(ctx, "s", "", nil, ev(5)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		if n := st.numCommits(); n != 1 {
			t.Fatalf("%d commits just before the linger ended, want 1", n)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if n, err := st.LastSeq(ctx); n != 6 || err != nil || st.numCommits() != 2 {
			t.Fatalf("when the linger ended: %d events in %d commits (%v), want 6 in 2", n, st.numCommits(), err)
		}
		if d := time.Since(start); d != 20*time.Millisecond {
			t.Errorf("stored after %v, want the linger, 20ms", d)
		}
		if got, want := storedServers(t, st), []string{"s0", "s1", "s2", "s3", "s4", "s5"}; !slices.Equal(got, want) {
			t.Errorf("stored %v, want %v", got, want)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		st := newGatedStore()
		j, err := journal.New(st, &journal.Options{DeferredDelay: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		lingering(t, j, 0, time.Hour)
		synctest.Wait()
		if n := st.numCommits(); n != 1 {
			t.Fatalf("%d commits of a lingering append to a journal that does not wait, want 1", n)
		}
	})
}

// unknownEvent is an event type the catalogue does not know: it cannot
// be encoded.
type unknownEvent struct{}

func (unknownEvent) Type() string { return "test.unknown" }

// Appends prepared with PrepareDeferredEncoded have their envelopes built
// by the writer: they are stored in call order with the others, under
// their correlation, and one that cannot be encoded fails alone, through
// its failed function, while the rest are stored.
func TestDeferredEncodedByWriter(t *testing.T) {
	j, st := gatedJournal(t, nil)
	ctx := context.Background()
	failed := make(chan error, 2) // two appends fail
	var want []string
	for i := range 6 {
		var d *journal.Deferred
		var err error
		switch i % 3 {
		case 0:
			d, err = j.PrepareDeferred("s", fmt.Sprintf("c%d", i), nil, ev(i))
		case 1:
			d, err = j.PrepareDeferredEncoded("s", fmt.Sprintf("c%d", i), nil, ev(i))
		case 2:
			d, err = j.PrepareDeferredEncoded("s", "", func(err error) { failed <- err }, unknownEvent{})
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := j.QueueDeferred(ctx, d); err != nil {
			t.Fatal(err)
		}
		if i%3 != 2 {
			want = append(want, fmt.Sprintf("s%d/c%d", i, i))
		}
	}
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for env, err := range st.ReadAll(ctx, 1) {
		if err != nil {
			t.Fatal(err)
		}
		e, err := events.Decode(env)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.(*events.ToolListChanged).Server+"/"+env.CorrelationID)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
	select {
	case err := <-failed:
		if err == nil || !strings.Contains(err.Error(), "test.unknown") {
			t.Errorf("failed with %v, want the encoding error", err)
		}
	default:
		t.Error("the append that cannot be encoded did not fail")
	}
	if _, err := j.PrepareDeferredEncoded("", "", nil, ev(0)); err == nil {
		t.Error("PrepareDeferredEncoded took an empty session id")
	}
}

// refusingStore is a memory store that refuses, request by request, an
// append holding an event of the server "bad" (as a store refuses an
// envelope it cannot hold), and notes how many requests each commit had.
type refusingStore struct {
	*memory.Store

	mu    sync.Mutex
	sizes []int
}

var errRefused = errors.New("envelope refused")

func refused(envs []events.Envelope) bool {
	for _, e := range envs {
		if strings.Contains(string(e.Data), `"bad"`) {
			return true
		}
	}
	return false
}

func (s *refusingStore) Append(ctx context.Context, stream string, expected int64, envs []events.Envelope) ([]events.Envelope, error) {
	s.mu.Lock()
	s.sizes = append(s.sizes, 1)
	s.mu.Unlock()
	if refused(envs) {
		return nil, errRefused
	}
	return s.Store.Append(ctx, stream, expected, envs)
}

func (s *refusingStore) AppendBatch(ctx context.Context, reqs []store.AppendRequest) []store.AppendResult {
	s.mu.Lock()
	s.sizes = append(s.sizes, len(reqs))
	s.mu.Unlock()
	res := make([]store.AppendResult, len(reqs))
	for i, r := range reqs {
		if refused(r.Envs) {
			res[i].Err = errRefused
			continue
		}
		res[i].Envs, res[i].Err = s.Store.Append(ctx, r.Stream, r.Expected, r.Envs)
	}
	return res
}

func (s *refusingStore) commits() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sizes)
}

// The deferred appends of one session gathered into a commit reach the
// store as one request; when the store refuses it for one event, that
// append alone fails, the others are stored in order, and so are the
// appends of two sessions, which stay requests of their own.
func TestDeferredOneSessionOneRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &refusingStore{Store: memory.New()}
		j, err := journal.New(st, &journal.Options{DeferredDelay: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		ctx := context.Background()
		appendAll := func(names ...string) (failures chan string) {
			failures = make(chan string, len(names))
			for i, name := range names {
				session := "s"
				if strings.HasPrefix(name, "t:") {
					session, name = "t", name[2:]
				}
				fail := func(error) { failures <- name }
				if err := j.AppendDeferred(ctx, session, fmt.Sprint("c", i), fail, &events.ToolListChanged{Server: name}); err != nil {
					t.Fatal(err)
				}
			}
			if err := j.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			close(failures)
			return failures
		}
		stored := func() []string {
			var got []string
			for env, err := range st.ReadAll(ctx, 1) {
				if err != nil {
					t.Fatal(err)
				}
				e, err := events.Decode(env)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, env.Stream+"/"+e.(*events.ToolListChanged).Server+"/"+env.CorrelationID)
			}
			return got
		}

		for f := range appendAll("a", "b", "c") {
			t.Errorf("%s failed", f)
		}
		if got := st.commits(); fmt.Sprint(got) != "[1]" {
			t.Errorf("requests per commit %v, want [1]: one request for the session", got)
		}

		var failed []string
		for f := range appendAll("d", "bad", "e") {
			failed = append(failed, f)
		}
		if fmt.Sprint(failed) != "[bad]" {
			t.Errorf("failed %v, want [bad]", failed)
		}
		for f := range appendAll("t:f", "g") {
			t.Errorf("%s failed", f)
		}
		want := "[s/a/c0 s/b/c1 s/c/c2 s/d/c0 s/e/c2 t/f/c0 s/g/c1]"
		if got := fmt.Sprint(stored()); got != want {
			t.Errorf("stored %s, want %s", got, want)
		}
		if got := st.commits(); got[len(got)-1] != 2 {
			t.Errorf("requests per commit %v, want the last with 2, one per session", got)
		}
	})
}
