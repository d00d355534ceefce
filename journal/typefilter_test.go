package journal_test

import (
	"context"
	"slices"
	"testing"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/store/memory"
)

// wanted is a projection of ToolsListed only that records what it is
// given.
type wanted struct {
	seqs    []uint64
	last    uint64
	applied int
}

func (w *wanted) Apply(env events.Envelope) {
	if env.Type == events.TypeToolsListed {
		w.seqs = append(w.seqs, env.Seq)
	}
	w.last = max(w.last, env.Seq)
	w.applied++
}
func (w *wanted) LastSeq() uint64   { return w.last }
func (w *wanted) EventType() string { return events.TypeToolsListed }

// A projection that folds one event type is caught up at Attach by
// reading that type alone, and afterwards is given every envelope, its
// own journal's and (through the gap fill) another process's, exactly once.
func TestAttachReadsOnlyTheFilteredType(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	defer st.Close()
	other, err := journal.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var listed []uint64
	for i := range 300 {
		var e events.Event = &events.ToolCallFinished{Server: "s", Tool: "echo"}
		if i%100 == 0 {
			e = &events.ToolsListed{Server: "s", Tools: []events.ToolDef{}}
		}
		envs, err := other.Append(ctx, "history", e)
		if err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			listed = append(listed, envs[0].Seq)
		}
	}
	j, err := journal.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	w := &wanted{}
	if err := j.Attach(ctx, w); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w.seqs, listed) || w.applied != len(listed) {
		t.Fatalf("attach applied %d envelopes, lists %v; want only the lists %v", w.applied, w.seqs, listed)
	}
	// Another process appends a list, then this journal appends: the gap
	// is filled from the store before the journal's own event.
	envs, err := other.Append(ctx, "history", &events.ToolsListed{Server: "late", Tools: []events.ToolDef{}})
	if err != nil {
		t.Fatal(err)
	}
	listed = append(listed, envs[0].Seq)
	own, err := j.Append(ctx, "mine", &events.ToolsListed{Server: "mine", Tools: []events.ToolDef{}})
	if err != nil {
		t.Fatal(err)
	}
	listed = append(listed, own[0].Seq)
	if !slices.Equal(w.seqs, listed) {
		t.Errorf("lists applied %v, want %v", w.seqs, listed)
	}
	if w.last != own[0].Seq {
		t.Errorf("LastSeq = %d, want %d", w.last, own[0].Seq)
	}
}
