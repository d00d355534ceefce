package verify

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/mcplife/mcplife/events"
)

// Rule names, as printed by mcp-audit verify.
const (
	RuleDiscoveredBeforeConnect = "discovered-before-connect"
	RuleOutcomeAfterStart       = "connect-outcome-after-start"
	RuleListAfterConnected      = "list-after-connected"
	RuleGateOncePerRound        = "gate-once-per-round"
	RuleCallNeedsServer         = "call-needs-server"
	RuleCallFinishedOnce        = "call-finished-once"
	RuleDisconnectAfterConnect  = "disconnect-after-connect"
	RuleNothingAfterDisconnect  = "nothing-after-disconnect"
	RuleDecodes                 = "decodes"
	RuleAttemptsInOrder         = "reconnect-attempts-in-order"
	RuleNothingAfterGaveUp      = "nothing-after-gave-up"
	RuleNoReconnectAfterRequest = "no-reconnect-after-requested-disconnect"
	RuleAuthAfterFailedConnect  = "auth-required-after-failed-connect"
	// A shared host's session: a host attaches to an instance that
	// connected, and detaches only after it attached; an instance stops
	// for being idle only with no host attached.
	RuleAttachAfterConnected = "attach-after-connected"
	RuleDetachAfterAttach    = "detach-after-attach"
	RuleIdleStopUnattached   = "idle-stop-unattached"
)

