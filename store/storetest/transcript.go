package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/mcplife/mcplife/store"
)

// Transcript checks a [store.TranscriptStore]: lines come back per
// session, in order, with their fields and a Seq from 1.
func Transcript(t *testing.T, ts store.TranscriptStore) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Unix(1700000000, 123456789).UTC()
	first := []store.TranscriptLine{
		{Session: "s1", Server: "a", Time: t0, Direction: store.TranscriptOut, Message: `{"jsonrpc":"2.0","id":1,"method":"initialize"}`},
		{Session: "s2", Server: "b", Time: t0, Direction: store.TranscriptIn, Message: `{}`},
		{Session: "s1", Server: "a", Time: t0.Add(time.Millisecond), Direction: store.TranscriptIn, Message: `{"jsonrpc":"2.0","id":1,"res`, Cut: 40},
	}
	if err := ts.AppendTranscript(ctx, first); err != nil {
		t.Fatalf("AppendTranscript: %v", err)
	}
	if err := ts.AppendTranscript(ctx, []store.TranscriptLine{{Session: "s1", Server: "a", Time: t0.Add(2 * time.Millisecond), Direction: store.TranscriptCut, Dropped: 3, DroppedBytes: 300}}); err != nil {
		t.Fatalf("AppendTranscript: %v", err)
	}
	got, err := ts.ReadTranscript(ctx, "s1")
	if err != nil {
		t.Fatalf("ReadTranscript: %v", err)
	}
	want := []store.TranscriptLine{first[0], first[2], {Session: "s1", Server: "a", Time: t0.Add(2 * time.Millisecond), Direction: store.TranscriptCut, Dropped: 3, DroppedBytes: 300}}
	if len(got) != len(want) {
		t.Fatalf("ReadTranscript(s1) = %d lines, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		want[i].Seq = uint64(i + 1)
		g := got[i]
		if !g.Time.Equal(want[i].Time) {
			t.Errorf("line %d time %v, want %v", i, g.Time, want[i].Time)
		}
		g.Time = want[i].Time
		if g != want[i] {
			t.Errorf("line %d = %+v, want %+v", i, g, want[i])
		}
	}
	if got, err := ts.ReadTranscript(ctx, "none"); err != nil || len(got) != 0 {
		t.Errorf("ReadTranscript(none) = %v, %v; want nothing", got, err)
	}
}
