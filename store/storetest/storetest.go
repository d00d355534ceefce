package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
)

// Features describes what a backend offers beyond [store.Store].
type Features struct {
	// Snapshots: the stores newStore returns implement [store.Snapshotter].
	Snapshots bool

	// Reopen, when set, opens again the storage behind s, which the suite
	// has already closed. It enables the Reopen case: everything appended
	// (and every snapshot saved) before Close is there afterwards.
	Reopen func(t *testing.T, s store.Store) store.Store

	// Durability, when set, kills a writer that runs [AppendUntilDone]
	// while it appends (normally a child process, see [KillAfterAcks]) and
	// reopens the storage. It enables the Durability case, which checks the
	// reopened store against the appends that were acknowledged.
	Durability func(t *testing.T) Crash
}

// Crash is what a [Features.Durability] hook reports.
type Crash struct {
	// Store is the storage reopened after the writer was killed. The suite
	// closes it.
	Store store.Store
	// Acked holds every envelope, as Append returned it, of every Append
	// that returned nil before the writer died.
	Acked []events.Envelope
}

// IntegrityChecker is implemented by stores that can check their own files.
// The Durability case calls it on the reopened store.
type IntegrityChecker interface {
	IntegrityCheck(ctx context.Context) error
}

// Run runs every conformance case as a subtest of t. newStore returns a new,
// empty store for each case; Run closes it when the case ends (and the cases
// that close it themselves rely on Close being idempotent). Cases run one
// after another.
func Run(t *testing.T, f Features, newStore func(t *testing.T) store.Store) {
	t.Helper()
	open := func(t *testing.T) store.Store {
		t.Helper()
		s := newStore(t)
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return s
	}
	cases := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"VersionConflict", testVersionConflict},
		{"InvalidAppend", testInvalidAppend},
		{"GlobalOrderMonotonic", testGlobalOrderMonotonic},
		{"ConcurrentAppend", testConcurrentAppend},
		{"ReadAfterCancel", testReadAfterCancel},
		{"ReadFrom", testReadFrom},
		{"Streams", testStreams},
		{"DataRoundTrip", testDataRoundTrip},
		{"Closed", func(t *testing.T, s store.Store) { testClosed(t, s, f.Snapshots) }},
		{"ConcurrentClose", testConcurrentClose},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open(t)) })
	}
	t.Run("ReadType", func(t *testing.T) {
		s := open(t)
		tr, ok := s.(store.TypeReader)
		if !ok {
			t.Skip("backend does not read by type (it is not a store.TypeReader)")
		}
		testReadType(t, s, tr)
	})
	t.Run("AppendBatch", func(t *testing.T) {
		s := open(t)
		ba, ok := s.(store.BatchAppender)
		if !ok {
			t.Skip("backend does not append batches (it is not a store.BatchAppender)")
		}
		testAppendBatch(t, s, ba)
	})
	t.Run("Chain", func(t *testing.T) {
		s := open(t)
		cr, ok := s.(store.ChainReader)
		if !ok {
			t.Skip("backend keeps no hash chain (it is not a store.ChainReader)")
		}
		testChain(t, s, cr)
	})
	t.Run("Snapshots", func(t *testing.T) {
		if !f.Snapshots {
			t.Skip("backend does not offer snapshots (Features.Snapshots is false)")
		}
		testSnapshots(t, open(t))
	})
	t.Run("Reopen", func(t *testing.T) {
		if f.Reopen == nil {
			t.Skip("backend is not persistent (Features.Reopen is nil)")
		}
		testReopen(t, open(t), f)
	})
	t.Run("Identity", func(t *testing.T) {
		s := open(t)
		if _, ok := s.(store.Identifier); !ok {
			t.Skip("backend has no identity (it is not a store.Identifier)")
		}
		testIdentity(t, s, open(t), f)
	})
	t.Run("Durability", func(t *testing.T) {
		if f.Durability == nil {
			t.Skip("backend has no durability test (Features.Durability is nil)")
		}
		testDurability(t, f.Durability)
	})
}

// base is the time of the first event the cases create; it carries
// nanoseconds so that truncation shows.
var base = time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.UTC)

// env returns an envelope for the cases: Type typ, data {"n":n}, and a time
// n milliseconds after base.
func env(typ string, n int) events.Envelope {
	return events.Envelope{
		Type:      typ,
		Schema:    1,
		Time:      base.Add(time.Duration(n) * time.Millisecond),
		SessionID: "session",
		Data:      json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)),
	}
}

func envs(typ string, from, count int) []events.Envelope {
	out := make([]events.Envelope, count)
	for i := range out {
		out[i] = env(typ, from+i)
	}
	return out
}

// testCtx returns a context that ends with the test, so a store that hangs
// fails the case instead of the whole run.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func mustAppend(t *testing.T, s store.Store, stream string, expected int64, es []events.Envelope) []events.Envelope {
	t.Helper()
	got, err := s.Append(testCtx(t), stream, expected, es)
	if err != nil {
		t.Fatalf("Append(%q, %d, %d events): %v", stream, expected, len(es), err)
	}
	if len(got) != len(es) {
		t.Fatalf("Append(%q) returned %d envelopes, want %d", stream, len(got), len(es))
	}
	return got
}

