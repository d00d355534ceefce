package verify

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/mcplife/mcplife/store"
)

// BreakKind says how the stored log differs from the one its chain
// values were computed over.
type BreakKind string

const (
	// BreakChanged: the event's stored fields are not those its chain
	// value was computed over (or the event before it was rewritten
	// together with its chain value).
	BreakChanged BreakKind = "changed"
	// BreakRemoved: events are missing, a gap in the sequence, the log
	// cut short of its recorded head, or an event taken out and the later
	// ones renumbered.
	BreakRemoved BreakKind = "removed"
	// BreakInserted: an event that was never appended: a row without a
	// chain value, one beyond the recorded head, or one put in with the
	// later events renumbered.
	BreakInserted BreakKind = "inserted"
	// BreakReordered: an intact event stored at another seq than the one
	// it was appended at (two events swapped, say).
	BreakReordered BreakKind = "reordered"
)

// ChainBreak is one place where the chain does not hold. Seq is the first
// bad event's seq (for a removal, the first missing seq).
type ChainBreak struct {
	Seq     uint64    `json:"seq"`
	Kind    BreakKind `json:"kind"`
	Session string    `json:"session,omitempty"` // of the event stored at Seq, if any
	Type    string    `json:"type,omitempty"`    // of the event stored at Seq, if any
	Message string    `json:"message"`
}

func (b ChainBreak) String() string {
	s := fmt.Sprintf("seq %d %s", b.Seq, b.Kind)
	if b.Type != "" {
		s += " " + b.Type
	}
	if b.Session != "" {
		s += " (session " + b.Session + ")"
	}
	return s + ": " + b.Message
}

// ChainReport is the outcome of [CheckChain].
type ChainReport struct {
	Events   int    `json:"events"`   // rows read
	LastSeq  uint64 `json:"lastSeq"`  // seq of the last row read
	HeadSeq  uint64 `json:"headSeq"`  // the recorded chain head
	HeadHash string `json:"headHash"` // its chain value, hex ("" for an empty log)
	// Breaks are in seq order; the first is the first bad event.
	Breaks []ChainBreak `json:"breaks"`
	// Unexamined counts the further rows whose chain value did not match,
	// beyond those examined in detail (see [ChainOptions.MaxSuspects]).
	Unexamined int `json:"unexamined,omitempty"`
}

// OK reports whether the chain holds.
func (r ChainReport) OK() bool { return len(r.Breaks) == 0 && r.Unexamined == 0 }

// ChainOptions configures [CheckChain]. The zero value, like a nil
// *ChainOptions, checks the whole log.
type ChainOptions struct {
	// UpTo, when not zero, ends the check at that seq (the last event of
	// a session, whose history is the log up to it): rows after it are
	// not read, and the chain head is compared only when it is not after
	// UpTo. Events missing up to UpTo are reported.
	UpTo uint64
	// MaxSuspects bounds how many rows whose chain value does not match
	// are kept and examined to tell a change from a move, an insertion
	// or a removal (default 64); rows beyond it are counted in
	// [ChainReport.Unexamined].
	MaxSuspects int
}

// suspect is a row whose stored chain value does not follow from the row
// before it.
type suspect struct {
	row    store.ChainedEvent
	digest [store.ChainHashSize]byte
	pred   []byte // the stored chain value of the row before
	pred2  []byte // and of the row before that
	noHash bool   // the row has no chain value
	// matchedAt is the seq at which the row, with one of the candidate
	// predecessors, gives its stored chain value; 0 when none does.
	matchedAt uint64
}

