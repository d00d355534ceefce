package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/store"
)

var (
	_ store.Store       = (*Store)(nil)
	_ store.Snapshotter = (*Store)(nil)
	_ store.TypeReader  = (*Store)(nil)
	_ store.Identifier  = (*Store)(nil)
	_ store.ChainReader = (*Store)(nil)
)

// Store is an in-memory [store.Store] and [store.Snapshotter]. Nothing
// survives the process. All methods are safe for concurrent use.
//
// Envelopes are copied on the way in and on the way out, so callers may
// keep or modify what they pass and receive. Reads iterate over the events
// present when the read (for ReadAll and ReadStream) started; events appended
// meanwhile are not yielded. An iteration holds no lock while it yields, so
// the loop body may call any method, Append included.
type Store struct {
	id string // see StoreID; fixed at New

	mu        sync.RWMutex
	closed    bool
	log       []events.Envelope           // log[i].Seq == i+1; elements never change once appended
	chain     [][store.ChainHashSize]byte // chain[i] is the chain value of log[i]
	streams   map[string]*stream          // by name
	order     []*stream                   // by first sequence
	snapshots map[string]snapshot
	// transcripts holds each session's transcript lines (transcript.go).
	transcripts map[string][]store.TranscriptLine
}

// stream is the state of one stream. Its fields change only under Store.mu.
type stream struct {
	info store.StreamInfo
	seqs []uint64 // seqs[v-1] is the sequence of version v; elements never change
}

type snapshot struct {
	seq  uint64
	data []byte
}

// New returns an empty store with an identity of its own.
func New() *Store {
	var id [16]byte
	rand.Read(id[:]) // never fails (crypto/rand)
	return &Store{
		id:        hex.EncodeToString(id[:]),
		streams:   make(map[string]*stream),
		snapshots: make(map[string]snapshot),
	}
}

// StoreID implements [store.Identifier]: a random id given to the store by
// New, the same for every journal on it.
func (s *Store) StoreID() string { return s.id }

// Append implements [store.Store.Append]. It returns an error for an empty
// stream name, an expected version below [store.AnyVersion], or an event
// whose Time is zero or outside the years 1678–2262; it stores nothing in
// those cases.
func (s *Store) Append(ctx context.Context, name string, expected int64, envs []events.Envelope) ([]events.Envelope, error) {
	if err := store.CheckAppend("memory", name, expected, envs); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: append %q: %w", name, err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appendLocked(name, expected, envs)
}

// AppendBatch implements [store.BatchAppender]: the requests are applied in
// order under one lock, each as [Store.Append] applies it.
func (s *Store) AppendBatch(ctx context.Context, reqs []store.AppendRequest) []store.AppendResult {
	res := make([]store.AppendResult, len(reqs))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, q := range reqs {
		if err := store.CheckAppend("memory", q.Stream, q.Expected, q.Envs); err != nil {
			res[i].Err = err
			continue
		}
		if err := ctx.Err(); err != nil {
			res[i].Err = fmt.Errorf("memory: append %q: %w", q.Stream, err)
			continue
		}
		res[i].Envs, res[i].Err = s.appendLocked(q.Stream, q.Expected, q.Envs)
	}
	return res
}

// appendLocked appends envs, already checked, to stream name. Requires s.mu.
func (s *Store) appendLocked(name string, expected int64, envs []events.Envelope) ([]events.Envelope, error) {
	if s.closed {
		return nil, fmt.Errorf("memory: append %q: %w", name, store.ErrClosed)
	}
	st := s.streams[name]
	var cur uint64
	if st != nil {
		cur = st.info.Version
	}
	if expected != store.AnyVersion && uint64(expected) != cur {
		return nil, fmt.Errorf("memory: append %q: expected version %d, stream is at %d: %w", name, expected, cur, store.ErrVersionConflict)
	}
	if len(envs) == 0 {
		return nil, nil
	}
	if st == nil {
		st = &stream{info: store.StreamInfo{Stream: name}}
		s.streams[name] = st
		s.order = append(s.order, st)
	}

	out := make([]events.Envelope, len(envs))
	for i, e := range envs {
		e = e.Clone()
		e.Seq = uint64(len(s.log)) + 1
		e.Stream = name
		e.Version = cur + uint64(i) + 1
		e.Time = e.Time.UTC()
		var prev [store.ChainHashSize]byte
		if n := len(s.chain); n > 0 {
			prev = s.chain[n-1]
		}
		s.log = append(s.log, e)
		s.chain = append(s.chain, store.ChainHash(prev, e))
		st.seqs = append(st.seqs, e.Seq)
		out[i] = e.Clone()
	}
	first, last := out[0], out[len(out)-1]
	if st.info.FirstSeq == 0 {
		st.info.FirstSeq = first.Seq
		st.info.Created = first.Time
	}
	st.info.Version = last.Version
	st.info.LastSeq = last.Seq
	st.info.Updated = last.Time
	return out, nil
}

// ReadStream implements [store.Store.ReadStream].
func (s *Store) ReadStream(ctx context.Context, name string, fromVersion uint64) iter.Seq2[events.Envelope, error] {
	return func(yield func(events.Envelope, error) bool) {
		s.mu.RLock()
		closed := s.closed
		var seqs []uint64
		if st := s.streams[name]; st != nil {
			seqs = st.seqs
		}
		log := s.log
		s.mu.RUnlock()
		if closed {
			yield(events.Envelope{}, fmt.Errorf("memory: read stream %q: %w", name, store.ErrClosed))
			return
		}
		if fromVersion > 0 {
			seqs = seqs[min(fromVersion-1, uint64(len(seqs))):]
		}
		for _, seq := range seqs {
			if err := ctx.Err(); err != nil {
				yield(events.Envelope{}, fmt.Errorf("memory: read stream %q: %w", name, err))
				return
			}
			if !yield(log[seq-1].Clone(), nil) {
				return
			}
		}
	}
}