func collect[T any](t *testing.T, what string, seq func(yield func(T, error) bool)) []T {
	t.Helper()
	var out []T
	for v, err := range seq {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		out = append(out, v)
	}
	return out
}

func readAll(t *testing.T, s store.Store, from uint64) []events.Envelope {
	t.Helper()
	return collect(t, fmt.Sprintf("ReadAll(%d)", from), s.ReadAll(testCtx(t), from))
}

func readStream(t *testing.T, s store.Store, stream string, from uint64) []events.Envelope {
	t.Helper()
	return collect(t, fmt.Sprintf("ReadStream(%q, %d)", stream, from), s.ReadStream(testCtx(t), stream, from))
}

func lastSeq(t *testing.T, s store.Store) uint64 {
	t.Helper()
	n, err := s.LastSeq(testCtx(t))
	if err != nil {
		t.Fatalf("LastSeq: %v", err)
	}
	return n
}

// diffEnvelope describes how got differs from want, or returns "".
// Times compare with Equal, data byte for byte.
func diffEnvelope(want, got events.Envelope) string {
	var d []string
	add := func(field string, w, g any) { d = append(d, fmt.Sprintf("%s: want %v, got %v", field, w, g)) }
	if want.Seq != got.Seq {
		add("Seq", want.Seq, got.Seq)
	}
	if want.Stream != got.Stream {
		add("Stream", want.Stream, got.Stream)
	}
	if want.Version != got.Version {
		add("Version", want.Version, got.Version)
	}
	if want.Type != got.Type {
		add("Type", want.Type, got.Type)
	}
	if want.Schema != got.Schema {
		add("Schema", want.Schema, got.Schema)
	}
	if !want.Time.Equal(got.Time) {
		add("Time", want.Time.Format(time.RFC3339Nano), got.Time.Format(time.RFC3339Nano))
	}
	if want.SessionID != got.SessionID {
		add("SessionID", want.SessionID, got.SessionID)
	}
	if want.CorrelationID != got.CorrelationID {
		add("CorrelationID", want.CorrelationID, got.CorrelationID)
	}
	if want.Host != got.Host {
		add("Host", want.Host, got.Host)
	}
	if !bytes.Equal(want.Data, got.Data) {
		add("Data", fmt.Sprintf("%q", want.Data), fmt.Sprintf("%q", got.Data))
	}
	if len(d) == 0 {
		return ""
	}
	return fmt.Sprint(d)
}

func equalEnvelopes(t *testing.T, what string, want, got []events.Envelope) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: got %d envelopes, want %d", what, len(got), len(want))
	}
	for i := range want {
		if d := diffEnvelope(want[i], got[i]); d != "" {
			t.Fatalf("%s: envelope %d differs: %s", what, i, d)
		}
	}
}