// CheckChain checks the hash chain of the log that cr holds (see package
// store for its definition) and reports where it does not hold. It reads
// the recorded chain head, then every row in seq order, recomputing each
// row's chain value from the stored value of the row before it, so one
// changed event breaks the chain at that event only. A row that does not
// match is examined against its neighbours and the other such rows to
// tell what happened to it:
//
//   - a gap in the sequence, or a log that ends before its recorded head,
//     is a removal at the first missing seq (the row after a gap is not
//     checked: its predecessor is gone);
//   - a row without a chain value, or one after the recorded head, is an
//     insertion;
//   - a row that matches at another seq, after the value of the row that
//     stood before that seq, is reordered; a run of rows that all match
//     one seq later (or earlier) is an event inserted (or removed) with
//     the later events renumbered, reported once where it starts;
//   - a row that matches where it is, after another row's value, is the
//     successor of a moved row and no break of its own;
//   - any other row is changed.
//
// It returns an error only when the store cannot be read.
func CheckChain(ctx context.Context, cr store.ChainReader, opts *ChainOptions) (ChainReport, error) {
	var o ChainOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxSuspects <= 0 {
		o.MaxSuspects = 64
	}
	rep := ChainReport{Breaks: []ChainBreak{}}
	// The head first: an append after it adds rows the read may yield, and
	// those are told from inserted rows by reading the head again.
	head, err := cr.ChainHead(ctx)
	if err != nil {
		return rep, err
	}
	var (
		suspects []*suspect
		prev     []byte // stored chain value of the last row read
		prev2    []byte // and of the row before it
		prevSeq  uint64
		prevEnv  store.ChainedEvent
	)
	for row, err := range cr.ReadChain(ctx, 1) {
		if err != nil {
			return rep, err
		}
		if o.UpTo > 0 && row.Env.Seq > o.UpTo {
			break
		}
		rep.Events++
		gap := row.Env.Seq != prevSeq+1
		if gap {
			rep.Breaks = append(rep.Breaks, removed(prevSeq+1, row.Env.Seq-1,
				fmt.Sprintf("seq %d is followed by seq %d", prevSeq, row.Env.Seq)))
		}
		var bad *suspect
		switch {
		case len(row.Hash) != store.ChainHashSize:
			bad = &suspect{noHash: true}
		case gap:
			// Its predecessor is gone: nothing to check it against.
		default:
			d := store.ContentDigest(row.Env)
			if want := store.ChainStep(toHash(prev), row.Env.Seq, row.Env.Version, d); !bytes.Equal(want[:], row.Hash) {
				bad = &suspect{digest: d}
			}
		}
		if bad != nil {
			bad.row, bad.pred, bad.pred2 = row, prev, prev2
			switch {
			case len(suspects) < o.MaxSuspects:
				suspects = append(suspects, bad)
			case bad.noHash:
				rep.Breaks = append(rep.Breaks, breakAt(row, BreakInserted, noHashMsg))
			default:
				rep.Unexamined++
			}
		}
		if gap {
			prev = nil
		}
		prev2, prev, prevSeq, prevEnv = prev, row.Hash, row.Env.Seq, row
	}
	rep.LastSeq = prevSeq
	rep.Breaks = append(rep.Breaks, classify(suspects)...)

	switch {
	case o.UpTo > 0 && o.UpTo < head.Seq:
		if prevSeq < o.UpTo {
			rep.Breaks = append(rep.Breaks, removed(prevSeq+1, o.UpTo,
				fmt.Sprintf("the log holds nothing after seq %d; the session's last event is seq %d", prevSeq, o.UpTo)))
		}
	case prevSeq > head.Seq:
		// Rows after the head read first: appended since, or inserted.
		if head, err = cr.ChainHead(ctx); err != nil {
			return rep, err
		}
		if prevSeq > head.Seq && !hasBreakAt(rep.Breaks, head.Seq+1) {
			rep.Breaks = append(rep.Breaks, ChainBreak{Seq: head.Seq + 1, Kind: BreakInserted,
				Message: fmt.Sprintf("the chain head records seq %d as the last event, the log goes on to seq %d", head.Seq, prevSeq)})
		} else if head.Seq == prevSeq && !bytes.Equal(head.Hash, prev) {
			rep.Breaks = append(rep.Breaks, breakAt(prevEnv, BreakChanged, "its chain value is not the one the chain head records"))
		}
	case prevSeq < head.Seq:
		rep.Breaks = append(rep.Breaks, removed(prevSeq+1, head.Seq,
			fmt.Sprintf("the log ends at seq %d; the chain head records seq %d", prevSeq, head.Seq)))
	case prevSeq > 0 && !bytes.Equal(head.Hash, prev):
		if !hasBreakAt(rep.Breaks, prevSeq) {
			rep.Breaks = append(rep.Breaks, breakAt(prevEnv, BreakChanged, "its chain value is not the one the chain head records"))
		}
	}
	rep.HeadSeq = head.Seq
	if len(head.Hash) > 0 {
		rep.HeadHash = hex.EncodeToString(head.Hash)
	}
	slices.SortStableFunc(rep.Breaks, func(a, b ChainBreak) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	return rep, nil
}

// classify tells what happened to each suspect row (see CheckChain) and
// returns the breaks they make.
func classify(ss []*suspect) []ChainBreak {
	if len(ss) == 0 {
		return nil
	}
	// Candidate predecessors: the stored values around the suspects, which
	// is where a moved row's old predecessor, or a moved row's own value,
	// is found.
	var preds [][store.ChainHashSize]byte
	seen := map[[store.ChainHashSize]byte]bool{}
	addPred := func(b []byte) {
		if len(b) != store.ChainHashSize && b != nil {
			return
		}
		h := toHash(b)
		if !seen[h] {
			seen[h] = true
			preds = append(preds, h)
		}
	}
	for _, s := range ss {
		addPred(s.pred)
		addPred(s.pred2)
		addPred(s.row.Hash)
	}
	// Candidate seqs: the suspects' own and their neighbours'.
	var seqs []uint64
	for _, s := range ss {
		q := s.row.Env.Seq
		seqs = append(seqs, q-1, q, q+1)
	}
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
	bySeq := map[uint64]*suspect{}
	for _, s := range ss {
		bySeq[s.row.Env.Seq] = s
		if !s.noHash {
			s.matchedAt = match(s, preds, seqs)
		}
	}

	var out []ChainBreak
	shifted := map[uint64]bool{} // rows explained by a renumbering reported before them
	for _, s := range ss {
		q := s.row.Env.Seq
		if shifted[q] {
			continue
		}
		next := bySeq[q+1]
		switch {
		case s.noHash:
			msg := noHashMsg
			if next != nil && next.matchedAt == q {
				msg += fmt.Sprintf("; the %d event(s) after it were renumbered up by one", markRun(bySeq, shifted, q+1, -1))
			}
			out = append(out, breakAt(s.row, BreakInserted, msg))
		case s.matchedAt == q && bySeq[q-1] != nil:
			// Intact: only its predecessor's value moved or changed.
		case s.matchedAt == q:
			// Its predecessor is intact, yet its chain value follows
			// another event's: it was computed over the wrong one.
			out = append(out, breakAt(s.row, BreakChanged,
				"its chain value does not follow the event before it, which is intact (the chain value was forged, or computed over another event)"))
		case s.matchedAt == 0 && next != nil && next.matchedAt == q:
			n := markRun(bySeq, shifted, q+1, -1)
			out = append(out, breakAt(s.row, BreakInserted,
				fmt.Sprintf("this event was never appended; the %d event(s) after it were renumbered up by one", n)))
		case q > 1 && s.matchedAt == q-1 && bySeq[q-1] == nil && (next == nil || next.matchedAt == q):
			// The row before matched where it is: it was put in with a
			// chain value computed for it, and this one and those after
			// it moved up.
			n := markRun(bySeq, shifted, q, -1)
			out = append(out, ChainBreak{Seq: q - 1, Kind: BreakInserted,
				Message: fmt.Sprintf("the event at seq %d was never appended (its chain value was forged); the %d event(s) after it were renumbered up by one", q-1, n)})
		case s.matchedAt == 0 && next != nil && next.matchedAt == q+2:
			n := markRun(bySeq, shifted, q+1, +1)
			out = append(out, ChainBreak{Seq: q, Kind: BreakRemoved,
				Message: fmt.Sprintf("the event appended at seq %d is missing and the %d event(s) after it were renumbered down by one", q, n+1)})
		case s.matchedAt != 0:
			out = append(out, breakAt(s.row, BreakReordered, fmt.Sprintf("this event was appended at seq %d", s.matchedAt)))
		default:
			out = append(out, breakAt(s.row, BreakChanged,
				"its stored fields do not give its chain value (the event, or the one before it together with its chain value, was changed)"))
		}
	}
	return out
}

// match returns the seq among seqs at which s's row, after one of preds,
// gives its stored chain value, preferring its own seq; 0 if none does.
func match(s *suspect, preds [][store.ChainHashSize]byte, seqs []uint64) uint64 {
	own := s.row.Env.Seq
	try := func(seq uint64) bool {
		for _, p := range preds {
			h := store.ChainStep(p, seq, s.row.Env.Version, s.digest)
			if bytes.Equal(h[:], s.row.Hash) {
				return true
			}
		}
		return false
	}
	if try(own) {
		return own
	}
	for _, q := range seqs {
		if q != own && q != 0 && try(q) {
			return q
		}
	}
	return 0
}

// markRun marks the suspects from seq on that match at their seq + delta,
// as long as they run without a gap, and returns how many it marked.
func markRun(bySeq map[uint64]*suspect, shifted map[uint64]bool, seq uint64, delta int) int {
	n := 0
	for s := bySeq[seq]; s != nil && s.matchedAt == uint64(int64(seq)+int64(delta)); s = bySeq[seq] {
		shifted[seq] = true
		n++
		seq++
	}
	return n
}

const noHashMsg = "the row has no chain value: it was written behind the store's back"

func breakAt(row store.ChainedEvent, kind BreakKind, msg string) ChainBreak {
	return ChainBreak{Seq: row.Env.Seq, Kind: kind, Session: row.Env.SessionID, Type: row.Env.Type, Message: msg}
}

func removed(from, to uint64, why string) ChainBreak {
	msg := fmt.Sprintf("seq %d is missing (%s)", from, why)
	if to > from {
		msg = fmt.Sprintf("seqs %d to %d are missing (%s)", from, to, why)
	}
	return ChainBreak{Seq: from, Kind: BreakRemoved, Message: msg}
}

func hasBreakAt(bs []ChainBreak, seq uint64) bool {
	return slices.ContainsFunc(bs, func(b ChainBreak) bool { return b.Seq == seq })
}

func toHash(b []byte) (h [store.ChainHashSize]byte) {
	copy(h[:], b)
	return h
}
