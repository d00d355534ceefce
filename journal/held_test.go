package journal_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/memory"
	"github.com/mcplife/mcplife/verify"
)

// errDown is the fault downStore injects: the store's server is away.
var errDown = errors.New("connection refused")

// downStore is a memory store that, while down, fails every append and
// read as a database whose server stopped does; it counts the appends it
// failed.
type downStore struct {
	*memory.Store

	mu     sync.Mutex
	down   bool
	failed int
}

func newDownStore() *downStore { return &downStore{Store: memory.New()} }

func (s *downStore) setDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

func (s *downStore) fault(appending bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.down {
		return nil
	}
	if appending {
		s.failed++
	}
	return errDown
}

func (s *downStore) numFailed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

func (s *downStore) Append(ctx context.Context, stream string, expected int64, envs []events.Envelope) ([]events.Envelope, error) {
	if err := s.fault(true); err != nil {
		return nil, err
	}
	return s.Store.Append(ctx, stream, expected, envs)
}

func (s *downStore) AppendBatch(ctx context.Context, reqs []store.AppendRequest) []store.AppendResult {
	if err := s.fault(true); err != nil {
		res := make([]store.AppendResult, len(reqs))
		for i := range res {
			res[i].Err = err
		}
		return res
	}
	return s.Store.AppendBatch(ctx, reqs)
}

func (s *downStore) LastSeq(ctx context.Context) (uint64, error) {
	if err := s.fault(false); err != nil {
		return 0, err
	}
	return s.Store.LastSeq(ctx)
}

func (s *downStore) ReadAll(ctx context.Context, from uint64) iter.Seq2[events.Envelope, error] {
	if err := s.fault(false); err != nil {
		return func(yield func(events.Envelope, error) bool) { yield(events.Envelope{}, err) }
	}
	return s.Store.ReadAll(ctx, from)
}

// storedStory returns what st holds, one word per event: the server of a
// ToolListChanged, "gap:N" for a RecordingGap of N events.
func storedStory(t *testing.T, st store.Store) []string {
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
		switch e := e.(type) {
		case *events.ToolListChanged:
			got = append(got, e.Server)
		case *events.RecordingGap:
			got = append(got, fmt.Sprintf("gap:%d", e.Dropped))
		default:
			got = append(got, e.Type())
		}
	}
	return got
}

func names(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("s%d", i))
	}
	return out
}