func seqs(es []events.Envelope) []uint64 {
	out := make([]uint64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

func versions(es []events.Envelope) []uint64 {
	out := make([]uint64, len(es))
	for i, e := range es {
		out[i] = e.Version
	}
	return out
}

// oneTo returns [1, 2, …, n].
func oneTo(n int) []uint64 { return span(1, n) }

// span returns [from, from+1, …, to].
func span(from, to int) []uint64 {
	out := []uint64{}
	for i := from; i <= to; i++ {
		out = append(out, uint64(i))
	}
	return out
}

func equalInts(t *testing.T, what string, want, got []uint64) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
}

func testVersionConflict(t *testing.T, s store.Store) {
	ctx := testCtx(t)
	got := mustAppend(t, s, "s", store.NoStream, envs("A", 0, 2))
	equalInts(t, "versions of first append", []uint64{1, 2}, versions(got))
	equalInts(t, "seqs of first append", []uint64{1, 2}, seqs(got))

	for _, expected := range []int64{store.NoStream, 1, 3, 100} {
		_, err := s.Append(ctx, "s", expected, envs("B", 10, 2))
		if !errors.Is(err, store.ErrVersionConflict) {
			t.Fatalf("Append(s, expected %d) at version 2: err = %v, want ErrVersionConflict", expected, err)
		}
	}
	_, err := s.Append(ctx, "missing", 3, envs("B", 10, 1))
	if !errors.Is(err, store.ErrVersionConflict) {
		t.Fatalf("Append(missing, expected 3): err = %v, want ErrVersionConflict", err)
	}
	if _, err := s.Append(ctx, "s", 1, nil); !errors.Is(err, store.ErrVersionConflict) {
		t.Fatalf("Append(s, expected 1, no events): err = %v, want ErrVersionConflict", err)
	}
	if got, err := s.Append(ctx, "s", 2, nil); err != nil || len(got) != 0 {
		t.Fatalf("Append(s, expected 2, no events) = %d envelopes, %v; want none, nil", len(got), err)
	}
	if n := lastSeq(t, s); n != 2 {
		t.Fatalf("LastSeq after rejected appends = %d, want 2", n)
	}
	equalInts(t, "ReadAll after rejected appends", []uint64{1, 2}, seqs(readAll(t, s, 0)))
	if es := readStream(t, s, "missing", 0); len(es) != 0 {
		t.Fatalf("stream created by a rejected append: %d events", len(es))
	}
	if infos := collect(t, "Streams", s.Streams(ctx)); len(infos) != 1 {
		t.Fatalf("Streams after rejected appends: %+v, want only s", infos)
	}

	got = mustAppend(t, s, "s", 2, envs("C", 20, 1))
	if got[0].Version != 3 || got[0].Seq != 3 {
		t.Fatalf("append at expected 2: version %d seq %d, want 3 and 3", got[0].Version, got[0].Seq)
	}
	got = mustAppend(t, s, "s", store.AnyVersion, envs("D", 30, 2))
	equalInts(t, "versions of AnyVersion append", []uint64{4, 5}, versions(got))
	got = mustAppend(t, s, "t", store.AnyVersion, envs("E", 40, 1))
	if got[0].Version != 1 || got[0].Seq != 6 || got[0].Stream != "t" {
		t.Fatalf("AnyVersion on a new stream: %+v, want stream t version 1 seq 6", got[0])
	}
	got = mustAppend(t, s, "u", store.NoStream, envs("F", 50, 1))
	if got[0].Version != 1 || got[0].Seq != 7 {
		t.Fatalf("NoStream on a new stream: version %d seq %d, want 1 and 7", got[0].Version, got[0].Seq)
	}
	equalInts(t, "stream s versions", oneTo(5), versions(readStream(t, s, "s", 0)))
}

func testInvalidAppend(t *testing.T, s store.Store) {
	ctx := testCtx(t)
	mustAppend(t, s, "s", store.NoStream, envs("A", 0, 1))
	zeroTime := env("Z", 1)
	zeroTime.Time = time.Time{}
	bad := []struct {
		name     string
		stream   string
		expected int64
		es       []events.Envelope
	}{
		{"empty stream name", "", store.AnyVersion, envs("A", 1, 1)},
		{"expected below AnyVersion", "s", -2, envs("A", 1, 1)},
		{"zero time in the second event", "s", 1, []events.Envelope{env("A", 1), zeroTime}},
	}
	for _, b := range bad {
		if _, err := s.Append(ctx, b.stream, b.expected, b.es); err == nil {
			t.Errorf("%s: Append returned nil error", b.name)
		}
	}
	if n := lastSeq(t, s); n != 1 {
		t.Fatalf("LastSeq after invalid appends = %d, want 1", n)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Append(cctx, "s", store.AnyVersion, envs("A", 2, 1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with a cancelled context: err = %v, want context.Canceled", err)
	}
	if n := lastSeq(t, s); n != 1 {
		t.Fatalf("LastSeq after a cancelled append = %d, want 1", n)
	}
}

func testGlobalOrderMonotonic(t *testing.T, s store.Store) {
	if n := lastSeq(t, s); n != 0 {
		t.Fatalf("LastSeq of an empty store = %d, want 0", n)
	}
	if es := readAll(t, s, 0); len(es) != 0 {
		t.Fatalf("ReadAll of an empty store yielded %d events", len(es))
	}
	var appended []events.Envelope
	perStream := map[string][]events.Envelope{}
	streams := []string{"a", "b", "c"}
	n := 0
	for i := range 12 {
		stream := streams[i%len(streams)]
		size := 1 + i%4
		got := mustAppend(t, s, stream, int64(len(perStream[stream])), envs("T", n, size))
		n += size
		if len(appended) > 0 && got[0].Seq <= appended[len(appended)-1].Seq {
			t.Fatalf("append %d got seq %d, not after the previous append's %d", i, got[0].Seq, appended[len(appended)-1].Seq)
		}
		appended = append(appended, got...)
		perStream[stream] = append(perStream[stream], got...)
	}

	all := readAll(t, s, 0)
	equalInts(t, "ReadAll seqs", oneTo(n), seqs(all))
	equalEnvelopes(t, "ReadAll against Append's results", appended, all)
	for _, stream := range streams {
		got := readStream(t, s, stream, 0)
		equalInts(t, "ReadStream("+stream+") versions", oneTo(len(perStream[stream])), versions(got))
		equalEnvelopes(t, "ReadStream("+stream+") against Append's results", perStream[stream], got)
		for i := 1; i < len(got); i++ {
			if got[i].Seq <= got[i-1].Seq {
				t.Fatalf("stream %s: seq %d after %d", stream, got[i].Seq, got[i-1].Seq)
			}
		}
	}
	if got := lastSeq(t, s); got != uint64(n) {
		t.Fatalf("LastSeq = %d, want %d", got, n)
	}
}

// batchData is the payload of the events the concurrency and durability
// cases append: event I of the N events of one Append call, Batch.
type batchData struct {
	Batch string `json:"batch"`
	I     int    `json:"i"`
	N     int    `json:"n"`
}

func batch(id string, size int, at time.Time) []events.Envelope {
	out := make([]events.Envelope, size)
	for i := range out {
		data, _ := json.Marshal(batchData{Batch: id, I: i, N: size})
		out[i] = events.Envelope{Type: "Batched", Schema: 1, Time: at, SessionID: id, Data: data}
	}
	return out
}

// checkLog checks that all is the whole log of a store in which every event
// came from batch: sequences 1..len(all), each stream's versions 1..n, and
// each Append's events stored together and complete, in order. It returns
// the events grouped by batch id.
func checkLog(t *testing.T, all []events.Envelope) map[string][]events.Envelope {
	t.Helper()
	equalInts(t, "ReadAll seqs", oneTo(len(all)), seqs(all))
	next := map[string]uint64{}
	batches := map[string][]events.Envelope{}
	for _, e := range all {
		next[e.Stream]++
		if e.Version != next[e.Stream] {
			t.Fatalf("seq %d: stream %s version %d, want %d", e.Seq, e.Stream, e.Version, next[e.Stream])
		}
		var d batchData
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatalf("seq %d: data %q: %v", e.Seq, e.Data, err)
		}
		b := batches[d.Batch]
		if d.I != len(b) {
			t.Fatalf("seq %d: event %d of batch %s follows %d of its events", e.Seq, d.I, d.Batch, len(b))
		}
		if len(b) > 0 && (b[len(b)-1].Seq != e.Seq-1 || b[len(b)-1].Stream != e.Stream) {
			t.Fatalf("seq %d: batch %s interleaved with other appends", e.Seq, d.Batch)
		}
		batches[d.Batch] = append(b, e)
	}
	for id, b := range batches {
		var d batchData
		_ = json.Unmarshal(b[0].Data, &d)
		if len(b) != d.N {
			t.Fatalf("batch %s: %d of %d events stored", id, len(b), d.N)
		}
	}
	return batches
}

func testConcurrentAppend(t *testing.T, s store.Store) {
	ctx := testCtx(t)
	const (
		writers = 6
		rounds  = 10
	)
	var (
		mu       sync.Mutex
		accepted = map[string][]events.Envelope{} // by batch id
	)
	record := func(id string, got []events.Envelope) {
		mu.Lock()
		defer mu.Unlock()
		accepted[id] = got
	}
	// currentVersion finds the version of stream at or after from.
	currentVersion := func(stream string, from uint64) (uint64, error) {
		v := from
		for e, err := range s.ReadStream(ctx, stream, from+1) {
			if err != nil {
				return 0, err
			}
			v = e.Version
		}
		return v, nil
	}

	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			own := fmt.Sprintf("own-%d", g)
			var ownVersion, contended uint64
			for r := range rounds {
				size := 1 + (g+r)%3
				// Its own stream, with exact expected versions: never conflicts.
				id := fmt.Sprintf("own-%d-%d", g, r)
				got, err := s.Append(ctx, own, int64(ownVersion), batch(id, size, base))
				if err != nil {
					t.Errorf("writer %d: append to %s at %d: %v", g, own, ownVersion, err)
					return
				}
				ownVersion += uint64(size)
				record(id, got)

				// A stream everyone appends to without a version check.
				id = fmt.Sprintf("any-%d-%d", g, r)
				got, err = s.Append(ctx, "shared-any", store.AnyVersion, batch(id, size, base))
				if err != nil {
					t.Errorf("writer %d: append to shared-any: %v", g, err)
					return
				}
				record(id, got)

				// A stream everyone appends to with optimistic concurrency:
				// retry on conflict after catching up.
				id = fmt.Sprintf("occ-%d-%d", g, r)
				for {
					got, err = s.Append(ctx, "shared-occ", int64(contended), batch(id, size, base))
					if err == nil {
						contended = got[len(got)-1].Version
						record(id, got)
						break
					}
					if !errors.Is(err, store.ErrVersionConflict) {
						t.Errorf("writer %d: append to shared-occ at %d: %v", g, contended, err)
						return
					}
					if contended, err = currentVersion("shared-occ", contended); err != nil {
						t.Errorf("writer %d: read shared-occ: %v", g, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	all := readAll(t, s, 0)
	batches := checkLog(t, all)
	if len(batches) != len(accepted) {
		t.Fatalf("%d batches stored, %d accepted", len(batches), len(accepted))
	}
	for id, want := range accepted {
		equalEnvelopes(t, "batch "+id+" against Append's result", want, batches[id])
	}
	if n := lastSeq(t, s); n != uint64(len(all)) {
		t.Fatalf("LastSeq = %d, want %d", n, len(all))
	}
}

// readsFailWith checks that every read of s under ctx yields exactly one
// item: an error wrapping want.
func readsFailWith(t *testing.T, s store.Store, ctx context.Context, want error, when string) {
	t.Helper()
	reads := map[string]func(yield func(any, error) bool){
		"ReadAll":    anySeq(s.ReadAll(ctx, 0)),
		"ReadStream": anySeq(s.ReadStream(ctx, "a", 0)),
		"Streams":    anySeq(s.Streams(ctx)),
	}
	for name, seq := range reads {
		n := 0
		var last error
		for _, err := range seq {
			n++
			last = err
		}
		if n != 1 || !errors.Is(last, want) {
			t.Errorf("%s %s: %d items, last error %v; want one item with %v", name, when, n, last, want)
		}
	}
}

func testReadAfterCancel(t *testing.T, s store.Store) {
	ctx := testCtx(t)
	mustAppend(t, s, "a", store.NoStream, envs("A", 0, 10))

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	readsFailWith(t, s, cancelled, context.Canceled, "with a cancelled context")
	if _, err := s.LastSeq(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("LastSeq with a cancelled context: %v, want context.Canceled", err)
	}

	// Cancelled while iterating: the next item is the error, then it stops.
	mid, cancelMid := context.WithCancel(ctx)
	defer cancelMid()
	var got int
	var errs []error
	for e, err := range s.ReadAll(mid, 0) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(errs) > 0 {
			t.Fatalf("event seq %d yielded after error %v", e.Seq, errs[0])
		}
		got++
		cancelMid()
	}
	if got != 1 || len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
		t.Fatalf("ReadAll cancelled after the first event: %d events, errors %v; want 1 event then context.Canceled", got, errs)
	}

	// Breaking early releases what the iteration held: many abandoned
	// iterations, then writes and full reads still work.
	for range 32 {
		for range s.ReadAll(ctx, 0) {
			break
		}
		for range s.ReadStream(ctx, "a", 0) {
			break
		}
		for range s.Streams(ctx) {
			break
		}
	}
	mustAppend(t, s, "a", 10, envs("A", 10, 1))
	equalInts(t, "ReadAll after early breaks", oneTo(11), seqs(readAll(t, s, 0)))
	equalInts(t, "ReadStream after early breaks", oneTo(11), versions(readStream(t, s, "a", 0)))

	// Writes from inside a loop body do not deadlock.
	n := 0
	for _, err := range s.ReadAll(ctx, 0) {
		if err != nil {
			t.Fatalf("ReadAll: %v", err)
		}
		if n++; n == 1 {
			mustAppend(t, s, "b", store.NoStream, envs("B", 20, 1))
		}
	}
	if got := lastSeq(t, s); got != 12 {
		t.Fatalf("LastSeq after an append inside a read loop = %d, want 12", got)
	}
}

func anySeq[T any](seq func(yield func(T, error) bool)) func(yield func(any, error) bool) {
	return func(yield func(any, error) bool) {
		for v, err := range seq {
			if !yield(v, err) {
				return
			}
		}
	}
}

// testReadType interleaves two types over more than one page of a paged
// backend and reads each by type between bounds.
func testReadType(t *testing.T, s store.Store, tr store.TypeReader) {
	const n = 1500
	for i := range n {
		typ := "B"
		if i%3 == 0 {
			typ = "A"
		}
		mustAppend(t, s, "s", int64(i), envs(typ, i, 1))
	}
	wantA := func(from, to uint64) []uint64 {
		var out []uint64
		for seq := max(from, 1); seq <= min(to, n); seq++ {
			if (seq-1)%3 == 0 {
				out = append(out, seq)
			}
		}
		return out
	}
	for _, c := range []struct{ from, to uint64 }{
		{0, math.MaxUint64}, {1, n}, {2, n}, {700, 1300}, {1000, 1000}, {1, 1}, {n + 1, math.MaxUint64}, {5, 4},
	} {
		got := collect(t, "ReadType", tr.ReadType(testCtx(t), "A", c.from, c.to))
		for _, e := range got {
			if e.Type != "A" {
				t.Fatalf("ReadType(A, %d, %d) yielded a %s", c.from, c.to, e.Type)
			}
		}
		equalInts(t, fmt.Sprintf("ReadType(A, %d, %d)", c.from, c.to), wantA(c.from, c.to), seqs(got))
	}
	if got := collect(t, "ReadType", tr.ReadType(testCtx(t), "missing", 0, math.MaxUint64)); len(got) != 0 {
		t.Errorf("ReadType(missing) yielded %d events", len(got))
	}
}

func testReadFrom(t *testing.T, s store.Store) {
	for i := range 5 {
		mustAppend(t, s, "a", int64(i), envs("A", 2*i, 1))
		mustAppend(t, s, "b", int64(i), envs("B", 2*i+1, 1))
	}
	for _, c := range []struct {
		from uint64
		want []uint64
	}{
		{0, oneTo(10)},
		{1, oneTo(10)},
		{4, span(4, 10)},
		{10, []uint64{10}},
		{11, nil},
		{math.MaxInt64, nil},
		{math.MaxUint64, nil},
	} {
		equalInts(t, fmt.Sprintf("ReadAll(%d)", c.from), c.want, seqs(readAll(t, s, c.from)))
	}
	for _, c := range []struct {
		stream string
		from   uint64
		want   []uint64
	}{
		{"a", 0, oneTo(5)},
		{"a", 1, oneTo(5)},
		{"a", 3, span(3, 5)},
		{"a", 5, []uint64{5}},
		{"a", 6, nil},
		{"a", math.MaxUint64, nil},
		{"b", 2, span(2, 5)},
		{"missing", 0, nil},
	} {
		got := readStream(t, s, c.stream, c.from)
		equalInts(t, fmt.Sprintf("ReadStream(%q, %d) versions", c.stream, c.from), c.want, versions(got))
		for _, e := range got {
			if e.Stream != c.stream {
				t.Fatalf("ReadStream(%q) yielded an event of stream %q", c.stream, e.Stream)
			}
		}
	}
	b := readStream(t, s, "b", 4)
	equalInts(t, "ReadStream(b, 4) seqs", []uint64{8, 10}, seqs(b))
}

func testStreams(t *testing.T, s store.Store) {
	ctx := testCtx(t)
	if infos := collect(t, "Streams", s.Streams(ctx)); len(infos) != 0 {
		t.Fatalf("Streams of an empty store: %+v", infos)
	}
	b1 := mustAppend(t, s, "b", store.NoStream, envs("B", 0, 2))    // seq 1-2
	a1 := mustAppend(t, s, "a", store.NoStream, envs("A", 10, 3))   // seq 3-5
	b2 := mustAppend(t, s, "b", 2, envs("B", 20, 1))                // seq 6
	c1 := mustAppend(t, s, "c", store.NoStream, envs("C", 30, 1))   // seq 7
	a2 := mustAppend(t, s, "a", store.AnyVersion, envs("A", 40, 2)) // seq 8-9

	want := []store.StreamInfo{
		{Stream: "b", Version: 3, FirstSeq: 1, LastSeq: 6, Created: b1[0].Time, Updated: b2[0].Time},
		{Stream: "a", Version: 5, FirstSeq: 3, LastSeq: 9, Created: a1[0].Time, Updated: a2[1].Time},
		{Stream: "c", Version: 1, FirstSeq: 7, LastSeq: 7, Created: c1[0].Time, Updated: c1[0].Time},
	}
	got := collect(t, "Streams", s.Streams(ctx))
	if len(got) != len(want) {
		t.Fatalf("Streams: got %+v, want %+v", got, want)
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.Stream != g.Stream || w.Version != g.Version || w.FirstSeq != g.FirstSeq || w.LastSeq != g.LastSeq ||
			!w.Created.Equal(g.Created) || !w.Updated.Equal(g.Updated) {
			t.Fatalf("Streams[%d]:\n got %+v\nwant %+v", i, g, w)
		}
		if g.Created.Location() != time.UTC || g.Updated.Location() != time.UTC {
			t.Fatalf("Streams[%d]: times not in UTC: %v, %v", i, g.Created, g.Updated)
		}
	}
}

func testDataRoundTrip(t *testing.T, s store.Store) {
	east := time.FixedZone("UTC+5:30", 5*3600+1800)
	data := []byte("{\"a\": [1, 2],\t\"é\":\"\\u00e9\", \"n\":null}\n")
	in := []events.Envelope{
		{
			Type: "Some.Type", Schema: 7, Time: time.Date(2024, 2, 29, 23, 59, 59, 123456789, east),
			SessionID: "session-x", CorrelationID: "corr-1", Host: "h-0123456789ab", Data: data,
		},
		{
			Type: "Other", Schema: 1, Time: time.Date(1969, 7, 20, 20, 17, 40, 1, time.UTC),
			SessionID: "", CorrelationID: "", Data: []byte{0xff, 0x00, 0xfe, '"'},
		},
		{
			Type: "Now", Schema: 2, Time: time.Now(), SessionID: "session-x", Data: json.RawMessage(`{}`),
		},
	}
	keep := make([]events.Envelope, len(in))
	for i, e := range in {
		keep[i] = e.Clone()
	}
	got := mustAppend(t, s, "stream-y", store.NoStream, in)
	// Neither the caller's slices nor the returned ones are the store's.
	in[0].Data[1] = 'X'
	got[0].Data[1] = 'Y'

	want := make([]events.Envelope, len(keep))
	for i, e := range keep {
		e.Seq, e.Version, e.Stream = uint64(i+1), uint64(i+1), "stream-y"
		want[i] = e
	}
	for name, read := range map[string][]events.Envelope{
		"ReadAll":    readAll(t, s, 0),
		"ReadStream": readStream(t, s, "stream-y", 0),
	} {
		equalEnvelopes(t, name, want, read)
		for i, e := range read {
			if e.Time.Location() != time.UTC {
				t.Errorf("%s: event %d: time %v not in UTC", name, i, e.Time)
			}
			if e.Time.Nanosecond() != want[i].Time.Nanosecond() {
				t.Errorf("%s: event %d: nanoseconds %d, want %d", name, i, e.Time.Nanosecond(), want[i].Time.Nanosecond())
			}
		}
	}
}

func testClosed(t *testing.T, s store.Store, snapshots bool) {
	mustAppend(t, s, "a", store.NoStream, envs("A", 0, 2))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v, want nil", err)
	}
	ctx := testCtx(t)
	if _, err := s.Append(ctx, "a", store.AnyVersion, envs("A", 2, 1)); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Append after Close: %v, want ErrClosed", err)
	}
	if _, err := s.LastSeq(ctx); !errors.Is(err, store.ErrClosed) {
		t.Errorf("LastSeq after Close: %v, want ErrClosed", err)
	}
	readsFailWith(t, s, ctx, store.ErrClosed, "after Close")
	if !snapshots {
		return
	}
	snap := s.(store.Snapshotter)
	if err := snap.SaveSnapshot(ctx, "p", 1, []byte("x")); !errors.Is(err, store.ErrClosed) {
		t.Errorf("SaveSnapshot after Close: %v, want ErrClosed", err)
	}
	if _, _, err := snap.LoadSnapshot(ctx, "p"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("LoadSnapshot after Close: %v, want ErrClosed", err)
	}
}

func testConcurrentClose(t *testing.T, s store.Store) {
	ctx := testCtx(t)
	mustAppend(t, s, "a", store.NoStream, envs("A", 0, 1))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			// Appends and reads race with Close: each either works or
			// reports ErrClosed, never anything else.
			_, err := s.Append(ctx, "a", store.AnyVersion, envs("A", g+1, 1))
			if err != nil && !errors.Is(err, store.ErrClosed) {
				t.Errorf("Append racing Close: %v", err)
			}
			for _, err := range s.ReadAll(ctx, 0) {
				if err != nil && !errors.Is(err, store.ErrClosed) {
					t.Errorf("ReadAll racing Close: %v", err)
				}
			}
		})
		wg.Go(func() {
			if err := s.Close(); err != nil {
				t.Errorf("concurrent Close: %v", err)
			}
		})
	}
	wg.Wait()
	if _, err := s.LastSeq(ctx); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("LastSeq after concurrent Close: %v, want ErrClosed", err)
	}
}

