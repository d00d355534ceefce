package toolsearch

import (
	"bytes"
	"cmp"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"

	"github.com/mcplife/mcplife/projector"
)

// DefaultLimit is the number of results [Index.Search] returns when
// [SearchOptions.Limit] is zero.
const DefaultLimit = 5

// field is one part of a tool definition that the index scores apart.
type field int

const (
	fieldName      field = iota // the tool's name, without its server prefix
	fieldServer                 // the server name
	fieldTitle                  // the title
	fieldDesc                   // the description
	fieldParamName              // the parameter names of the input schema
	fieldParamDesc              // the parameter descriptions, titles and enum values
	numFields
)

// fieldWeights and fieldB are the BM25F weight and length normalisation of
// each field. A word in a name says more than one in a parameter's
// description; names and titles are short, so their length matters little.
var (
	fieldWeights = [numFields]float64{3.0, 2.0, 2.0, 1.0, 0.6, 0.4}
	fieldB       = [numFields]float64{0.3, 0, 0.3, 0.75, 0.5, 0.75}
)

// k1 is the BM25 term frequency saturation.
const k1 = 1.2

// Index is an in-memory BM25F index over the tools of many servers.
//
// An Index is safe for concurrent use: updates take a write lock for the
// short time it takes to link already analysed tools in, and searches share
// a read lock, so a session can follow its tool view from one goroutine
// while agent calls search from others.
type Index struct {
	scratch sync.Pool // *scratch, per search

	mu      sync.RWMutex
	terms   map[string]*termEntry
	slots   []slot  // documents; a freed slot is reused with a new generation
	free    []int32 // freed slots
	servers map[string]*serverDocs
	docs    int            // live documents
	lenSum  [numFields]int // summed field lengths of live documents
}

// slot holds one document, or nothing when it is free. The document is
// its server's tool at pos, kept once, in the server's list.
type slot struct {
	lens   [numFields]uint16
	gen    uint32      // postings of an earlier document in this slot carry an older generation
	pos    int32       // the tool's position in server.tools
	server *serverDocs // nil when free
}

// tool returns the slot's document.
func (sl *slot) tool() projector.Tool { return sl.server.tools[sl.pos] }

// serverDocs is what the index keeps of one server.
type serverDocs struct {
	tools []projector.Tool
	slots []int32
	terms []termCount // distinct terms of the server's documents
}

// termCount is how many of a server's documents hold a term.
type termCount struct {
	term string
	n    int
}

// termEntry is the postings of one term. Postings of removed documents stay
// until more than half of a list is stale; then the list is compacted.
type termEntry struct {
	postings []posting
	live     int // documents that hold the term
}

// posting is one term in one document: its frequency in each field.
type posting struct {
	slot int32
	gen  uint32
	tf   [numFields]uint8
}

// New returns an empty index.
func New() *Index {
	return &Index{terms: map[string]*termEntry{}, servers: map[string]*serverDocs{}}
}

// SetServer replaces every tool of server with tools (none removes the
// server). The Server field of each tool is set to server. A tool's Name
// is its exposed name ([projector.ToolName]) and Original its name as the
// server sent it; an empty Original falls back to Def.Name.
func (x *Index) SetServer(server string, tools []projector.Tool) {
	a := analyseServer(server, tools)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.replace(server, a)
}

// RemoveServer removes every tool of server.
func (x *Index) RemoveServer(server string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.replace(server, nil)
}