// A store that goes away under a stream of deferred appends and comes back:
// every deferred event is stored once, in order, the projections see them
// all, a waited-for append made meanwhile fails and leaves a RecordingGap
// where it would have been, and one made after the store is back is
// stored after everything held.
func TestDeferredHeldWhileStoreDown(t *testing.T) {
	st := newDownStore()
	j, err := journal.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	rec := &seqRecorder{}
	if err := j.Attach(ctx, rec); err != nil {
		t.Fatal(err)
	}
	deferred := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := j.AppendDeferred(ctx, "s", "", func(err error) { t.Errorf("deferred append %d failed: %v", i, err) }, ev(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	deferred(0, 200)
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st.setDown(true)
	deferred(200, 500)
	if err := j.Flush(ctx); err != nil {
		t.Fatalf("Flush while the store is down: %v", err)
	}
	if st.numFailed() == 0 {
		t.Fatal("no append reached the store while it was down")
	}
	if _, err := j.Append(ctx, "s", &events.ToolListChanged{Server: "sync-lost"}); !errors.Is(err, errDown) {
		t.Fatalf("Append while the store is down: %v, want one wrapping %v", err, errDown)
	}
	deferred(500, 800)
	st.setDown(false)
	deferred(800, 1000)
	if _, err := j.Append(ctx, "s", &events.ToolListChanged{Server: "sync-after"}); err != nil {
		t.Fatalf("Append after the store is back: %v", err)
	}
	want := slices.Concat(names(0, 500), []string{"gap:1"}, names(500, 1000), []string{"sync-after"})
	if got := storedStory(t, st); !slices.Equal(got, want) {
		t.Fatalf("stored %d events, want %d in order:\ngot  %v\nwant %v", len(got), len(want), got, want)
	}
	rec.checkApplied(t, uint64(len(want)))
}

// Past what memory holds, deferred events go to the spool (a 0600 file in
// a 0700 directory) and are stored from it, in order, once the store is
// back; then the file is gone.
func TestHeldEventsSpillToSpool(t *testing.T) {
	st := newDownStore()
	dir := filepath.Join(t.TempDir(), "spool")
	j, err := journal.New(st, &journal.Options{HeldBytes: 4 << 10, Spool: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	st.setDown(true)
	for i := range 2000 {
		if err := j.AppendDeferred(ctx, "s", "", nil, ev(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	files := spoolFiles(t, dir)
	if len(files) == 0 {
		t.Fatal("no spool file while the store is down and memory is full")
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("spool directory: %v, %v; want mode 0700", fi.Mode(), err)
	}
	for _, f := range files {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("spool file %s: %v, %v; want mode 0600", f, fi.Mode(), err)
		}
	}
	st.setDown(false)
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := storedStory(t, st), names(0, 2000); !slices.Equal(got, want) {
		t.Fatalf("stored %d events, want %d in order", len(got), len(want))
	}
	if files := spoolFiles(t, dir); len(files) != 0 {
		t.Errorf("spool files left after everything was stored: %v", files)
	}
}

// A journal closed while the store is down keeps what it holds in the
// spool; the next journal on that spool stores it, first and in order.
func TestSpoolLeftAtCloseStoredByNextJournal(t *testing.T) {
	st := newDownStore()
	dir := t.TempDir()
	j1, err := journal.New(st, &journal.Options{Spool: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st.setDown(true)
	for i := range 300 {
		if err := j1.AppendDeferred(ctx, "old", fmt.Sprintf("c%d", i), nil, ev(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := j1.Close(); err != nil {
		t.Fatal(err)
	}
	if len(spoolFiles(t, dir)) == 0 {
		t.Fatal("Close with the store down left no spool file")
	}
	st.setDown(false)
	j2, err := journal.New(st, &journal.Options{Spool: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	if _, err := j2.Append(ctx, "new", &events.ToolListChanged{Server: "next"}); err != nil {
		t.Fatal(err)
	}
	want := append(names(0, 300), "next")
	if got := storedStory(t, st); !slices.Equal(got, want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
	var corr []string
	for env, err := range st.ReadStream(ctx, "old", 1) {
		if err != nil {
			t.Fatal(err)
		}
		corr = append(corr, env.CorrelationID)
	}
	if len(corr) != 300 || corr[0] != "c0" || corr[299] != "c299" {
		t.Errorf("correlation ids of the spooled events: %d, first and last %v", len(corr), corr[:min(len(corr), 1)])
	}
	if files := spoolFiles(t, dir); len(files) != 0 {
		t.Errorf("spool files left: %v", files)
	}
}

func spoolFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.spool"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// Past the bound, the events lost are recorded as one RecordingGap, with
// how many and when; a call whose start was lost records nothing more; a
// call held whole is stored whole; and verify accepts the history, while a
// call started after the gap that never finishes is still reported.
func TestRecordingGapPastBound(t *testing.T) {
	st := newDownStore()
	// Room in memory for about twenty small events, no spool.
	j, err := journal.New(st, &journal.Options{HeldBytes: 20 * 300})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	const sid = "gap"
	if _, err := j.Append(ctx, sid,
		&events.ServerDiscovered{Server: "a", Transport: "stdio", Config: events.ServerConfig{Name: "a", Command: "a"}},
		&events.ConnectStarted{Server: "a", Transport: "stdio", Attempt: 1, Round: 1},
		&events.ServerConnected{Server: "a"}); err != nil {
		t.Fatal(err)
	}
	start := func(id string) {
		t.Helper()
		if err := j.AppendDeferred(ctx, sid, id, nil, &events.ToolCallStarted{Server: "a", Tool: "echo"}); err != nil {
			t.Fatal(err)
		}
	}
	finish := func(id string) {
		t.Helper()
		if err := j.AppendDeferred(ctx, sid, id, nil, &events.ToolCallFinished{Server: "a", Tool: "echo"}); err != nil {
			t.Fatal(err)
		}
	}
	// A call in flight when the store goes away: its finish is lost.
	start("open")
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st.setDown(true)
	const calls = 200
	for i := range calls {
		start(fmt.Sprint("c", i))
		finish(fmt.Sprint("c", i))
	}
	finish("open")
	start("late") // its start is lost, its finish comes after the gap
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st.setDown(false)
	if err := j.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	finish("late")
	start("after")
	finish("after")
	if _, err := j.Append(ctx, sid, &events.SessionClosed{Reason: "done"}); err != nil {
		t.Fatal(err)
	}

	var (
		envs             []events.Envelope
		gaps             []*events.RecordingGap
		gapAt            events.Envelope
		starts, finishes = map[string]bool{}, map[string]bool{}
	)
	for env, err := range st.ReadStream(ctx, sid, 1) {
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, env)
		e, err := events.Decode(env)
		if err != nil {
			t.Fatal(err)
		}
		switch e := e.(type) {
		case *events.RecordingGap:
			gaps = append(gaps, e)
			gapAt = env
		case *events.ToolCallStarted:
			starts[env.CorrelationID] = true
		case *events.ToolCallFinished:
			if !starts[env.CorrelationID] {
				t.Errorf("seq %d: ToolCallFinished of %q without its start", env.Seq, env.CorrelationID)
			}
			finishes[env.CorrelationID] = true
		}
	}
	if len(gaps) != 1 {
		t.Fatalf("stored %d RecordingGaps, want 1", len(gaps))
	}
	g := gaps[0]
	// Everything appended during the outage is either stored or counted.
	outage := 2*calls + 2
	storedDuring := 0
	for _, env := range envs {
		if env.Seq > envs[3].Seq && env.Seq < gapAt.Seq {
			storedDuring++
		}
	}
	if storedDuring == 0 || g.Dropped == 0 || storedDuring+g.Dropped != outage {
		t.Errorf("during the outage %d events were stored and the gap counts %d dropped; want both above 0, summing to %d",
			storedDuring, g.Dropped, outage)
	}
	if g.From.IsZero() || g.To.Before(g.From) || gapAt.Time.Before(g.To) {
		t.Errorf("gap from %v to %v, recorded at %v: want from ≤ to ≤ recorded", g.From, g.To, gapAt.Time)
	}
	if finishes["open"] {
		t.Error(`the finish of call "open", appended past the bound, was stored`)
	}
	if starts["late"] || finishes["late"] {
		t.Error(`call "late", whose start was lost, has events stored`)
	}
	if !starts["after"] || !finishes["after"] {
		t.Error(`call "after", made once the store was back, is not stored whole`)
	}
	if v := verify.Session(sid, envs); len(v) != 0 {
		t.Errorf("verify: %v", v)
	}
	// Without the gap, the open call is a defect; a call started after the
	// gap that never finishes is one either way.
	noGap := slices.DeleteFunc(slices.Clone(envs), func(e events.Envelope) bool { return e.Type == events.TypeRecordingGap })
	if v := verify.Session(sid, noGap); len(v) == 0 || v[0].Rule != verify.RuleCallFinishedOnce || !strings.Contains(v[0].Message, `"open"`) {
		t.Errorf("verify without the gap: %v, want the open call reported", v)
	}
	unfinished := slices.Clone(envs)
	closed := unfinished[len(unfinished)-1]
	late := events.MustNew(sid, &events.ToolCallStarted{Server: "a", Tool: "echo"}, closed.Time).WithCorrelation("never")
	late.Seq = closed.Seq
	closed.Seq++
	unfinished = append(unfinished[:len(unfinished)-1], late, closed)
	if v := verify.Session(sid, unfinished); len(v) != 1 || v[0].Seq != late.Seq {
		t.Errorf("verify with a call started after the gap left open: %v, want it reported", v)
	}
}

// Waited-for appends lost during one outage, with attempts to store the
// gap in between, are recorded as one RecordingGap counting them all.
func TestLostAppendsShareOneGap(t *testing.T) {
	st := newDownStore()
	j, err := journal.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	st.setDown(true)
	for i := range 3 {
		if _, err := j.Append(ctx, "s", ev(i)); !errors.Is(err, errDown) {
			t.Fatalf("Append %d while the store is down: %v", i, err)
		}
		before := st.numFailed()
		if err := j.Flush(ctx); err != nil { // tries to store the gap
			t.Fatal(err)
		}
		if st.numFailed() == before {
			t.Fatalf("Flush %d did not try the store", i)
		}
	}
	st.setDown(false)
	if _, err := j.Append(ctx, "s", ev(3)); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(storedStory(t, st)), "[gap:3 s3]"; got != want {
		t.Fatalf("stored %s, want %s", got, want)
	}
}
