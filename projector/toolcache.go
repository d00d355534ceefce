package projector

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcplife/mcplife/events"
)

// DefaultCacheTTL is how long a cached list stays usable.
const DefaultCacheTTL = 30 * 24 * time.Hour

// ToolCacheSnapshotName names the tool cache's checkpoint in a store. The
// version in the name changes with the format, so a checkpoint of an older
// format is never restored: the cache is rebuilt from the events instead.
const ToolCacheSnapshotName = "toolcache/v2"

// toolCacheSnapshotVersion is the format version inside the checkpoint.
const toolCacheSnapshotVersion = 2

// ToolCache is the fold of every session's ToolsListed, ResourcesListed and
// PromptsListed events into the newest tool list, resource lists and prompt
// list per server name and configuration hash. The manager serves them,
// deferred, when a server is still pending at the startup gate. On a store
// shared by several hosts it holds what any of them listed.
//
// The newest list is the one with the highest envelope Seq (envelopes not
// yet stored, with Seq 0, compare by Time), so a late, older write never
// replaces a newer one, whatever order Apply sees them in. An empty list is
// a miss and invalidates the entry; a list older than TTL is a miss. Lists
// recorded as served from a cache (cause "cache") are not listings and are
// ignored.
//
// A ToolCache is safe for concurrent use: Lookup may run while Apply does.
// The zero value is ready to use.
type ToolCache struct {
	// TTL is the age after which an entry is a miss; zero means
	// DefaultCacheTTL. Set it before first use.
	TTL time.Duration

	mu        sync.RWMutex
	tools     lists[[]events.ToolDef]
	resources lists[resourceLists]
	prompts   lists[[]events.PromptDef]
	lastSeq   uint64
	counts    Counts
}

type cacheKey struct{ server, configHash string }

// resourceLists are a server's resources and resource templates, listed
// together.
type resourceLists struct {
	resources []events.ResourceDef
	templates []events.ResourceTemplateDef
}

// entry is the newest list of one kind for one key; an entry of no items
// is a tombstone that keeps older lists from coming back.
type entry[T any] struct {
	seq   uint64
	time  time.Time
	list  T
	items int
}

// newer reports whether e was recorded after old.
func (e entry[T]) newer(old entry[T]) bool {
	if e.seq != 0 && old.seq != 0 {
		return e.seq > old.seq
	}
	return !e.time.Before(old.time)
}

// lists holds the entries of one kind.
type lists[T any] map[cacheKey]entry[T]

// put keeps e under k unless the entry there is newer.
func (l *lists[T]) put(k cacheKey, e entry[T]) {
	if old, ok := (*l)[k]; ok && !e.newer(old) {
		return
	}
	if *l == nil {
		*l = make(lists[T])
	}
	(*l)[k] = e
}

// live returns the entry under k and its age at now, unless it is missing,
// a tombstone, or older than ttl.
func (l lists[T]) live(k cacheKey, now time.Time, ttl time.Duration) (e entry[T], age time.Duration, ok bool) {
	e, found := l[k]
	if !found || e.items == 0 {
		return e, 0, false
	}
	age = max(now.Sub(e.time), 0)
	if age > ttl {
		return e, 0, false
	}
	return e, age, true
}

// prune drops tombstones and entries older than ttl at now.
func (l lists[T]) prune(now time.Time, ttl time.Duration) int {
	n := 0
	for k, e := range l {
		if e.items == 0 || now.Sub(e.time) > ttl {
			delete(l, k)
			n++
		}
	}
	return n
}

// NewToolCache returns an empty cache with the default TTL.
func NewToolCache() *ToolCache { return &ToolCache{} }

// Name returns the name of the cache's store checkpoint, "toolcache/v2".
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

// cacheTypes are the event types the cache folds.
var cacheTypes = []string{events.TypeToolsListed, events.TypeResourcesListed, events.TypePromptsListed}

// EventTypes reports the envelope types the cache folds (ToolsListed,
// ResourcesListed, PromptsListed), so a journal can catch it up without
// reading the rest of the history.
func (c *ToolCache) EventTypes() []string { return slices.Clone(cacheTypes) }

// Apply folds env into the cache. Only the list events of any session are
// used; others are counted as ignored without being decoded. Envelopes may
// arrive in any order.
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
	if slices.Contains(cacheTypes, env.Type) {
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
	switch e := ev.(type) {
	case *events.ToolsListed:
		c.tools.put(cacheKey{e.Server, e.ConfigHash}, entry[[]events.ToolDef]{env.Seq, env.Time, e.Tools, len(e.Tools)})
	case *events.ResourcesListed:
		if e.Cause == events.CauseCache {
			c.counts.Ignored++
			return
		}
		c.resources.put(cacheKey{e.Server, e.ConfigHash}, entry[resourceLists]{env.Seq, env.Time,
			resourceLists{e.Resources, e.Templates}, len(e.Resources) + len(e.Templates)})
	case *events.PromptsListed:
		if e.Cause == events.CauseCache {
			c.counts.Ignored++
			return
		}
		c.prompts.put(cacheKey{e.Server, e.ConfigHash}, entry[[]events.PromptDef]{env.Seq, env.Time, e.Prompts, len(e.Prompts)})
	}
	c.counts.Applied++
}

// ttl returns the cache's TTL.
func (c *ToolCache) ttl() time.Duration { return cmp.Or(c.TTL, DefaultCacheTTL) }

