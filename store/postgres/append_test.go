package postgres_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/postgres"
	"github.com/mcplife/mcplife/store/postgres/pgtest"
)

// insertBehindBack inserts an event row the store did not write: stream s,
// the given version and seq.
func insertBehindBack(t *testing.T, raw *pgx.Conn, schema string, seq, version int64) {
	t.Helper()
	_, err := raw.Exec(t.Context(), `INSERT INTO `+pgx.Identifier{schema}.Sanitize()+
		`.events (seq, stream, version, type, schema, time, session_id, data) VALUES ($1, 's', $2, 'T', 1, 0, 's', '')`, seq, version)
	if err != nil {
		t.Fatal(err)
	}
}

// TestConstraintMapsToConflict checks that a unique violation from the
// server, recognised by its code, surfaces as ErrVersionConflict: a row
// written behind the store's back takes the version Append wants.
func TestConstraintMapsToConflict(t *testing.T) {
	cs, schema := pgtest.Schema(t)
	db := mustOpen(t, cs, &postgres.Options{Schema: schema})
	insertBehindBack(t, rawConn(t, cs), schema, 1_000_000, 1)
	_, err := db.Append(t.Context(), "s", store.NoStream, []events.Envelope{envelope(1)})
	if !errors.Is(err, store.ErrVersionConflict) {
		t.Fatalf("Append over a conflicting row: %v, want ErrVersionConflict", err)
	}
}

// TestLargeAppendIsAtomic makes a row in the middle of a large append fail
// and checks that none of it is stored and that the sequence numbers it
// had taken are taken back: the next append gets seq 1.
func TestLargeAppendIsAtomic(t *testing.T) {
	cs, schema := pgtest.Schema(t)
	db := mustOpen(t, cs, &postgres.Options{Schema: schema})
	// Version 300 of stream s is taken behind the store's back.
	insertBehindBack(t, rawConn(t, cs), schema, 1_000_000, 300)
	es := make([]events.Envelope, 600)
	for i := range es {
		es[i] = envelope(i)
	}
	ctx := t.Context()
	if _, err := db.Append(ctx, "s", store.NoStream, es); !errors.Is(err, store.ErrVersionConflict) {
		t.Fatalf("Append over a conflicting row: %v, want ErrVersionConflict", err)
	}
	if n, err := db.LastSeq(ctx); err != nil || n != 0 {
		t.Fatalf("LastSeq after a failed append = %d, %v; want 0", n, err)
	}
	for info, err := range db.Streams(ctx) {
		t.Fatalf("a failed append left a stream: %+v, %v", info, err)
	}
	got := appendN(t, db, "t", 1)
	if got[0].Seq != 1 {
		t.Fatalf("append after a failed one got seq %d, want 1", got[0].Seq)
	}
}

// TestBatchWithFailingRequest: when the server refuses one request of a
// group, the others are still stored, in order, and only that one fails.
func TestBatchWithFailingRequest(t *testing.T) {
	cs, schema := pgtest.Schema(t)
	db := mustOpen(t, cs, &postgres.Options{Schema: schema})
	raw := rawConn(t, cs)
	insertBehindBack(t, raw, schema, 1_000_000, 1)
	one := []events.Envelope{envelope(1)}
	res := db.AppendBatch(t.Context(), []store.AppendRequest{
		{Stream: "a", Expected: store.NoStream, Envs: one},
		{Stream: "s", Expected: store.NoStream, Envs: one}, // refused by the unique index
		{Stream: "b", Expected: store.NoStream, Envs: one},
		{Stream: "a", Expected: 5, Envs: one}, // a version conflict
		{Stream: "a", Expected: 1, Envs: one},
	})
	for i, want := range []struct {
		seq uint64
		err error
	}{{1, nil}, {0, store.ErrVersionConflict}, {2, nil}, {0, store.ErrVersionConflict}, {3, nil}} {
		r := res[i]
		if want.err != nil {
			if !errors.Is(r.Err, want.err) || len(r.Envs) != 0 {
				t.Errorf("request %d: %d envelopes, %v; want %v", i, len(r.Envs), r.Err, want.err)
			}
			continue
		}
		if r.Err != nil || len(r.Envs) != 1 || r.Envs[0].Seq != want.seq {
			t.Errorf("request %d: %+v, %v; want seq %d", i, r.Envs, r.Err, want.seq)
		}
	}
	if _, err := raw.Exec(t.Context(), `DELETE FROM `+pgx.Identifier{schema}.Sanitize()+`.events WHERE seq = 1000000`); err != nil {
		t.Fatal(err)
	}
	checkLogOf(t, db, 3)
}

// TestTextPostgresCannotHold: a NUL byte or invalid UTF-8 in a text field
// fails that append alone, before it reaches the server.
func TestTextPostgresCannotHold(t *testing.T) {
	cs, schema := pgtest.Schema(t)
	db := mustOpen(t, cs, &postgres.Options{Schema: schema})
	ctx := t.Context()
	nul := envelope(1)
	nul.Type = "a\x00b"
	bad := envelope(2)
	bad.Host = "\xff"
	if _, err := db.Append(ctx, "a\x00", store.AnyVersion, []events.Envelope{envelope(0)}); err == nil {
		t.Error("Append to a stream name with a NUL byte succeeded")
	}
	res := db.AppendBatch(ctx, []store.AppendRequest{
		{Stream: "a", Expected: store.AnyVersion, Envs: []events.Envelope{nul}},
		{Stream: "a", Expected: store.AnyVersion, Envs: []events.Envelope{envelope(3)}},
		{Stream: "a", Expected: store.AnyVersion, Envs: []events.Envelope{bad}},
	})
	if res[0].Err == nil || res[1].Err != nil || res[2].Err == nil {
		t.Fatalf("batch results: %v, %v, %v; want error, nil, error", res[0].Err, res[1].Err, res[2].Err)
	}
	// Data is bytea: any bytes go.
	e := envelope(4)
	e.Data = []byte{0, 0xff, 0xfe}
	got, err := db.Append(ctx, "a", store.AnyVersion, []events.Envelope{e})
	if err != nil {
		t.Fatal(err)
	}
	all := readAll(t, db)
	if len(all) != 2 || !bytes.Equal(all[1].Data, e.Data) || all[1].Seq != got[0].Seq {
		t.Fatalf("stored %+v", all)
	}
}

