package memory

import (
	"context"
	"fmt"
	"slices"

	"github.com/mcplife/mcplife/store"
)

var _ store.TranscriptStore = (*Store)(nil)

// AppendTranscript implements [store.TranscriptStore.AppendTranscript].
func (s *Store) AppendTranscript(ctx context.Context, lines []store.TranscriptLine) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: append transcript: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("memory: append transcript: %w", store.ErrClosed)
	}
	if s.transcripts == nil {
		s.transcripts = make(map[string][]store.TranscriptLine)
	}
	for i := range lines {
		l := &lines[i]
		l.Seq = uint64(len(s.transcripts[l.Session])) + 1
		s.transcripts[l.Session] = append(s.transcripts[l.Session], *l)
	}
	return nil
}

// ReadTranscript implements [store.TranscriptStore.ReadTranscript].
func (s *Store) ReadTranscript(ctx context.Context, session string) ([]store.TranscriptLine, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: read transcript: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("memory: read transcript: %w", store.ErrClosed)
	}
	return slices.Clone(s.transcripts[session]), nil
}