// Lookup returns the newest cached tool list of server under configHash
// and its age at now. ok is false when there is none, when it is empty,
// or when it is older than TTL. The slice is a copy; the JSON bytes inside
// the definitions are shared and must not be modified.
func (c *ToolCache) Lookup(server, configHash string, now time.Time) (tools []events.ToolDef, age time.Duration, ok bool) {
	c.mu.RLock()
	e, age, ok := c.tools.live(cacheKey{server, configHash}, now, c.ttl())
	c.mu.RUnlock()
	if !ok {
		return nil, 0, false
	}
	return slices.Clone(e.list), age, true
}

// Has reports whether [ToolCache.Lookup] would find a list, without
// copying it.
func (c *ToolCache) Has(server, configHash string, now time.Time) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, _, ok := c.tools.live(cacheKey{server, configHash}, now, c.ttl())
	return ok
}

// LookupResources returns the newest cached resources and resource
// templates of server under configHash, as [ToolCache.Lookup] does tools.
func (c *ToolCache) LookupResources(server, configHash string, now time.Time) (resources []events.ResourceDef, templates []events.ResourceTemplateDef, age time.Duration, ok bool) {
	c.mu.RLock()
	e, age, ok := c.resources.live(cacheKey{server, configHash}, now, c.ttl())
	c.mu.RUnlock()
	if !ok {
		return nil, nil, 0, false
	}
	return slices.Clone(e.list.resources), slices.Clone(e.list.templates), age, true
}

// LookupPrompts returns the newest cached prompts of server under
// configHash, as [ToolCache.Lookup] does tools.
func (c *ToolCache) LookupPrompts(server, configHash string, now time.Time) (prompts []events.PromptDef, age time.Duration, ok bool) {
	c.mu.RLock()
	e, age, ok := c.prompts.live(cacheKey{server, configHash}, now, c.ttl())
	c.mu.RUnlock()
	if !ok {
		return nil, 0, false
	}
	return slices.Clone(e.list), age, true
}

// Prune drops entries that are empty or older than TTL at now, and returns
// how many it dropped. A dropped tombstone no longer stops an older list
// that arrives later; call Prune only with lists no older than TTL still
// to come.
func (c *ToolCache) Prune(now time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	ttl := c.ttl()
	return c.tools.prune(now, ttl) + c.resources.prune(now, ttl) + c.prompts.prune(now, ttl)
}

// toolCacheSnapshot is the checkpoint format.
type toolCacheSnapshot struct {
	Version   int                      `json:"version"`
	LastSeq   uint64                   `json:"lastSeq"`
	Entries   []toolCacheSnapEntry     `json:"entries"`
	Resources []resourceCacheSnapEntry `json:"resources"`
	Prompts   []promptCacheSnapEntry   `json:"prompts"`
}

// snapKey is the part of every checkpoint entry that says what it holds.
type snapKey struct {
	Server     string    `json:"server"`
	ConfigHash string    `json:"configHash"`
	Seq        uint64    `json:"seq"`
	Time       time.Time `json:"time"`
}

type toolCacheSnapEntry struct {
	snapKey
	Tools []events.ToolDef `json:"tools"`
}

type resourceCacheSnapEntry struct {
	snapKey
	Resources []events.ResourceDef         `json:"resources"`
	Templates []events.ResourceTemplateDef `json:"templates,omitempty"`
}

type promptCacheSnapEntry struct {
	snapKey
	Prompts []events.PromptDef `json:"prompts"`
}

// snapEntries returns l's entries as checkpoint entries, sorted by server
// and hash so equal caches give equal bytes.
func snapEntries[T, S any](l lists[T], conv func(snapKey, T) S) []S {
	keys := slices.SortedFunc(maps.Keys(l), func(a, b cacheKey) int {
		return cmp.Or(strings.Compare(a.server, b.server), strings.Compare(a.configHash, b.configHash))
	})
	out := make([]S, 0, len(keys))
	for _, k := range keys {
		e := l[k]
		out = append(out, conv(snapKey{Server: k.server, ConfigHash: k.configHash, Seq: e.seq, Time: e.time}, e.list))
	}
	return out
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
	snap := toolCacheSnapshot{
		Version: toolCacheSnapshotVersion,
		LastSeq: c.lastSeq,
		Entries: snapEntries(c.tools, func(k snapKey, t []events.ToolDef) toolCacheSnapEntry { return toolCacheSnapEntry{k, t} }),
		Resources: snapEntries(c.resources, func(k snapKey, r resourceLists) resourceCacheSnapEntry {
			return resourceCacheSnapEntry{k, r.resources, r.templates}
		}),
		Prompts: snapEntries(c.prompts, func(k snapKey, p []events.PromptDef) promptCacheSnapEntry { return promptCacheSnapEntry{k, p} }),
	}
	c.mu.RUnlock()
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
	key := func(k snapKey) cacheKey { return cacheKey{k.Server, k.ConfigHash} }
	tools := make(lists[[]events.ToolDef], len(snap.Entries))
	for _, e := range snap.Entries {
		tools[key(e.snapKey)] = entry[[]events.ToolDef]{e.Seq, e.Time, e.Tools, len(e.Tools)}
	}
	resources := make(lists[resourceLists], len(snap.Resources))
	for _, e := range snap.Resources {
		resources[key(e.snapKey)] = entry[resourceLists]{e.Seq, e.Time, resourceLists{e.Resources, e.Templates}, len(e.Resources) + len(e.Templates)}
	}
	prompts := make(lists[[]events.PromptDef], len(snap.Prompts))
	for _, e := range snap.Prompts {
		prompts[key(e.snapKey)] = entry[[]events.PromptDef]{e.Seq, e.Time, e.Prompts, len(e.Prompts)}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tools, c.resources, c.prompts = tools, resources, prompts
	c.lastSeq = snap.LastSeq
	return nil
}
