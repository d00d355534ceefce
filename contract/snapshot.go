package contract

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/mcplife/mcplife/events"
)

// Surface is what one server listed: its tools, resources, resource
// templates and prompts, each as of its last listing. A kind the server
// was never seen to list is unknown (its Has field false) and is not
// compared by [Compare]; a kind the server did not advertise when it
// connected is known and empty.
type Surface struct {
	Server string
	// Session is the session of the newest listing folded in.
	Session string
	// Seq and Time are those of the newest listing folded in.
	Seq  uint64
	Time time.Time

	Tools     []events.ToolDef
	Resources []events.ResourceDef
	Templates []events.ResourceTemplateDef
	Prompts   []events.PromptDef

	HasTools, HasResources, HasPrompts bool
}

// known reports whether any kind of s is known.
func (s *Surface) known() bool { return s.HasTools || s.HasResources || s.HasPrompts }

// inherit fills the kinds s does not know from prev (the server's
// previous surface), so a history compares each kind with its last known
// listing.
func (s *Surface) inherit(prev *Surface) {
	if prev == nil {
		return
	}
	if !s.HasTools && prev.HasTools {
		s.Tools, s.HasTools = prev.Tools, true
	}
	if !s.HasResources && prev.HasResources {
		s.Resources, s.Templates, s.HasResources = prev.Resources, prev.Templates, true
	}
	if !s.HasPrompts && prev.HasPrompts {
		s.Prompts, s.HasPrompts = prev.Prompts, true
	}
}

// hash identifies the listed contents of s (not where they were seen).
func (s *Surface) hash() string {
	return events.HashList([]any{s.HasTools, s.Tools, s.HasResources, s.Resources, s.Templates, s.HasPrompts, s.Prompts})
}

// Snapshot is the fold of one session's events into the [Surface] of each
// of its servers: the last listing of each kind, per server. Apply it to
// the session's envelopes in order, and stop early for the surface as of
// an earlier point.
//
// What counts as a listing: ToolsListed, ResourcesListed and
// PromptsListed, except lists served from the tool cache (CachedToolsServed
// and lists of cause "cache"), which repeat an earlier session's listing.
// A ServerConnected whose capabilities leave out tools, resources or
// prompts makes that kind known and empty: the server offers none.
//
// A Snapshot is not safe for concurrent use.
type Snapshot struct {
	session string
	servers map[string]*Surface
	lastSeq uint64
}

// NewSnapshot returns an empty snapshot of session; an empty session
// folds the envelopes of every session, as if they were one.
func NewSnapshot(session string) *Snapshot {
	return &Snapshot{session: session, servers: map[string]*Surface{}}
}

// Session returns the session the snapshot folds.
func (s *Snapshot) Session() string { return s.session }

// LastSeq returns the sequence of the last envelope applied.
func (s *Snapshot) LastSeq() uint64 { return s.lastSeq }

// Apply folds env in. Envelopes of another session, of types the
// snapshot does not use, or that do not decode are skipped.
func (s *Snapshot) Apply(env events.Envelope) {
	if s.session != "" && sessionOf(env) != s.session {
		return
	}
	if env.Seq > s.lastSeq {
		s.lastSeq = env.Seq
	}
	switch env.Type {
	case events.TypeToolsListed, events.TypeResourcesListed, events.TypePromptsListed, events.TypeServerConnected:
	default:
		return
	}
	ev, err := events.Decode(env)
	if err != nil {
		return
	}
	switch e := ev.(type) {
	case *events.ServerConnected:
		caps := capabilities(e.Capabilities)
		if caps == nil {
			return
		}
		sf := s.surface(e.Server)
		if _, ok := caps["tools"]; !ok {
			sf.Tools, sf.HasTools = nil, true
		}
		if _, ok := caps["resources"]; !ok {
			sf.Resources, sf.Templates, sf.HasResources = nil, nil, true
		}
		if _, ok := caps["prompts"]; !ok {
			sf.Prompts, sf.HasPrompts = nil, true
		}
		s.seen(sf, env)
	case *events.ToolsListed:
		if e.Cause == events.CauseCache {
			return
		}
		sf := s.surface(e.Server)
		sf.Tools, sf.HasTools = e.Tools, true
		s.seen(sf, env)
	case *events.ResourcesListed:
		if e.Cause == events.CauseCache {
			return
		}
		sf := s.surface(e.Server)
		sf.Resources, sf.Templates, sf.HasResources = e.Resources, e.Templates, true
		s.seen(sf, env)
	case *events.PromptsListed:
		if e.Cause == events.CauseCache {
			return
		}
		sf := s.surface(e.Server)
		sf.Prompts, sf.HasPrompts = e.Prompts, true
		s.seen(sf, env)
	}
}

