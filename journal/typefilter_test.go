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
func (w *wanted) LastSeq() uint64      { return w.last }
func (w *wanted) EventTypes() []string { return []string{events.TypeToolsListed} }

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

// several is a projection of two event types.
type several struct{ wanted }

func (w *several) Apply(env events.Envelope) {
	if env.Type == events.TypeToolsListed || env.Type == events.TypePromptsListed {
		w.seqs = append(w.seqs, env.Seq)
	}
	w.last = max(w.last, env.Seq)
	w.applied++
}
func (w *several) EventTypes() []string {
	return []string{events.TypePromptsListed, events.TypeToolsListed, events.TypePromptsListed}
}

// A projection of several types is caught up with those types alone,
// merged in sequence order, each envelope once.
func TestAttachMergesFilteredTypesInOrder(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	defer st.Close()
	j, err := journal.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var want []uint64
	for i := range 90 {
		var e events.Event
		switch i % 3 {
		case 0:
			e = &events.ToolsListed{Server: "s", Tools: []events.ToolDef{}}
		case 1:
			e = &events.ToolCallFinished{Server: "s", Tool: "echo"}
		default:
			e = &events.PromptsListed{Server: "s", Prompts: []events.PromptDef{}}
		}
		if i%7 == 0 { // runs of one type, so the merge switches unevenly
			e = &events.PromptsListed{Server: "s", Prompts: []events.PromptDef{}}
		}
		envs, err := j.Append(ctx, "history", e)
		if err != nil {
			t.Fatal(err)
		}
		if e.Type() != events.TypeToolCallFinished {
			want = append(want, envs[0].Seq)
		}
	}
	w := &several{}
	if err := j.Attach(ctx, w); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w.seqs, want) || w.applied != len(want) {
		t.Fatalf("attach applied %d envelopes, seqs %v; want %v", w.applied, w.seqs, want)
	}
}
