package projector

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcplife/mcplife/events"
)

// DefaultCacheTTL is how long a cached tool list stays usable.
const DefaultCacheTTL = 30 * 24 * time.Hour

// ToolCacheSnapshotName names the tool cache's checkpoint in a store.
const ToolCacheSnapshotName = "toolcache/v1"

// toolCacheSnapshotVersion is the format version inside the checkpoint.
const toolCacheSnapshotVersion = 1

// ToolCache is the fold of every session's ToolsListed events into the
// newest tool list per server name and configuration hash. The manager
// serves deferred tools from it when a server is still pending at the
// startup gate.
//
// The newest list is the one with the highest envelope Seq (envelopes not
// yet stored, with Seq 0, compare by Time), so a late, older write never
// replaces a newer one, whatever order Apply sees them in. An empty list is
// a miss and invalidates the entry; a list older than TTL is a miss.
//
// A ToolCache is safe for concurrent use: Lookup may run while Apply does.
// The zero value is ready to use.
type ToolCache struct {
	// TTL is the age after which an entry is a miss; zero means
	// DefaultCacheTTL. Set it before first use.
	TTL time.Duration

	mu      sync.RWMutex
	entries map[cacheKey]cacheEntry
	lastSeq uint64
	counts  Counts
}

type cacheKey struct{ server, configHash string }

// cacheEntry is the newest list for one key; an empty Tools is a tombstone
// that keeps older lists from coming back.
type cacheEntry struct {
	seq   uint64
	time  time.Time
	tools []events.ToolDef
}

// newer reports whether e was recorded after old.
func (e cacheEntry) newer(old cacheEntry) bool {
	if e.seq != 0 && old.seq != 0 {
		return e.seq > old.seq
	}
	return !e.time.Before(old.time)
}

// NewToolCache returns an empty cache with the default TTL.
func NewToolCache() *ToolCache { return &ToolCache{} }

// Name returns the name of the cache's store checkpoint, "toolcache/v1".
func (c *ToolCache) Name() string { return ToolCacheSnapshotName }

// LastSeq returns the highest sequence passed to Apply or restored from a
// snapshot.
func (c *ToolCache) LastSeq() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.lastSeq
}

// Counts returns how many envelopes were applied and skipped, and why.
func (c *ToolCache) Counts() Counts {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.counts
}

// EventType reports the one envelope type the cache folds (ToolsListed),
// so a journal can catch it up without reading the rest of the history.
func (c *ToolCache) EventType() string { return events.TypeToolsListed }

// Apply folds env into the cache. Only ToolsListed events of any session
// are used; others are counted as ignored without being decoded.
// Envelopes may arrive in any order.
func (c *ToolCache) Apply(env events.Envelope) { c.ApplyDecoded(env, nil) }