func (s *Snapshot) surface(server string) *Surface {
	sf := s.servers[server]
	if sf == nil {
		sf = &Surface{Server: server}
		s.servers[server] = sf
	}
	return sf
}

func (s *Snapshot) seen(sf *Surface, env events.Envelope) {
	sf.Session, sf.Seq, sf.Time = sessionOf(env), env.Seq, env.Time
}

// Servers returns the surface of every server that listed something,
// sorted by name. The surfaces are the snapshot's own: do not change them.
func (s *Snapshot) Servers() []*Surface {
	out := make([]*Surface, 0, len(s.servers))
	for _, sf := range s.servers {
		if sf.known() {
			out = append(out, sf)
		}
	}
	slices.SortFunc(out, func(a, b *Surface) int { return strings.Compare(a.Server, b.Server) })
	return out
}

// Server returns the surface of one server, and whether it listed
// anything.
func (s *Snapshot) Server(name string) (*Surface, bool) {
	sf, ok := s.servers[name]
	if !ok || !sf.known() {
		return nil, false
	}
	return sf, true
}

// capabilities decodes a recorded capabilities object; nil when none was
// recorded (then nothing can be said about what the server offers).
func capabilities(raw json.RawMessage) map[string]json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var caps map[string]json.RawMessage
	if json.Unmarshal(raw, &caps) != nil {
		return nil
	}
	for k, v := range caps {
		if string(v) == "null" {
			delete(caps, k)
		}
	}
	return caps
}

func sessionOf(env events.Envelope) string {
	if env.SessionID != "" {
		return env.SessionID
	}
	return env.Stream
}

// History is the fold of every session's events into the successive
// surfaces of one server: one per session that listed it, each the
// server's surface at the end of that session, with the kinds the session
// did not list carried over from the one before. Consecutive surfaces
// that list the same are kept once (the newest of them), so
// [History.Steps] compares each pair of distinct listings.
//
// A History is not safe for concurrent use.
type History struct {
	server string
	since  time.Time
	order  []string            // sessions in the order they first listed the server
	snaps  map[string]*Surface // session -> its surface of the server
	last   uint64
}

// NewHistory returns the history of server. With a non-zero since, the
// history starts with the server's last surface before since (the
// baseline the first change is measured from) and keeps every later one.
func NewHistory(server string, since time.Time) *History {
	return &History{server: server, since: since, snaps: map[string]*Surface{}}
}

// LastSeq returns the sequence of the last envelope applied.
func (h *History) LastSeq() uint64 { return h.last }

// Apply folds env in; envelopes about other servers are skipped.
func (h *History) Apply(env events.Envelope) {
	if env.Seq > h.last {
		h.last = env.Seq
	}
	switch env.Type {
	case events.TypeToolsListed, events.TypeResourcesListed, events.TypePromptsListed, events.TypeServerConnected:
	default:
		return
	}
	session := sessionOf(env)
	one := &Snapshot{session: session, servers: map[string]*Surface{}}
	if prev := h.snaps[session]; prev != nil {
		one.servers[h.server] = prev
	}
	one.Apply(env)
	sf, ok := one.Server(h.server)
	if !ok {
		return
	}
	if h.snaps[session] == nil {
		h.order = append(h.order, session)
		h.snaps[session] = sf
	}
}

// Step is one change of a server's surface: the listing before, the one
// after, and what changed between them.
type Step struct {
	From, To *Surface
	Changes  []Change
}

// Steps returns each pair of consecutive distinct surfaces of the server
// with the changes between them, oldest first.
func (h *History) Steps() []Step {
	var list []*Surface
	var prev *Surface
	for _, session := range h.order {
		cur := *h.snaps[session]
		cur.inherit(prev)
		if !h.since.IsZero() && cur.Time.Before(h.since) {
			// Only the newest surface before since is kept, as baseline.
			list = list[:0]
		}
		switch {
		case len(list) > 0 && list[len(list)-1].hash() == cur.hash():
			// The same listing again: the newest session that listed it
			// is where a change starts from.
			list[len(list)-1] = &cur
		default:
			list = append(list, &cur)
		}
		prev = &cur
	}
	var steps []Step
	for i := 1; i < len(list); i++ {
		steps = append(steps, Step{From: list[i-1], To: list[i], Changes: Compare(list[i-1], list[i])})
	}
	return steps
}