func testSnapshots(t *testing.T, s store.Store) {
	ctx := testCtx(t)
	snap, ok := s.(store.Snapshotter)
	if !ok {
		t.Fatalf("%T does not implement store.Snapshotter but Features.Snapshots is set", s)
	}
	if _, _, err := snap.LoadSnapshot(ctx, "p"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LoadSnapshot of a missing checkpoint: %v, want ErrNotFound", err)
	}
	load := func(name string, wantSeq uint64, wantData string) {
		t.Helper()
		seq, data, err := snap.LoadSnapshot(ctx, name)
		if err != nil {
			t.Fatalf("LoadSnapshot(%q): %v", name, err)
		}
		if seq != wantSeq || string(data) != wantData {
			t.Fatalf("LoadSnapshot(%q) = %d, %q; want %d, %q", name, seq, data, wantSeq, wantData)
		}
	}
	save := func(name string, seq uint64, data string) {
		t.Helper()
		if err := snap.SaveSnapshot(ctx, name, seq, []byte(data)); err != nil {
			t.Fatalf("SaveSnapshot(%q, %d): %v", name, seq, err)
		}
	}
	buf := []byte("five")
	if err := snap.SaveSnapshot(ctx, "p", 5, buf); err != nil {
		t.Fatalf("SaveSnapshot: %v", err)
	}
	buf[0] = 'X' // the store keeps its own copy
	load("p", 5, "five")
	save("p", 3, "three") // older: ignored
	load("p", 5, "five")
	save("p", 5, "five again") // same seq: replaces
	load("p", 5, "five again")
	save("p", 9, "nine")
	load("p", 9, "nine")
	save("q", 1, "")
	load("q", 1, "")
	load("p", 9, "nine")
	_, data, _ := snap.LoadSnapshot(ctx, "p")
	data[0] = 'X' // the caller's copy
	load("p", 9, "nine")

	// Racing saves: the highest seq wins whatever the order.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if err := snap.SaveSnapshot(ctx, "r", uint64(10+i), fmt.Appendf(nil, "r%d", 10+i)); err != nil {
				t.Errorf("SaveSnapshot(r, %d): %v", 10+i, err)
			}
		})
	}
	wg.Wait()
	load("r", 17, "r17")
}