// ReadAll implements [store.Store.ReadAll].
func (s *Store) ReadAll(ctx context.Context, fromSeq uint64) iter.Seq2[events.Envelope, error] {
	return func(yield func(events.Envelope, error) bool) {
		s.mu.RLock()
		closed, log := s.closed, s.log
		s.mu.RUnlock()
		if closed {
			yield(events.Envelope{}, fmt.Errorf("memory: read all: %w", store.ErrClosed))
			return
		}
		if fromSeq > 0 {
			log = log[min(fromSeq-1, uint64(len(log))):]
		}
		for i := range log {
			if err := ctx.Err(); err != nil {
				yield(events.Envelope{}, fmt.Errorf("memory: read all: %w", err))
				return
			}
			if !yield(log[i].Clone(), nil) {
				return
			}
		}
	}
}

// ReadType implements [store.TypeReader].
func (s *Store) ReadType(ctx context.Context, typ string, fromSeq, toSeq uint64) iter.Seq2[events.Envelope, error] {
	return func(yield func(events.Envelope, error) bool) {
		for env, err := range s.ReadAll(ctx, fromSeq) {
			if err != nil {
				yield(events.Envelope{}, err)
				return
			}
			if env.Seq > toSeq {
				return
			}
			if env.Type == typ && !yield(env, nil) {
				return
			}
		}
	}
}

// Streams implements [store.Store.Streams]. It yields the streams as they
// were when the iteration started.
func (s *Store) Streams(ctx context.Context) iter.Seq2[store.StreamInfo, error] {
	return func(yield func(store.StreamInfo, error) bool) {
		s.mu.RLock()
		closed := s.closed
		infos := make([]store.StreamInfo, len(s.order))
		for i, st := range s.order {
			infos[i] = st.info
		}
		s.mu.RUnlock()
		if closed {
			yield(store.StreamInfo{}, fmt.Errorf("memory: streams: %w", store.ErrClosed))
			return
		}
		for _, info := range infos {
			if err := ctx.Err(); err != nil {
				yield(store.StreamInfo{}, fmt.Errorf("memory: streams: %w", err))
				return
			}
			if !yield(info, nil) {
				return
			}
		}
	}
}

// LastSeq implements [store.Store.LastSeq].
func (s *Store) LastSeq(ctx context.Context) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("memory: last seq: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, fmt.Errorf("memory: last seq: %w", store.ErrClosed)
	}
	return uint64(len(s.log)), nil
}

// SaveSnapshot implements [store.Snapshotter.SaveSnapshot]. It keeps a copy
// of data.
func (s *Store) SaveSnapshot(ctx context.Context, name string, seq uint64, data []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: save snapshot %q: %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("memory: save snapshot %q: %w", name, store.ErrClosed)
	}
	if old, ok := s.snapshots[name]; ok && seq < old.seq {
		return nil
	}
	s.snapshots[name] = snapshot{seq: seq, data: slices.Clone(data)}
	return nil
}

// LoadSnapshot implements [store.Snapshotter.LoadSnapshot]. The returned
// data is the caller's to keep.
func (s *Store) LoadSnapshot(ctx context.Context, name string) (uint64, []byte, error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, fmt.Errorf("memory: load snapshot %q: %w", name, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, nil, fmt.Errorf("memory: load snapshot %q: %w", name, store.ErrClosed)
	}
	snap, ok := s.snapshots[name]
	if !ok {
		return 0, nil, fmt.Errorf("memory: load snapshot %q: %w", name, store.ErrNotFound)
	}
	return snap.seq, slices.Clone(snap.data), nil
}

// ReadChain implements [store.ChainReader]. Nothing can change the events
// of a memory store, so its chain is always whole.
func (s *Store) ReadChain(ctx context.Context, fromSeq uint64) iter.Seq2[store.ChainedEvent, error] {
	return func(yield func(store.ChainedEvent, error) bool) {
		s.mu.RLock()
		chain := s.chain
		s.mu.RUnlock()
		for env, err := range s.ReadAll(ctx, fromSeq) {
			if err != nil {
				yield(store.ChainedEvent{}, fmt.Errorf("memory: read chain: %w", err))
				return
			}
			if env.Seq > uint64(len(chain)) {
				return // appended after the read started
			}
			h := chain[env.Seq-1]
			if !yield(store.ChainedEvent{Env: env, Hash: h[:]}, nil) {
				return
			}
		}
	}
}

// ChainHead implements [store.ChainReader].
func (s *Store) ChainHead(ctx context.Context) (store.ChainHead, error) {
	if err := ctx.Err(); err != nil {
		return store.ChainHead{}, fmt.Errorf("memory: read chain head: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ChainHead{}, fmt.Errorf("memory: read chain head: %w", store.ErrClosed)
	}
	n := len(s.chain)
	if n == 0 {
		return store.ChainHead{}, nil
	}
	h := s.chain[n-1]
	return store.ChainHead{Seq: uint64(n), Hash: h[:]}, nil
}

// Close discards the contents. Later calls to other methods return
// [store.ErrClosed]; closing again returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.log, s.chain, s.streams, s.order, s.snapshots = nil, nil, nil, nil, nil
	return nil
}
