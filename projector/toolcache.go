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
const ToolCacheSnapshotName = "toolcache/v3"

// toolCacheSnapshotVersion is the format version inside the checkpoint.
// Version 3 added the lists' cache hints, the recording host of private
// lists, and the servers' eras.
const toolCacheSnapshotVersion = 3

// ToolCache is the fold of every session's ToolsListed, ResourcesListed and
// PromptsListed events into the newest tool list, resource lists and prompt
// list per server name and configuration hash, and of ServerEraDetected
// into the newest era per server and configuration hash. The manager
// serves the lists, deferred, when a server is still pending at the
// startup gate, and uses a list that is still fresh (its ttlMs not yet
// passed) and a fresh era to skip requests of a connect. On a store shared
// by several hosts it holds what any of them listed, except that a private
// list (cacheScope "private") is only ever found by the host that listed
// it, under the same authorization context ([Viewer]).
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
	eras      lists[eraRecord]
	lastSeq   uint64
	counts    Counts
}

// cacheKey says what an entry holds: server and configuration, and for a
// private list whose it is (the viewer's key; "" for public lists).
type cacheKey struct{ server, configHash, owner string }

// Viewer is who asks the cache for a list: the host (the envelope's Host
// of what it records) and the authorization context its connection to the
// server has ([events.CacheHints] AuthContext; "" for none). Public lists
// are found by every viewer; a private list only by the viewer it was
// listed for.
type Viewer struct{ Host, AuthContext string }

// key returns the owner key of v's private lists.
func (v Viewer) key() string { return v.Host + "\n" + v.AuthContext }

// ownerOf returns the owner key of a list recorded by host with hints h.
func ownerOf(host string, h events.CacheHints) string {
	if !h.Private() {
		return ""
	}
	return Viewer{host, h.AuthContext}.key()
}

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
	hints events.CacheHints
}

// fresh reports whether the list's own TTL (ttlMs) has not passed at now.
func (e entry[T]) fresh(now time.Time) bool {
	return e.hints.TTLMs > 0 && now.Sub(e.time) < time.Duration(e.hints.TTLMs)*time.Millisecond
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

// find returns the entry for server and configHash that v may see at now:
// the newer of the public one and v's private one.
func (l lists[T]) find(v Viewer, server, configHash string, now time.Time, ttl time.Duration) (e entry[T], age time.Duration, ok bool) {
	e, age, ok = l.live(cacheKey{server, configHash, ""}, now, ttl)
	if p, page, pok := l.live(cacheKey{server, configHash, v.key()}, now, ttl); pok && (!ok || p.newer(e)) {
		return p, page, true
	}
	return e, age, ok
}

// NewToolCache returns an empty cache with the default TTL.
func NewToolCache() *ToolCache { return &ToolCache{} }

// Name returns the name of the cache's store checkpoint, "toolcache/v3".
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
var cacheTypes = []string{events.TypeToolsListed, events.TypeResourcesListed, events.TypePromptsListed, events.TypeServerEraDetected}

// EventTypes reports the envelope types the cache folds (ToolsListed,
// ResourcesListed, PromptsListed, ServerEraDetected), so a journal can
// catch it up without reading the rest of the history.
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
		if e.Cause == events.CauseCache {
			c.counts.Ignored++ // a connection took a fresh cached list: no new listing
			return
		}
		c.tools.put(cacheKey{e.Server, e.ConfigHash, ownerOf(env.Host, e.CacheHints)},
			entry[[]events.ToolDef]{env.Seq, env.Time, e.Tools, len(e.Tools), e.CacheHints})
	case *events.ResourcesListed:
		if e.Cause == events.CauseCache {
			c.counts.Ignored++
			return
		}
		c.resources.put(cacheKey{e.Server, e.ConfigHash, ownerOf(env.Host, e.CacheHints)}, entry[resourceLists]{env.Seq, env.Time,
			resourceLists{e.Resources, e.Templates}, len(e.Resources) + len(e.Templates), e.CacheHints})
	case *events.PromptsListed:
		if e.Cause == events.CauseCache {
			c.counts.Ignored++
			return
		}
		c.prompts.put(cacheKey{e.Server, e.ConfigHash, ownerOf(env.Host, e.CacheHints)},
			entry[[]events.PromptDef]{env.Seq, env.Time, e.Prompts, len(e.Prompts), e.CacheHints})
	case *events.ServerEraDetected:
		// One era per server and config, whoever probed it; a private
		// discover result is fresh only for the host that probed.
		rec := eraRecord{e.Era, e.ProtocolVersion, e.SupportedVersions, e.Discover, env.Host}
		c.eras.put(cacheKey{e.Server, e.ConfigHash, ""}, entry[eraRecord]{env.Seq, env.Time, rec, 1,
			events.CacheHints{TTLMs: e.TTLMs, CacheScope: e.CacheScope}})
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
	e, age, ok := c.tools.live(cacheKey{server, configHash, ""}, now, c.ttl())
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
	_, _, ok := c.tools.live(cacheKey{server, configHash, ""}, now, c.ttl())
	return ok
}