// Sync makes the index hold exactly tools, for example the result of
// [projector.ToolView.Tools]: servers that are gone are removed, and only
// servers whose tools changed (names or definitions) are analysed again.
func (x *Index) Sync(tools []projector.Tool) {
	// Each server's tools, as a part of tools (which are usually grouped
	// by server already) or, when they are spread out, as a copy.
	byServer := map[string][]projector.Tool{}
	start := 0
	for i := range tools {
		if i+1 == len(tools) || tools[i+1].Server != tools[start].Server {
			name := tools[start].Server
			if prev, ok := byServer[name]; ok {
				// prev's capacity ends with it: this copies, and
				// later appends grow the copy.
				byServer[name] = append(prev, tools[start:i+1]...)
			} else {
				byServer[name] = tools[start : i+1 : i+1]
			}
			start = i + 1
		}
	}
	x.mu.RLock()
	var gone, changed []string
	for name, s := range x.servers {
		if _, ok := byServer[name]; !ok {
			gone = append(gone, name)
		} else if !sameTools(s.tools, byServer[name]) {
			changed = append(changed, name)
		}
	}
	for name := range byServer {
		if _, ok := x.servers[name]; !ok {
			changed = append(changed, name)
		}
	}
	x.mu.RUnlock()
	slices.Sort(changed)
	built := make([]*analysed, len(changed))
	for i, name := range changed {
		built[i] = analyseServer(name, byServer[name])
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, name := range gone {
		x.replace(name, nil)
	}
	for i, name := range changed {
		x.replace(name, built[i])
	}
}

// sameTools reports whether the indexed tools of a server equal tools.
func sameTools(indexed, tools []projector.Tool) bool {
	if len(indexed) != len(tools) {
		return false
	}
	for i, a := range indexed {
		b := tools[i]
		if a.Name != b.Name || a.Original != b.Original && !(b.Original == "" && a.Original == b.Def.Name) ||
			a.Deferred != b.Deferred || a.Def.Name != b.Def.Name || a.Def.Title != b.Def.Title ||
			a.Def.Description != b.Def.Description || !bytes.Equal(a.Def.InputSchema, b.Def.InputSchema) {
			return false
		}
	}
	return true
}

// Len returns the number of indexed tools.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.docs
}

// replace swaps the documents of server for a (nil or empty removes them)
// and keeps the corpus statistics. Requires x.mu held for writing.
func (x *Index) replace(server string, a *analysed) {
	if old := x.servers[server]; old != nil {
		for _, id := range old.slots {
			sl := &x.slots[id]
			for f := range numFields {
				x.lenSum[f] -= int(sl.lens[f])
			}
			*sl = slot{gen: sl.gen + 1}
			x.free = append(x.free, id)
		}
		x.docs -= len(old.slots)
		for _, tc := range old.terms {
			e := x.terms[tc.term]
			e.live -= tc.n
			switch {
			case e.live <= 0:
				delete(x.terms, tc.term)
			case 2*e.live < len(e.postings):
				e.postings = slices.DeleteFunc(e.postings, func(p posting) bool {
					return x.slots[p.slot].gen != p.gen
				})
			}
		}
		delete(x.servers, server)
	}
	if a == nil || len(a.tools) == 0 {
		return
	}
	sd := &serverDocs{tools: a.tools, slots: make([]int32, len(a.tools)), terms: make([]termCount, 0, len(a.terms))}
	for i := range a.tools {
		var id int32
		if n := len(x.free); n > 0 {
			id = x.free[n-1]
			x.free = x.free[:n-1]
		} else {
			id = int32(len(x.slots))
			x.slots = append(x.slots, slot{})
		}
		sl := &x.slots[id]
		sl.pos = int32(i)
		sl.lens = a.lens[i]
		sl.server = sd
		for f := range numFields {
			x.lenSum[f] += int(sl.lens[f])
		}
		sd.slots[i] = id
	}
	x.docs += len(a.tools)
	for i, term := range a.terms {
		ps := a.postings[i]
		if len(ps) == 0 {
			continue // a term of the server name only, when no tool has it
		}
		e := x.terms[term]
		if e == nil {
			e = &termEntry{postings: make([]posting, 0, len(ps))}
			x.terms[term] = e
		}
		for _, p := range ps {
			id := sd.slots[p.slot]
			e.postings = append(e.postings, posting{slot: id, gen: x.slots[id].gen, tf: p.tf})
		}
		e.live += len(ps)
		sd.terms = append(sd.terms, termCount{term: term, n: len(ps)})
	}
	x.servers[server] = sd
}

// analysed is a server's tools, analysed without the lock held: field
// lengths per tool, and per term its postings, whose slot is the tool's
// position.
type analysed struct {
	tools    []projector.Tool
	lens     [][numFields]uint16
	terms    []string
	postings [][]posting // parallel to terms
}