func testReopen(t *testing.T, s store.Store, f Features) {
	ctx := testCtx(t)
	want := append(mustAppend(t, s, "a", store.NoStream, envs("A", 0, 3)), mustAppend(t, s, "b", store.NoStream, envs("B", 3, 2))...)
	if f.Snapshots {
		if err := s.(store.Snapshotter).SaveSnapshot(ctx, "p", 4, []byte("four")); err != nil {
			t.Fatalf("SaveSnapshot: %v", err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	r := f.Reopen(t, s)
	t.Cleanup(func() { r.Close() })
	equalEnvelopes(t, "ReadAll after reopening", want, readAll(t, r, 0))
	if infos := collect(t, "Streams", r.Streams(ctx)); len(infos) != 2 || infos[0].Version != 3 || infos[1].Version != 2 {
		t.Fatalf("Streams after reopening: %+v", infos)
	}
	got := mustAppend(t, r, "a", 3, envs("A", 5, 1))
	if got[0].Seq != 6 || got[0].Version != 4 {
		t.Fatalf("append after reopening: seq %d version %d, want 6 and 4", got[0].Seq, got[0].Version)
	}
	if f.Snapshots {
		seq, data, err := r.(store.Snapshotter).LoadSnapshot(ctx, "p")
		if err != nil || seq != 4 || string(data) != "four" {
			t.Fatalf("LoadSnapshot after reopening = %d, %q, %v; want 4, \"four\", nil", seq, data, err)
		}
	}
}

// testIdentity checks that each store has an identity of its own (a and b
// are two stores newStore made) and keeps it when it is opened again.
func testIdentity(t *testing.T, a, b store.Store, f Features) {
	id := store.ID(a)
	if len(id) < 16 || strings.Trim(id, "0123456789abcdef") != "" {
		t.Fatalf("StoreID %q, want at least 16 lower-case hex digits", id)
	}
	if again := store.ID(a); again != id {
		t.Fatalf("StoreID changed from %q to %q", id, again)
	}
	if other := store.ID(b); other == id {
		t.Fatalf("two stores share the identity %q", id)
	}
	if f.Reopen == nil {
		return
	}
	mustAppend(t, a, "a", store.NoStream, envs("A", 0, 1))
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	r := f.Reopen(t, a)
	t.Cleanup(func() { r.Close() })
	if got := store.ID(r); got != id {
		t.Fatalf("StoreID after reopening %q, want %q", got, id)
	}
}

func testDurability(t *testing.T, hook func(t *testing.T) Crash) {
	crash := hook(t)
	s := crash.Store
	t.Cleanup(func() { s.Close() })
	ctx := testCtx(t)
	if len(crash.Acked) == 0 {
		t.Fatal("the crashed writer acknowledged no appends")
	}
	if c, ok := s.(IntegrityChecker); ok {
		if err := c.IntegrityCheck(ctx); err != nil {
			t.Fatalf("integrity check after the crash: %v", err)
		}
	}
	all := readAll(t, s, 0)
	checkLog(t, all)
	for _, want := range crash.Acked {
		if want.Seq == 0 || want.Seq > uint64(len(all)) {
			t.Fatalf("acknowledged event seq %d lost: the store holds %d events", want.Seq, len(all))
		}
		if d := diffEnvelope(want, all[want.Seq-1]); d != "" {
			t.Fatalf("acknowledged event seq %d differs from what is stored: %s", want.Seq, d)
		}
	}
	if n := lastSeq(t, s); n != uint64(len(all)) {
		t.Fatalf("LastSeq = %d, want %d", n, len(all))
	}
	t.Logf("%d events acknowledged before the kill, %d stored", len(crash.Acked), len(all))

	// The store accepts appends after the crash, continuing the sequence.
	last := all[len(all)-1]
	got := mustAppend(t, s, last.Stream, int64(last.Version), batch("after-crash", 1, base))
	if got[0].Seq != last.Seq+1 || got[0].Version != last.Version+1 {
		t.Fatalf("append after the crash: seq %d version %d, want %d and %d", got[0].Seq, got[0].Version, last.Seq+1, last.Version+1)
	}
}

// testAppendBatch checks that a batch applies its requests in order, each
// as Append would: sequences ascend with the request index, a request that
// fails (version conflict, invalid) stores nothing while the others are
// stored, and results are parallel to the requests.
func testAppendBatch(t *testing.T, s store.Store, ba store.BatchAppender) {
	ctx := testCtx(t)
	mustAppend(t, s, "a", store.NoStream, envs("A", 0, 1))
	reqs := []store.AppendRequest{
		{Stream: "a", Expected: 1, Envs: envs("B", 10, 2)},
		{Stream: "b", Expected: store.NoStream, Envs: envs("C", 20, 1)},
		{Stream: "a", Expected: 1, Envs: envs("D", 30, 1)}, // a is at 3 by now
		{Stream: "", Expected: store.AnyVersion, Envs: envs("E", 40, 1)},
		{Stream: "a", Expected: store.AnyVersion, Envs: envs("F", 50, 2)},
	}
	res := ba.AppendBatch(ctx, reqs)
	if len(res) != len(reqs) {
		t.Fatalf("AppendBatch returned %d results for %d requests", len(res), len(reqs))
	}
	for i, want := range []struct {
		seqs []uint64
		err  error
	}{
		{[]uint64{2, 3}, nil},
		{[]uint64{4}, nil},
		{nil, store.ErrVersionConflict},
		{nil, nil},
		{[]uint64{5, 6}, nil},
	} {
		r := res[i]
		switch {
		case i == 3:
			if r.Err == nil {
				t.Errorf("request %d (empty stream name): no error", i)
			}
		case want.err != nil:
			if !errors.Is(r.Err, want.err) {
				t.Errorf("request %d: err = %v, want %v", i, r.Err, want.err)
			}
		case r.Err != nil:
			t.Errorf("request %d: %v", i, r.Err)
		}
		equalInts(t, fmt.Sprintf("seqs of request %d", i), want.seqs, seqs(r.Envs))
	}
	all := readAll(t, s, 0)
	equalInts(t, "ReadAll after the batch", oneTo(6), seqs(all))
	equalInts(t, "stream a versions", oneTo(5), versions(readStream(t, s, "a", 0)))
	var types []string
	for _, e := range all {
		types = append(types, e.Type)
	}
	if got, want := strings.Join(types, ""), "ABBCFF"; got != want {
		t.Errorf("types in order = %s, want %s", got, want)
	}
	if res := ba.AppendBatch(ctx, nil); len(res) != 0 {
		t.Errorf("AppendBatch(nil) = %d results", len(res))
	}
}
