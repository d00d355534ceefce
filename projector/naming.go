package projector

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// MaxToolNameLen is the longest exposed tool name: the strictest model API
// accepts 64 characters.
const MaxToolNameLen = 64

// ToolNamePrefix starts every exposed MCP tool name.
const ToolNamePrefix = "mcp_"

// hashSuffixLen is the number of hex characters of the SHA-256 suffix that
// long or colliding names end with.
const hashSuffixLen = 8

// ToolRef names one tool of one server by its original names.
type ToolRef struct {
	Server string // server name as configured
	Tool   string // tool name as the server sent it
}

// compareRefs orders refs by server, then tool, byte-wise.
func compareRefs(a, b ToolRef) int {
	if c := strings.Compare(a.Server, b.Server); c != 0 {
		return c
	}
	return strings.Compare(a.Tool, b.Tool)
}

// Collision records that two different refs mapped to the same name. Kept
// holds Name; Ref was renamed to Assigned.
type Collision struct {
	Name     string  // the contested name
	Kept     ToolRef // the ref that keeps Name (the smallest by server, tool)
	Ref      ToolRef // the ref that was renamed
	Assigned string  // the name Ref received instead
}

// ToolName returns the exposed name of tool on server:
// "mcp_<server>_<tool>".
//
// Each part is lowercased (ASCII letters only), every run of characters
// outside [a-z0-9] becomes one "_", and leading and trailing "_" are
// trimmed; an empty part becomes "server" or "tool". When the sanitised tool
// name already starts with "<server>_" the prefix is not repeated, so server
// "git" and tool "git_status" give "mcp_git_status".
//
// A name longer than [MaxToolNameLen] keeps a readable prefix and ends with
// "_" and the first 8 hex characters of the SHA-256 of server + "\x00" +
// tool (the original, unsanitised pair), so it is stable across runs and
// machines. ToolName does not resolve collisions; see [AssignNames].
func ToolName(server, tool string) string {
	base := readableName(server, tool)
	if len(base) <= MaxToolNameLen {
		return base
	}
	return withHashSuffix(base, pairHash(server, tool, 0))
}

// readableName is the untruncated "mcp_<server>_<tool>" name.
func readableName(server, tool string) string {
	s := sanitizePart(server, "server")
	t := sanitizePart(tool, "tool")
	if rest, ok := strings.CutPrefix(t, s+"_"); ok {
		t = rest
	}
	return ToolNamePrefix + s + "_" + t
}

// sanitizePart lowercases s, turns every run of characters outside [a-z0-9]
// into one "_", trims "_" at the edges, and returns fallback when nothing is
// left. Non-ASCII characters are outside [a-z0-9], whatever their case.
func sanitizePart(s, fallback string) string {
	var b strings.Builder
	b.Grow(len(s))
	pendingSep := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		default:
			pendingSep = true
			continue
		}
		if pendingSep && b.Len() > 0 {
			b.WriteByte('_')
		}
		pendingSep = false
		b.WriteByte(c)
	}
	if b.Len() == 0 {
		return fallback
	}
	return b.String()
}

// pairHash returns 8 hex characters of the SHA-256 of the original pair.
// salt 0 hashes server + "\x00" + tool; a positive salt appends "\x00" and
// the salt, which only collision resolution needs.
func pairHash(server, tool string, salt int) string {
	h := sha256.New()
	h.Write([]byte(server))
	h.Write([]byte{0})
	h.Write([]byte(tool))
	if salt > 0 {
		h.Write([]byte{0})
		h.Write([]byte(strconv.Itoa(salt)))
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))[:hashSuffixLen]
}

// withHashSuffix returns base + "_" + hash, cutting base (and any "_" the
// cut leaves at its end) so the result fits [MaxToolNameLen].
func withHashSuffix(base, hash string) string {
	keep := MaxToolNameLen - 1 - len(hash)
	if len(base) > keep {
		base = strings.TrimRight(base[:keep], "_")
	}
	return base + "_" + hash
}

// AssignNames gives every distinct ref a unique exposed name of at most
// [MaxToolNameLen] characters and reports the collisions it resolved.
//
// The rule, which depends only on the set of refs and never on their order:
// every ref starts from [ToolName]. When several refs share a name, the
// smallest ref by (server, tool), compared byte-wise, keeps it; each other
// ref, taken in that same order, gets the first free name of the sequence
// readable + "_" + pairHash(ref, salt) for salt 0, 1, 2, …, where readable is
// the untruncated "mcp_<server>_<tool>" cut to fit and pairHash is 8 hex
// characters of the SHA-256 of server + "\x00" + tool (+ "\x00" + salt when
// salt > 0). Every name kept in the first step is reserved before any
// renamed ref picks one, so a renamed ref never takes another ref's own name.
//
// Duplicate refs are named once. Collisions are sorted by (Name, Ref). The
// caller keeps the reverse map (name → ref) from the result.
//
// AssignNames names one set of refs with no history. A session names its
// tools with [NameClaims], which keeps every name it gave out.
func AssignNames(refs []ToolRef) (names map[ToolRef]string, collisions []Collision) {
	var c NameClaims
	names = c.Claim(refs)
	for _, r := range slices.Compact(slices.SortedFunc(slices.Values(refs), compareRefs)) {
		if col, ok := c.Collision(r); ok {
			collisions = append(collisions, col)
		}
	}
	sortCollisions(collisions)
	return names, collisions
}