// analyseServer analyses the tools of one server. It touches no shared
// state, so it runs without the lock.
func analyseServer(server string, tools []projector.Tool) *analysed {
	a := &analysed{
		tools: make([]projector.Tool, len(tools)),
		lens:  make([][numFields]uint16, len(tools)),
	}
	an := newAnalyser()
	serverIDs := appendIDs(an, nil, server)
	var ids [numFields][]int32
	var names, descs [][]byte
	var counts [][numFields]uint8 // per term number, for the current tool
	var seen []int32              // term numbers of the current tool
	for i, t := range tools {
		t.Server = server
		if t.Original == "" {
			t.Original = t.Def.Name
		}
		a.tools[i] = t

		for f := range ids {
			ids[f] = ids[f][:0]
		}
		ids[fieldName] = appendIDs(an, ids[fieldName], t.Original)
		if len(serverIDs) > 0 && len(ids[fieldName]) > len(serverIDs) &&
			slices.Equal(ids[fieldName][:len(serverIDs)], serverIDs) {
			// "slack_post_message" of server "slack": the server
			// field already holds "slack".
			ids[fieldName] = slices.Delete(ids[fieldName], 0, len(serverIDs))
		}
		ids[fieldServer] = append(ids[fieldServer], serverIDs...)
		ids[fieldTitle] = appendIDs(an, ids[fieldTitle], t.Def.Title)
		ids[fieldDesc] = appendIDs(an, ids[fieldDesc], t.Def.Description)
		names, descs = schemaText(t.Def.InputSchema, names[:0], descs[:0])
		for _, n := range names {
			ids[fieldParamName] = appendIDs(an, ids[fieldParamName], n)
		}
		for _, d := range descs {
			ids[fieldParamDesc] = appendIDs(an, ids[fieldParamDesc], d)
		}

		if n := len(an.terms); len(counts) < n {
			counts = append(counts, make([][numFields]uint8, n-len(counts))...)
			a.postings = append(a.postings, make([][]posting, n-len(a.postings))...)
		}
		seen = seen[:0]
		for f, fids := range ids {
			a.lens[i][f] = uint16(min(len(fids), math.MaxUint16))
			for _, id := range fids {
				c := &counts[id]
				if *c == ([numFields]uint8{}) {
					seen = append(seen, id)
				}
				if c[f] < math.MaxUint8 {
					c[f]++
				}
			}
		}
		for _, id := range seen {
			a.postings[id] = append(a.postings[id], posting{slot: int32(i), tf: counts[id]})
			counts[id] = [numFields]uint8{}
		}
	}
	a.terms = an.terms
	a.postings = a.postings[:len(a.terms)]
	return a
}

// SearchOptions narrow a search. The zero value searches every server for
// [DefaultLimit] results.
type SearchOptions struct {
	// Server, when set, keeps only the tools of this server.
	Server string
	// Limit is the most results returned; 0 means [DefaultLimit].
	Limit int
}

// Result is one tool that matched a search.
type Result struct {
	Tool  projector.Tool // Server is the indexed server, Name the exposed name
	Score float64        // higher is better; only comparable within one search
}

// coverageExponent sets how much a tool gains by matching more of the
// query's words: the BM25F score is multiplied by the share of the query's
// words (each directly or through a synonym) the tool matched, raised to
// this power. Without it one rare word can outweigh a tool that matches
// everything else the request says.
const coverageExponent = 1.0

// queryTerm is one term of an analysed query and its weight.
type queryTerm struct {
	term   string
	weight float64
	words  uint64 // the query words (bit i: word i) this term stands for
}

// Search returns the tools that best match query, best first; ties go to
// the smaller exposed name. Tools that share no term with the query are
// not returned, so a query of only stop words returns nothing.
func (x *Index) Search(query string, opts SearchOptions) []Result {
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	q, nwords := analyseQuery(query)
	if len(q) == 0 {
		return nil
	}

	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.docs == 0 {
		return nil
	}
	var only *serverDocs
	if opts.Server != "" {
		if only = x.servers[opts.Server]; only == nil {
			return nil
		}
	}
	n := float64(x.docs)
	// base[f] + perLen[f]*length is the BM25 length factor of field f.
	var base, perLen [numFields]float64
	for f := range numFields {
		avg := float64(x.lenSum[f]) / n
		base[f] = 1 - fieldB[f]
		if avg > 0 {
			perLen[f] = fieldB[f] / avg
		}
	}

	sc, _ := x.scratch.Get().(*scratch)
	if sc == nil {
		sc = new(scratch)
	}
	defer x.scratch.Put(sc)
	sc.reset(len(x.slots))
	for _, qt := range q {
		e := x.terms[qt.term]
		if e == nil {
			continue
		}
		df := float64(e.live)
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range e.postings {
			sl := &x.slots[p.slot]
			if sl.gen != p.gen || only != nil && sl.server != only {
				continue
			}
			tf := 0.0
			for f := range numFields {
				if p.tf[f] != 0 {
					tf += fieldWeights[f] * float64(p.tf[f]) / (base[f] + perLen[f]*float64(sl.lens[f]))
				}
			}
			if sc.matched[p.slot] == 0 {
				sc.touched = append(sc.touched, p.slot)
			}
			sc.scores[p.slot] += qt.weight * idf * tf * (k1 + 1) / (k1 + tf)
			sc.matched[p.slot] |= qt.words | 1<<63
		}
	}
	var top []Result
	for _, id := range sc.touched {
		score := sc.scores[id]
		if nwords > 1 {
			covered := bits.OnesCount64(sc.matched[id] &^ (1 << 63))
			score *= math.Pow(float64(covered)/float64(nwords), coverageExponent)
		}
		if score > 0 {
			top = insertTop(top, Result{Tool: x.slots[id].tool(), Score: score}, limit)
		}
	}
	if len(top) == 0 {
		return nil
	}
	return top
}