// Violation is one broken invariant, pointing at the offending event.
type Violation struct {
	Seq     uint64 `json:"seq"`
	Session string `json:"session"`
	Type    string `json:"type"`
	Server  string `json:"server,omitempty"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

func (v Violation) String() string {
	return fmt.Sprintf("seq %d %s %s: %s: %s", v.Seq, v.Type, v.Server, v.Rule, v.Message)
}

type phase int

const (
	phaseNone         phase = iota // never started
	phaseConnecting                // ConnectStarted, no outcome yet
	phaseConnected                 // ServerConnected
	phaseFailed                    // ConnectFailed
	phaseDisconnected              // Disconnected
)

type server struct {
	discovered bool
	started    bool // any ConnectStarted so far
	phase      phase
	deferred   bool // CachedToolsServed while connecting
	// reconnecting: a Disconnected with a reconnect to follow, until the
	// server is connected again, given up or ended.
	reconnecting bool
	attempt      int  // the latest ConnectStarted's attempt
	scheduled    int  // the attempt of the pending ReconnectScheduled, 0 if none
	gaveUp       bool // ReconnectGaveUp, until an explicit connect
	requested    bool // the latest Disconnected was asked for (requested, reload)
	// unknown: a RecordingGap came after the last event that set the
	// server's phase, so the events it lost may have changed it. The rules
	// that depend on the phase let the server's next events through until
	// one of them sets the phase again.
	unknown bool
}

type call struct {
	seq    uint64
	server string
	// gapped: a RecordingGap came while the call was open, so its
	// ToolCallFinished may be among the events the gap lost.
	gapped bool
}

// Checker checks one session's history. Not safe for concurrent use.
type Checker struct {
	session    string
	servers    map[string]*server
	gates      map[int64]uint64 // round → seq of its StartupGateElapsed
	calls      map[string]call  // correlation id → open call
	closed     bool
	gapped     bool // a RecordingGap was seen
	violations []Violation
	// attached counts the open attachments of a shared host's session
	// by instance, host session and pid.
	attached map[attachment]int
}

// attachment is one host's use of a shared instance.
type attachment struct {
	server, session string
	pid             int
}

// NewChecker returns a checker for session.
func NewChecker(session string) *Checker {
	return &Checker{
		session:  session,
		servers:  map[string]*server{},
		gates:    map[int64]uint64{},
		calls:    map[string]call{},
		attached: map[attachment]int{},
	}
}

func (c *Checker) srv(name string) *server {
	s := c.servers[name]
	if s == nil {
		// A server first seen after a gap may have lost its first events.
		s = &server{unknown: c.gapped}
		c.servers[name] = s
	}
	return s
}

// attachedTo counts the open attachments of hosts to a shared host's
// instance.
func (c *Checker) attachedTo(server string) int {
	n := 0
	for a, k := range c.attached {
		if a.server == server {
			n += k
		}
	}
	return n
}

func (c *Checker) fail(env events.Envelope, server, rule, format string, args ...any) {
	c.violations = append(c.violations, Violation{
		Seq: env.Seq, Session: env.SessionID, Type: env.Type, Server: server,
		Rule: rule, Message: fmt.Sprintf(format, args...),
	})
}

// Apply checks the next envelope of the session.
func (c *Checker) Apply(env events.Envelope) {
	ev, err := events.Decode(env)
	if err != nil {
		c.fail(env, "", RuleDecodes, "%v", err)
		return
	}
	mark := len(c.violations)
	var unknown *server // the server env is about, when its phase is unknown
	if se, ok := ev.(events.ServerEvent); ok {
		if s := c.srv(se.ServerName()); s.unknown {
			unknown = s
		}
	}
	if unknown != nil {
		defer c.settle(unknown, ev, mark)
	}
	switch e := ev.(type) {
	case *events.SessionClosed:
		c.closed = true
	case *events.RecordingGap:
		c.gapped = true
		for _, s := range c.servers {
			s.unknown = true
		}
		for id, cl := range c.calls {
			cl.gapped = true
			c.calls[id] = cl
		}
	case *events.ServerDiscovered:
		c.srv(e.Server).discovered = true
	case *events.HostAttached:
		if s := c.srv(e.Server); s.phase == phaseNone || s.phase == phaseConnecting && s.attempt <= 1 {
			c.fail(env, e.Server, RuleAttachAfterConnected, "HostAttached of session %s before the instance connected", e.Session)
		}
		c.attached[attachment{e.Server, e.Session, e.Pid}]++
	case *events.HostDetached:
		a := attachment{e.Server, e.Session, e.Pid}
		if c.attached[a] == 0 && !c.gapped {
			c.fail(env, e.Server, RuleDetachAfterAttach, "HostDetached of session %s, pid %d, which is not attached", e.Session, e.Pid)
		} else if c.attached[a]--; c.attached[a] <= 0 {
			delete(c.attached, a)
		}
	case *events.ConnectStarted:
		s := c.srv(e.Server)
		if !s.discovered {
			c.fail(env, e.Server, RuleDiscoveredBeforeConnect, "ConnectStarted without an earlier ServerDiscovered")
		}
		if s.phase == phaseConnecting || s.phase == phaseConnected {
			c.fail(env, e.Server, RuleOutcomeAfterStart, "ConnectStarted while the previous connection is still %s", phaseName(s.phase))
		}
		if gate, ok := c.gates[e.Round]; ok && e.Round != 0 {
			c.fail(env, e.Server, RuleGateOncePerRound, "ConnectStarted of round %d after its StartupGateElapsed (seq %d)", e.Round, gate)
		}
		if e.Round == 0 { // a reconnect attempt, not an explicit connect
			switch {
			case e.Attempt <= s.attempt:
				c.fail(env, e.Server, RuleAttemptsInOrder, "reconnect attempt %d after attempt %d", e.Attempt, s.attempt)
			case s.gaveUp:
				c.fail(env, e.Server, RuleNothingAfterGaveUp, "reconnect attempt %d after ReconnectGaveUp", e.Attempt)
			case s.requested:
				c.fail(env, e.Server, RuleNoReconnectAfterRequest, "reconnect attempt %d after a requested disconnect", e.Attempt)
			case s.scheduled != e.Attempt:
				c.fail(env, e.Server, RuleAttemptsInOrder, "reconnect attempt %d, but attempt %d was scheduled", e.Attempt, s.scheduled)
			}
		} else {
			s.gaveUp, s.reconnecting = false, false
		}
		s.requested, s.scheduled, s.attempt = false, 0, e.Attempt
		s.started, s.phase, s.deferred = true, phaseConnecting, false
	case *events.ServerConnected:
		s := c.srv(e.Server)
		if s.phase != phaseConnecting {
			c.fail(env, e.Server, RuleOutcomeAfterStart, "ServerConnected while %s", phaseName(s.phase))
		}
		s.phase, s.reconnecting = phaseConnected, false
	case *events.ConnectFailed:
		s := c.srv(e.Server)
		if s.phase != phaseConnecting {
			c.fail(env, e.Server, RuleOutcomeAfterStart, "ConnectFailed while %s", phaseName(s.phase))
		}
		s.phase, s.deferred = phaseFailed, false
	case *events.ToolsListed:
		c.needConnected(env, e.Server)
	case *events.ToolsListFailed:
		c.needConnected(env, e.Server)
	case *events.ToolListChanged:
		c.needConnected(env, e.Server)
	case *events.CachedToolsServed:
		s := c.srv(e.Server)
		if s.phase != phaseConnecting && s.phase != phaseConnected {
			c.fail(env, e.Server, RuleNothingAfterDisconnect, "CachedToolsServed while %s", phaseName(s.phase))
		}
		s.deferred = true
	case *events.StartupGateElapsed:
		if prev, ok := c.gates[e.Round]; ok {
			c.fail(env, "", RuleGateOncePerRound, "second StartupGateElapsed for round %d (first at seq %d)", e.Round, prev)
		}
		c.gates[e.Round] = env.Seq
	case *events.ToolCallStarted:
		s := c.srv(e.Server)
		if s.phase != phaseConnected && !(s.phase == phaseConnecting && s.deferred) && !s.reconnecting {
			c.fail(env, e.Server, RuleCallNeedsServer, "ToolCallStarted for %s while %s", e.Tool, phaseName(s.phase))
		}
		if prev, ok := c.calls[env.CorrelationID]; ok {
			c.fail(env, e.Server, RuleCallFinishedOnce, "call %q started again (first at seq %d)", env.CorrelationID, prev.seq)
		}
		c.calls[env.CorrelationID] = call{seq: env.Seq, server: e.Server}
	case *events.ToolCallFinished:
		if _, ok := c.calls[env.CorrelationID]; !ok {
			c.fail(env, e.Server, RuleCallFinishedOnce, "ToolCallFinished for %s without an open ToolCallStarted (correlation %q)", e.Tool, env.CorrelationID)
		}
		delete(c.calls, env.CorrelationID)
	case *events.Disconnected:
		if e.Reason == events.ReasonIdle && !c.gapped {
			if n := c.attachedTo(e.Server); n > 0 {
				c.fail(env, e.Server, RuleIdleStopUnattached, "Disconnected for being idle with %d hosts attached", n)
			}
		}
		s := c.srv(e.Server)
		if !s.started {
			c.fail(env, e.Server, RuleDisconnectAfterConnect, "Disconnected before any ConnectStarted")
		} else if s.phase == phaseDisconnected && !s.reconnecting {
			c.fail(env, e.Server, RuleNothingAfterDisconnect, "Disconnected twice")
		}
		if s.gaveUp {
			c.fail(env, e.Server, RuleNothingAfterGaveUp, "Disconnected after ReconnectGaveUp")
		}
		s.phase, s.deferred, s.reconnecting = phaseDisconnected, false, e.Reconnecting
		s.requested = e.Reason.Chosen()
		s.scheduled = 0
	case *events.ReconnectScheduled:
		s := c.srv(e.Server)
		switch {
		case s.gaveUp:
			c.fail(env, e.Server, RuleNothingAfterGaveUp, "ReconnectScheduled after ReconnectGaveUp")
		case s.requested:
			c.fail(env, e.Server, RuleNoReconnectAfterRequest, "ReconnectScheduled after a requested disconnect")
		case !s.reconnecting:
			c.fail(env, e.Server, RuleOutcomeAfterStart, "ReconnectScheduled without a Disconnected that announced it")
		case e.Attempt != s.attempt+1:
			c.fail(env, e.Server, RuleAttemptsInOrder, "ReconnectScheduled attempt %d after attempt %d", e.Attempt, s.attempt)
		}
		s.scheduled = e.Attempt
	case *events.AuthRequired:
		// It explains the connect that just failed for want of a login,
		// or the connection just ended because its first request met one
		// (a server that lets an unauthenticated connect through).
		if s := c.srv(e.Server); s.phase != phaseFailed && s.phase != phaseDisconnected {
			c.fail(env, e.Server, RuleAuthAfterFailedConnect, "AuthRequired while %s", phaseName(s.phase))
		}
	case *events.ReconnectGaveUp:
		s := c.srv(e.Server)
		// It ends a reconnect, or follows the drop that tripped the breaker.
		if !s.reconnecting && (s.phase != phaseDisconnected || s.requested) {
			c.fail(env, e.Server, RuleOutcomeAfterStart, "ReconnectGaveUp of a server that was not reconnecting")
		}
		s.gaveUp, s.reconnecting, s.scheduled = true, false, 0
	}
}

// phaseRules are the rules that judge an event by its server's phase, which
// the events a RecordingGap lost may have changed.
var phaseRules = map[string]bool{
	RuleDiscoveredBeforeConnect: true,
	RuleOutcomeAfterStart:       true,
	RuleListAfterConnected:      true,
	RuleCallNeedsServer:         true,
	RuleDisconnectAfterConnect:  true,
	RuleNothingAfterDisconnect:  true,
	RuleAttemptsInOrder:         true,
	RuleNothingAfterGaveUp:      true,
	RuleNoReconnectAfterRequest: true,
	RuleAuthAfterFailedConnect:  true,
	RuleAttachAfterConnected:    true,
}

// settle takes back the phase-rule violations that ev, an event about s
// while its phase is unknown after a gap, was found in (those from mark on),
// and ends the unknown phase once ev set it.
func (c *Checker) settle(s *server, ev events.Event, mark int) {
	kept := c.violations[:mark]
	for _, v := range c.violations[mark:] {
		if !phaseRules[v.Rule] {
			kept = append(kept, v)
		}
	}
	c.violations = kept
	switch ev.(type) {
	case *events.ConnectStarted, *events.ServerConnected, *events.ConnectFailed, *events.Disconnected:
		s.unknown = false
	}
}

// needConnected reports env unless server is connected.
func (c *Checker) needConnected(env events.Envelope, name string) {
	s := c.srv(name)
	if s.phase == phaseConnected {
		return
	}
	rule := RuleListAfterConnected
	if s.phase == phaseDisconnected {
		rule = RuleNothingAfterDisconnect
	}
	c.fail(env, name, rule, "%s while %s", env.Type, phaseName(s.phase))
}

// Finish returns every violation found, in sequence order. For a closed
// session, calls still open are violations, except those open at a
// RecordingGap: their ToolCallFinished may be one of the events it lost.
func (c *Checker) Finish() []Violation {
	out := slices.Clone(c.violations)
	if c.closed {
		for _, id := range slices.Sorted(maps.Keys(c.calls)) {
			cl := c.calls[id]
			if cl.gapped {
				continue
			}
			out = append(out, Violation{
				Seq: cl.seq, Session: c.session, Type: events.TypeToolCallStarted, Server: cl.server,
				Rule: RuleCallFinishedOnce, Message: fmt.Sprintf("call %q never finished", id),
			})
		}
	}
	slices.SortStableFunc(out, func(a, b Violation) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

// Session checks a whole history, given in order.
func Session(session string, envs []events.Envelope) []Violation {
	c := NewChecker(session)
	for _, env := range envs {
		c.Apply(env)
	}
	return c.Finish()
}

func phaseName(p phase) string {
	switch p {
	case phaseConnecting:
		return "connecting"
	case phaseConnected:
		return "connected"
	case phaseFailed:
		return "failed"
	case phaseDisconnected:
		return "disconnected"
	}
	return "never started"
}