// ApplyDecoded is [ToolCache.Apply] with env's decoding at hand, shared
// with other projections (see journal.SharedDecoding); nil means decode
// env here. The event is kept, not modified.
func (c *ToolCache) ApplyDecoded(env events.Envelope, decode func() (events.Event, error)) {
	var (
		ev  events.Event
		ok  bool
		cnt Counts
	)
	if env.Type == events.TypeToolsListed {
		ev, ok = cnt.decode(env, decode)
	} else {
		cnt.skip(env)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastSeq = max(c.lastSeq, env.Seq)
	if !ok {
		c.counts.Ignored += cnt.Ignored
		c.counts.Unknown += cnt.Unknown
		c.counts.Undecodable += cnt.Undecodable
		return
	}
	tl, _ := ev.(*events.ToolsListed)
	c.counts.Applied++
	if c.entries == nil {
		c.entries = make(map[cacheKey]cacheEntry)
	}
	key := cacheKey{tl.Server, tl.ConfigHash}
	e := cacheEntry{seq: env.Seq, time: env.Time, tools: tl.Tools}
	if old, ok := c.entries[key]; ok && !e.newer(old) {
		return
	}
	c.entries[key] = e
}

// Lookup returns the newest cached tool list of server under configHash
// and its age at now. ok is false when there is none, when it is empty,
// or when it is older than TTL. The slice is a copy; the JSON bytes inside
// the definitions are shared and must not be modified.
func (c *ToolCache) Lookup(server, configHash string, now time.Time) (tools []events.ToolDef, age time.Duration, ok bool) {
	e, age, ok := c.live(server, configHash, now)
	if !ok {
		return nil, 0, false
	}
	return slices.Clone(e.tools), age, true
}

// Has reports whether [ToolCache.Lookup] would find a list, without
// copying it.
func (c *ToolCache) Has(server, configHash string, now time.Time) bool {
	_, _, ok := c.live(server, configHash, now)
	return ok
}

// live returns the entry Lookup serves and its age.
func (c *ToolCache) live(server, configHash string, now time.Time) (e cacheEntry, age time.Duration, ok bool) {
	c.mu.RLock()
	e, found := c.entries[cacheKey{server, configHash}]
	ttl := cmp.Or(c.TTL, DefaultCacheTTL)
	c.mu.RUnlock()
	if !found || len(e.tools) == 0 {
		return e, 0, false
	}
	age = max(now.Sub(e.time), 0)
	if age > ttl {
		return e, 0, false
	}
	return e, age, true
}

// Prune drops entries that are empty or older than TTL at now, and returns
// how many it dropped. A dropped tombstone no longer stops an older list
// that arrives later; call Prune only with lists no older than TTL still
// to come.
func (c *ToolCache) Prune(now time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	ttl := cmp.Or(c.TTL, DefaultCacheTTL)
	n := 0
	for k, e := range c.entries {
		if len(e.tools) == 0 || now.Sub(e.time) > ttl {
			delete(c.entries, k)
			n++
		}
	}
	return n
}

// toolCacheSnapshot is the checkpoint format.
type toolCacheSnapshot struct {
	Version int                  `json:"version"`
	LastSeq uint64               `json:"lastSeq"`
	Entries []toolCacheSnapEntry `json:"entries"`
}

type toolCacheSnapEntry struct {
	Server     string           `json:"server"`
	ConfigHash string           `json:"configHash"`
	Seq        uint64           `json:"seq"`
	Time       time.Time        `json:"time"`
	Tools      []events.ToolDef `json:"tools"`
}

// MarshalSnapshot encodes the cache's entries (tombstones included) and
// LastSeq as JSON, entries sorted by server and hash so equal caches give
// equal bytes. To save it as a store checkpoint use [ToolCache.Snapshot],
// which returns the matching sequence.
func (c *ToolCache) MarshalSnapshot() ([]byte, error) {
	_, data, err := c.Snapshot()
	return data, err
}

// Snapshot returns the checkpoint data of [ToolCache.MarshalSnapshot]
// together with the sequence it is current up to, taken atomically, ready
// for store.Snapshotter.SaveSnapshot(ctx, c.Name(), seq, data).
func (c *ToolCache) Snapshot() (seq uint64, data []byte, err error) {
	c.mu.RLock()
	snap := toolCacheSnapshot{Version: toolCacheSnapshotVersion, LastSeq: c.lastSeq, Entries: make([]toolCacheSnapEntry, 0, len(c.entries))}
	for k, e := range c.entries {
		snap.Entries = append(snap.Entries, toolCacheSnapEntry{Server: k.server, ConfigHash: k.configHash, Seq: e.seq, Time: e.time, Tools: e.tools})
	}
	c.mu.RUnlock()
	slices.SortFunc(snap.Entries, func(a, b toolCacheSnapEntry) int {
		return cmp.Or(strings.Compare(a.Server, b.Server), strings.Compare(a.ConfigHash, b.ConfigHash))
	})
	data, err = json.Marshal(snap)
	if err != nil {
		return 0, nil, fmt.Errorf("projector: marshal %s snapshot: %w", ToolCacheSnapshotName, err)
	}
	return snap.LastSeq, data, nil
}

// UnmarshalSnapshot replaces the cache's entries and LastSeq with those of
// a snapshot written by MarshalSnapshot, so a caller can continue applying
// from LastSeq()+1 instead of replaying history. On error the cache is
// unchanged.
func (c *ToolCache) UnmarshalSnapshot(data []byte) error {
	var snap toolCacheSnapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		return fmt.Errorf("projector: unmarshal %s snapshot: %w", ToolCacheSnapshotName, err)
	}
	if snap.Version != toolCacheSnapshotVersion {
		return fmt.Errorf("projector: unmarshal %s snapshot: unsupported version %d", ToolCacheSnapshotName, snap.Version)
	}
	entries := make(map[cacheKey]cacheEntry, len(snap.Entries))
	for _, e := range snap.Entries {
		entries[cacheKey{e.Server, e.ConfigHash}] = cacheEntry{seq: e.Seq, time: e.Time, tools: e.Tools}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = entries
	c.lastSeq = snap.LastSeq
	return nil
}