// scratch is the per-document state of one search, kept between searches
// so that a search allocates little. Bit 63 of matched marks a touched
// document.
type scratch struct {
	scores  []float64
	matched []uint64
	touched []int32
}

// reset clears what the previous search touched and sizes for n slots.
func (s *scratch) reset(n int) {
	for _, id := range s.touched {
		if int(id) < len(s.scores) {
			s.scores[id] = 0
			s.matched[id] = 0
		}
	}
	s.touched = s.touched[:0]
	if len(s.scores) < n {
		s.scores = append(s.scores, make([]float64, n-len(s.scores))...)
		s.matched = append(s.matched, make([]uint64, n-len(s.matched))...)
	}
}

// insertTop inserts r into top, which is sorted best first and holds at
// most limit results.
func insertTop(top []Result, r Result, limit int) []Result {
	if len(top) == limit && compareResults(r, top[len(top)-1]) >= 0 {
		return top
	}
	i, _ := slices.BinarySearchFunc(top, r, compareResults)
	top = slices.Insert(top, i, r)
	if len(top) > limit {
		top = top[:limit]
	}
	return top
}

// compareResults orders by score, descending, then exposed name, then
// server.
func compareResults(a, b Result) int {
	if a.Score != b.Score {
		return -cmp.Compare(a.Score, b.Score)
	}
	return cmp.Or(strings.Compare(a.Tool.Name, b.Tool.Name), strings.Compare(a.Tool.Server, b.Tool.Server))
}

// maxQueryWords is the number of distinct words of a query that count
// for coverage; later words still score.
const maxQueryWords = 63

// analyseQuery returns the weighted terms of a query and the number of
// distinct words they stand for: the query's own terms at weight 1 (once
// each; numbers are values, not words of a tool, and are left out), two
// adjacent words written as one ("stack trace" → "stacktrace", "on call"
// → "oncall") at weight 1, and synonyms at [synonymWeight].
func analyseQuery(query string) ([]queryTerm, int) {
	var q []queryTerm
	idx := map[string]int{}
	add := func(term string, w float64, words uint64) {
		if i, ok := idx[term]; ok {
			q[i].weight = max(q[i].weight, w)
			q[i].words |= words
			return
		}
		idx[term] = len(q)
		q = append(q, queryTerm{term: term, weight: w, words: words})
	}
	wordIdx := map[string]int{}
	wordBit := func(term string) uint64 {
		i, ok := wordIdx[term]
		if !ok {
			i = len(wordIdx)
			wordIdx[term] = i
		}
		if i >= maxQueryWords {
			return 0
		}
		return 1 << i
	}
	raw := strings.FieldsFunc(strings.ToLower(query), func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9')
	})
	var prev string
	var prevBit uint64
	for _, w := range raw {
		var bit uint64
		for _, t := range appendTerms(nil, w) {
			if isDigit(t[0]) {
				continue
			}
			b := wordBit(t)
			bit |= b
			add(t, 1, b)
		}
		if prev != "" && !isDigit(w[0]) && !isDigit(prev[0]) {
			for _, t := range appendTerms(nil, prev+w) {
				add(t, 1, prevBit|bit)
			}
		}
		prev, prevBit = w, bit
	}
	for i := range q {
		if q[i].weight < 1 {
			continue
		}
		for _, e := range expansions[q[i].term] {
			add(e, synonymWeight, q[i].words)
		}
	}
	return q, min(len(wordIdx), maxQueryWords)
}