// Cached is a list found in the cache: the list, its age, its cache hints
// and whether it is still fresh by its own TTL (ttlMs), which a connect
// may use instead of asking the server.
type Cached[T any] struct {
	List  T
	Age   time.Duration
	Fresh bool
	Hints events.CacheHints
}

// LookupFor returns the newest tool list of server under configHash that
// v may see at now (public lists, and v's own private ones), as
// [ToolCache.Lookup] does; Lookup finds public lists only.
func (c *ToolCache) LookupFor(v Viewer, server, configHash string, now time.Time) (Cached[[]events.ToolDef], bool) {
	c.mu.RLock()
	e, age, ok := c.tools.find(v, server, configHash, now, c.ttl())
	c.mu.RUnlock()
	if !ok {
		return Cached[[]events.ToolDef]{}, false
	}
	return Cached[[]events.ToolDef]{slices.Clone(e.list), age, e.fresh(now), e.hints}, true
}

// Era is the newest era recorded for a server under a config
// ([events.ServerEraDetected]), with its age and whether its discover
// result is still fresh by its TTL (and, when private, was probed by the
// host asking).
type Era struct {
	Era               events.Era
	ProtocolVersion   string
	SupportedVersions []string
	Discover          *events.DiscoverInfo
	Age               time.Duration
	Fresh             bool
	Hints             events.CacheHints
}

// eraRecord is what the cache keeps of a ServerEraDetected.
type eraRecord struct {
	era       events.Era
	version   string
	supported []string
	discover  *events.DiscoverInfo
	host      string
}

// LookupEra returns the newest era of server under configHash, as host
// (the asking host's id) may use it at now. An era is kept as long as the
// cache's TTL, like a list; Fresh says whether its discover result may
// stand in for a probe.
func (c *ToolCache) LookupEra(host, server, configHash string, now time.Time) (Era, bool) {
	c.mu.RLock()
	e, age, ok := c.eras.live(cacheKey{server, configHash, ""}, now, c.ttl())
	c.mu.RUnlock()
	if !ok {
		return Era{}, false
	}
	fresh := e.fresh(now) && (!e.hints.Private() || e.list.host == host)
	return Era{e.list.era, e.list.version, slices.Clone(e.list.supported), e.list.discover, age, fresh, e.hints}, true
}

// LookupResources returns the newest cached resources and resource
// templates of server under configHash, as [ToolCache.Lookup] does tools.
func (c *ToolCache) LookupResources(server, configHash string, now time.Time) (resources []events.ResourceDef, templates []events.ResourceTemplateDef, age time.Duration, ok bool) {
	c.mu.RLock()
	e, age, ok := c.resources.live(cacheKey{server, configHash, ""}, now, c.ttl())
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
	e, age, ok := c.prompts.live(cacheKey{server, configHash, ""}, now, c.ttl())
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
	return c.tools.prune(now, ttl) + c.resources.prune(now, ttl) + c.prompts.prune(now, ttl) + c.eras.prune(now, ttl)
}