// TestConnectionLoss kills the store's server connections again and again
// while an append is in flight, so that the kill lands before, during or
// after its commit. Appends fail then, but every append that returned nil
// is stored as returned, the log stays gapless, and the store recovers
// (the pool replaces the lost connections).
func TestConnectionLoss(t *testing.T) {
	cs, schema := pgtest.Schema(t)
	u, err := url.Parse(cs)
	if err != nil {
		t.Skipf("connection string is not a URL: %v", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	app := "mcplife-loss-" + hex.EncodeToString(b[:])
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	db := mustOpen(t, u.String(), &postgres.Options{Schema: schema})
	raw := rawConn(t, cs)
	ctx := t.Context()

	type result struct {
		envs []events.Envelope
		err  error
	}
	// The appender announces each append just before it starts it, and
	// reports how it ended.
	starting := make(chan int)
	acks := make(chan result)
	stop := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for i := 0; ; i++ {
			select {
			case starting <- i:
			case <-stop:
				return
			}
			e := envelope(i)
			e.Data = fmt.Appendf(nil, `{"i":%d}`, i)
			got, err := db.Append(ctx, fmt.Sprintf("s%d", i%3), store.AnyVersion, []events.Envelope{e, e})
			select {
			case acks <- result{got, err}:
			case <-stop:
				return
			}
		}
	}()
	const kills = 8
	var (
		acked  []events.Envelope
		failed int
	)
	for k := 0; k < kills; {
		if i := <-starting; i%5 == 4 {
			// The append is on its way; kill the connections under it.
			var n int
			if err := raw.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil {
				t.Fatal(err)
			}
			k++
		}
		if r := <-acks; r.err != nil {
			failed++
		} else {
			acked = append(acked, r.envs...)
		}
	}
	close(stop)
	<-finished
	if failed == 0 {
		t.Fatal("no append failed: the connections were not killed")
	}

	// The store recovers: a few appends may still meet a connection the
	// pool has not yet found dead (one per pooled connection at most).
	var recovered bool
	for range 8 {
		if _, err := db.Append(ctx, "after", store.AnyVersion, []events.Envelope{envelope(0)}); err == nil {
			recovered = true
			break
		}
	}
	if !recovered {
		t.Fatal("no append succeeded after the connections were killed")
	}
	all := readAll(t, db)
	for _, want := range acked {
		if want.Seq == 0 || want.Seq > uint64(len(all)) {
			t.Fatalf("acknowledged seq %d lost: %d events stored", want.Seq, len(all))
		}
		got := all[want.Seq-1]
		if got.Stream != want.Stream || got.Version != want.Version || !bytes.Equal(got.Data, want.Data) || !got.Time.Equal(want.Time) {
			t.Fatalf("acknowledged event %+v stored as %+v", want, got)
		}
	}
	checkLogOf(t, db, len(all))
	t.Logf("%d kills: %d appends failed; %d events acknowledged, %d stored without an acknowledgement", kills, failed, len(acked), len(all)-1-len(acked))
}

// checkLogOf checks that db holds n events with seqs 1..n and passes its
// integrity check.
func checkLogOf(t *testing.T, db *postgres.DB, n int) {
	t.Helper()
	all := readAll(t, db)
	if len(all) != n {
		t.Fatalf("%d events stored, want %d", len(all), n)
	}
	for i, e := range all {
		if e.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestAppendOneAndMany: an append of one event (sent as plain values) and
// of several (sent as arrays) store every field alike.
func TestAppendOneAndMany(t *testing.T) {
	cs, schema := pgtest.Schema(t)
	db := mustOpen(t, cs, &postgres.Options{Schema: schema})
	ctx := t.Context()
	full := events.Envelope{
		Type: "Full", Schema: 3, Time: time.Date(2030, 5, 6, 7, 8, 9, 987654321, time.FixedZone("x", -3600)),
		SessionID: "session-é", CorrelationID: "corr", Host: "host-1", Data: []byte{0, '"', 0xff},
	}
	bare := events.Envelope{Type: "Bare", Schema: 1, Time: time.Unix(0, 1)}
	var want []events.Envelope
	for _, es := range [][]events.Envelope{{full}, {bare}, {full, bare}, {bare, full, bare}} {
		got, err := db.Append(ctx, "s", int64(len(want)), es)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, got...)
	}
	all := readAll(t, db)
	if len(all) != len(want) {
		t.Fatalf("%d events stored, want %d", len(all), len(want))
	}
	for i, w := range want {
		g := all[i]
		if g.Seq != uint64(i+1) || g.Version != uint64(i+1) || g.Seq != w.Seq || g.Type != w.Type || g.Schema != w.Schema ||
			!g.Time.Equal(w.Time) || g.Time.Location() != time.UTC || g.SessionID != w.SessionID ||
			g.CorrelationID != w.CorrelationID || g.Host != w.Host || !bytes.Equal(g.Data, w.Data) {
			t.Fatalf("event %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}
