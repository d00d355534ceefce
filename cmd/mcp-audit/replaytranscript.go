package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcplife/mcplife/store"
)

// transcriptJSON is a transcript line of `replay --transcript --json`.
type transcriptJSON struct {
	Transcript   uint64    `json:"transcriptSeq"`
	Offset       float64   `json:"offsetMs"`
	Time         time.Time `json:"time"`
	Type         string    `json:"type"` // always "Transcript"
	Server       string    `json:"server"`
	Direction    string    `json:"direction"`
	Message      string    `json:"message,omitempty"`
	Cut          int64     `json:"cut,omitempty"`
	Dropped      int64     `json:"dropped,omitempty"`
	DroppedBytes int64     `json:"droppedBytes,omitempty"`
}

// transcriptTextMax is the most bytes of a message a text line shows.
const transcriptTextMax = 400

// transcriptMerger prints the lines of a session's transcript between its
// events, by time.
type transcriptMerger struct {
	p     *replayPrinter
	lines []store.TranscriptLine
	next  int
}

// loadTranscript reads session's transcript from st.
func loadTranscript(ctx context.Context, st store.Store, session string, p *replayPrinter) (*transcriptMerger, error) {
	ts, ok := st.(store.TranscriptStore)
	if !ok {
		return nil, errors.New("--transcript: this store keeps no transcripts")
	}
	lines, err := ts.ReadTranscript(ctx, session)
	if err != nil {
		return nil, err
	}
	return &transcriptMerger{p: p, lines: lines}, nil
}

// before prints the lines earlier than t; all with a zero t.
func (m *transcriptMerger) before(t time.Time) error {
	if m == nil {
		return nil
	}
	for ; m.next < len(m.lines); m.next++ {
		l := m.lines[m.next]
		if !t.IsZero() && !l.Time.Before(t) {
			return nil
		}
		if err := m.print(l); err != nil {
			return err
		}
	}
	return nil
}

func (m *transcriptMerger) print(l store.TranscriptLine) error {
	p := m.p
	if p.start.IsZero() {
		p.start = l.Time
	}
	offset := l.Time.Sub(p.start)
	if p.g.json {
		return p.g.writeJSONLine(transcriptJSON{
			Transcript: l.Seq, Offset: ms(offset), Time: l.Time, Type: "Transcript", Server: l.Server,
			Direction: l.Direction, Message: l.Message, Cut: l.Cut, Dropped: l.Dropped, DroppedBytes: l.DroppedBytes,
		})
	}
	var text string
	switch l.Direction {
	case store.TranscriptCut:
		text = fmt.Sprintf("%s: %d messages (%d bytes) not kept", l.Server, l.Dropped, l.DroppedBytes)
	default:
		arrow := "→"
		if l.Direction == store.TranscriptIn {
			arrow = "←"
		}
		msg := l.Message
		more := l.Cut
		if len(msg) > transcriptTextMax {
			more += int64(len(msg) - transcriptTextMax)
			msg = msg[:transcriptTextMax]
		}
		text = l.Server + " " + arrow + " " + msg
		if more > 0 {
			text += fmt.Sprintf(" … (%d bytes more)", more)
		}
	}
	_, err := fmt.Fprintf(p.g.stdout, "%10s  ~%-6d %-19s %s\n", fmtOffset(offset), l.Seq, p.g.paint(colorDim, fmt.Sprintf("%-19s", "transcript")), escapeLine(text))
	return err
}