// toolCacheSnapshot is the checkpoint format.
type toolCacheSnapshot struct {
	Version   int                      `json:"version"`
	LastSeq   uint64                   `json:"lastSeq"`
	Entries   []toolCacheSnapEntry     `json:"entries"`
	Resources []resourceCacheSnapEntry `json:"resources"`
	Prompts   []promptCacheSnapEntry   `json:"prompts"`
	Eras      []eraSnapEntry           `json:"eras,omitempty"`
}

// snapKey is the part of every checkpoint entry that says what it holds.
type snapKey struct {
	Server     string    `json:"server"`
	ConfigHash string    `json:"configHash"`
	Owner      string    `json:"owner,omitempty"`
	Seq        uint64    `json:"seq"`
	Time       time.Time `json:"time"`
	events.CacheHints
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

type eraSnapEntry struct {
	snapKey
	Era               events.Era           `json:"era"`
	ProtocolVersion   string               `json:"protocolVersion"`
	SupportedVersions []string             `json:"supportedVersions,omitempty"`
	Discover          *events.DiscoverInfo `json:"discover,omitempty"`
	Host              string               `json:"host,omitempty"`
}

// snapEntries returns l's entries as checkpoint entries, sorted by server
// and hash so equal caches give equal bytes.
func snapEntries[T, S any](l lists[T], conv func(snapKey, T) S) []S {
	keys := slices.SortedFunc(maps.Keys(l), func(a, b cacheKey) int {
		return cmp.Or(strings.Compare(a.server, b.server), strings.Compare(a.configHash, b.configHash), strings.Compare(a.owner, b.owner))
	})
	out := make([]S, 0, len(keys))
	for _, k := range keys {
		e := l[k]
		out = append(out, conv(snapKey{Server: k.server, ConfigHash: k.configHash, Owner: k.owner, Seq: e.seq, Time: e.time, CacheHints: e.hints}, e.list))
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
		Eras: snapEntries(c.eras, func(k snapKey, r eraRecord) eraSnapEntry {
			return eraSnapEntry{k, r.era, r.version, r.supported, r.discover, r.host}
		}),
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
	key := func(k snapKey) cacheKey { return cacheKey{k.Server, k.ConfigHash, k.Owner} }
	tools := make(lists[[]events.ToolDef], len(snap.Entries))
	for _, e := range snap.Entries {
		tools[key(e.snapKey)] = entry[[]events.ToolDef]{e.Seq, e.Time, e.Tools, len(e.Tools), e.CacheHints}
	}
	resources := make(lists[resourceLists], len(snap.Resources))
	for _, e := range snap.Resources {
		resources[key(e.snapKey)] = entry[resourceLists]{e.Seq, e.Time, resourceLists{e.Resources, e.Templates}, len(e.Resources) + len(e.Templates), e.CacheHints}
	}
	prompts := make(lists[[]events.PromptDef], len(snap.Prompts))
	for _, e := range snap.Prompts {
		prompts[key(e.snapKey)] = entry[[]events.PromptDef]{e.Seq, e.Time, e.Prompts, len(e.Prompts), e.CacheHints}
	}
	eras := make(lists[eraRecord], len(snap.Eras))
	for _, e := range snap.Eras {
		eras[key(e.snapKey)] = entry[eraRecord]{e.Seq, e.Time, eraRecord{e.Era, e.ProtocolVersion, e.SupportedVersions, e.Discover, e.Host}, 1, e.CacheHints}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tools, c.resources, c.prompts, c.eras = tools, resources, prompts, eras
	c.lastSeq = snap.LastSeq
	return nil
}