// sortCollisions sorts collisions by (Name, Ref).
func sortCollisions(collisions []Collision) {
	slices.SortFunc(collisions, func(a, b Collision) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), compareRefs(a.Ref, b.Ref))
	})
}

// NameClaims holds the exposed names given out so far, so that a name
// keeps meaning one tool: once a ref holds a name, it keeps it, and no
// other ref is ever given it, even after the ref's tool went away (its
// server disconnected, or stopped listing it) and while it is back.
//
// New refs are named by the rule of [AssignNames], with every name
// already held counted as taken: a newcomer whose [ToolName] another ref
// holds gets the hash-suffixed name, whatever the order of the servers'
// names. The names therefore depend on the order in which refs were
// claimed, and on nothing else; refs claimed together are named as one
// set, independent of their order.
//
// The zero value holds no names. A NameClaims is not safe for concurrent
// use; Clone counts as a change of both copies.
type NameClaims struct {
	byName map[string]ToolRef // every name given, and its ref
	// byRef holds the names that are not their ref's [ToolName], the
	// few a collision gave; a ref without an entry holds its ToolName
	// when byName says so.
	byRef map[ToolRef]string
	// shared is set when another NameClaims (a Clone) holds the same
	// maps: the first change copies them.
	shared bool
}

// own makes c's maps its own before a change.
func (c *NameClaims) own() {
	if c.shared {
		c.byRef, c.byName, c.shared = maps.Clone(c.byRef), maps.Clone(c.byName), false
	}
}

// Claim names refs: a ref that already holds a name keeps it, the others
// (named together, as [AssignNames] names a set) get names no ref holds,
// and keep them from now on. It returns the name of every ref passed.
func (c *NameClaims) Claim(refs []ToolRef) map[ToolRef]string {
	names := make(map[ToolRef]string, len(refs))
	var fresh []ToolRef
	for _, r := range refs {
		if n, ok := c.Name(r); ok {
			names[r] = n
			continue
		}
		fresh = append(fresh, r)
	}
	if len(fresh) == 0 {
		return names
	}
	c.own()
	if c.byName == nil {
		c.byRef = make(map[ToolRef]string)
		c.byName = make(map[string]ToolRef, len(fresh))
	}
	slices.SortFunc(fresh, compareRefs)
	fresh = slices.Compact(fresh)
	var losers []ToolRef
	// First pass: the smallest fresh ref of every base name no one holds
	// keeps it.
	for _, r := range fresh {
		base := ToolName(r.Server, r.Tool)
		if _, ok := c.byName[base]; ok {
			losers = append(losers, r)
			continue
		}
		c.hold(r, base)
		names[r] = base
	}
	// Second pass: the others get hash-suffixed names, in (server, tool)
	// order, skipping any name already held.
	for _, r := range losers {
		readable := readableName(r.Server, r.Tool)
		var name string
		for salt := 0; ; salt++ {
			name = withHashSuffix(readable, pairHash(r.Server, r.Tool, salt))
			if _, ok := c.byName[name]; !ok {
				break
			}
		}
		c.hold(r, name)
		names[r] = name
	}
	return names
}

func (c *NameClaims) hold(r ToolRef, name string) {
	c.byName[name] = r
	if name != ToolName(r.Server, r.Tool) {
		c.byRef[r] = name
	}
}

// Name returns the name ref holds.
func (c *NameClaims) Name(ref ToolRef) (string, bool) {
	if n, ok := c.byRef[ref]; ok {
		return n, true
	}
	n := ToolName(ref.Server, ref.Tool)
	if holder, ok := c.byName[n]; ok && holder == ref {
		return n, true
	}
	return "", false
}

// Holder returns the ref that holds name.
func (c *NameClaims) Holder(name string) (ToolRef, bool) {
	r, ok := c.byName[name]
	return r, ok
}

// Len returns the number of names held.
func (c *NameClaims) Len() int { return len(c.byName) }

// Collision reports whether ref holds a name other than its [ToolName],
// because another ref held that name first (or took it in the same
// claim), and describes it.
func (c *NameClaims) Collision(ref ToolRef) (Collision, bool) {
	name, ok := c.byRef[ref]
	if !ok {
		return Collision{}, false
	}
	base := ToolName(ref.Server, ref.Tool)
	return Collision{Name: base, Kept: c.byName[base], Ref: ref, Assigned: name}, true
}

// Forget drops the names of the refs keep reports false for: they may be
// given to other refs from now on.
func (c *NameClaims) Forget(keep func(ToolRef) bool) {
	c.own()
	for n, r := range c.byName {
		if !keep(r) {
			delete(c.byName, n)
			delete(c.byRef, r)
		}
	}
}

// Clone returns an independent copy of c. The copies share their names
// until one of them changes, so a clone costs nothing up front.
func (c *NameClaims) Clone() NameClaims {
	c.shared = c.byName != nil
	return NameClaims{byRef: c.byRef, byName: c.byName, shared: c.shared}
}
