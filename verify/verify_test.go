package verify_test

import (
	"testing"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/verify"
)

// history builds envelopes with sequential Seq; a string element sets the
// correlation id of the following events.
func history(items ...any) []events.Envelope {
	var out []events.Envelope
	corr := ""
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, it := range items {
		if s, ok := it.(string); ok {
			corr = s
			continue
		}
		env := events.MustNew("s", it.(events.Event), t0.Add(time.Duration(len(out))*time.Millisecond))
		env.Seq = uint64(len(out) + 1)
		env.Version = env.Seq
		env.CorrelationID = corr
		out = append(out, env)
	}
	return out
}

var (
	disc     = &events.ServerDiscovered{Server: "a"}
	start    = &events.ConnectStarted{Server: "a", Round: 1, Attempt: 1}
	conn     = &events.ServerConnected{Server: "a"}
	failed   = &events.ConnectFailed{Server: "a", Error: "x"}
	listed   = &events.ToolsListed{Server: "a", Count: 1}
	gate     = &events.StartupGateElapsed{Round: 1}
	cached   = &events.CachedToolsServed{Server: "a"}
	callS    = &events.ToolCallStarted{Server: "a", Tool: "t"}
	callF    = &events.ToolCallFinished{Server: "a", Tool: "t"}
	disconn  = &events.Disconnected{Server: "a", Reason: events.ReasonRequested}
	closed   = &events.SessionClosed{}
	startedB = &events.ConnectStarted{Server: "b", Round: 1, Attempt: 1}
	discB    = &events.ServerDiscovered{Server: "b"}
	dropped  = &events.Disconnected{Server: "a", Reason: events.ReasonProcessExited, Reconnecting: true}
	sched2   = &events.ReconnectScheduled{Server: "a", Attempt: 2, DelayMs: 500}
	retry2   = &events.ConnectStarted{Server: "a", Attempt: 2}
	sched3   = &events.ReconnectScheduled{Server: "a", Attempt: 3, DelayMs: 1000}
	retry3   = &events.ConnectStarted{Server: "a", Attempt: 3}
	gaveUp   = &events.ReconnectGaveUp{Server: "a", Attempts: 5}
	start9   = &events.ConnectStarted{Server: "a", Round: 2, Attempt: 9}
	attach   = &events.HostAttached{Server: "a", Session: "h", Pid: 7}
	detach   = &events.HostDetached{Server: "a", Session: "h", Pid: 7, Reason: events.DetachRequested}
	idleStop = &events.Disconnected{Server: "a", Reason: events.ReasonIdle}
)

func TestValidHistories(t *testing.T) {
	for name, h := range map[string][]events.Envelope{
		"full lifecycle":                  history(disc, start, conn, listed, gate, "c1", callS, callF, "", disconn, closed),
		"deferred call":                   history(disc, start, gate, cached, "c1", callS, conn, listed, callF, "", closed),
		"reconnect":                       history(disc, start, conn, disconn, disc, &events.ConnectStarted{Server: "a", Round: 2, Attempt: 1}, conn, listed, closed),
		"drop and reconnect":              history(disc, start, conn, dropped, sched2, "c1", callS, "", retry2, conn, listed, "c1", callF, "", closed),
		"failed reconnect, then back":     history(disc, start, conn, dropped, sched2, retry2, failed, sched3, retry3, conn, closed),
		"gave up, explicit connect":       history(disc, start, conn, dropped, sched2, retry2, failed, gaveUp, start9, conn, closed),
		"requested end of a reconnect":    history(disc, start, conn, dropped, sched2, disconn, closed),
		"failed":                          history(disc, start, conn, dropped, sched2, retry2, failed, gaveUp, closed),
		"failed then retry":               history(disc, start, failed, gate, &events.ConnectStarted{Server: "a", Round: 2, Attempt: 2}, conn),
		"in-flight call ends after drop":  history(disc, start, conn, "c1", callS, "", &events.Disconnected{Server: "a", Reason: events.ReasonProcessExited}, "c1", callF, "", closed),
		"open call in an open session":    history(disc, start, conn, "c1", callS),
		"a shared host":                   history(disc, start, conn, listed, gate, attach, attach, "c1", callS, callF, "", detach, detach, disconn, closed),
		"idle stop after the last detach": history(disc, start, conn, attach, attach, detach, detach, idleStop, closed),
		"idle stop, then a new instance":  history(disc, start, conn, attach, detach, idleStop, disc, &events.ConnectStarted{Server: "a", Round: 2, Attempt: 1}, conn, attach, closed),
		"attach while reconnecting":       history(disc, start, conn, attach, dropped, sched2, retry2, attach, conn, detach, detach, closed),
		"needs auth, then login":          history(disc, start, failed, &events.AuthRequired{Server: "a"}, gate, &events.AuthCompleted{Server: "a"}, &events.ConnectStarted{Server: "a", Round: 2, Attempt: 2}, conn, closed),
	} {
		if v := verify.Session("s", h); len(v) != 0 {
			t.Errorf("%s: unexpected violations: %v", name, v)
		}
	}
}

func TestEachInvariantFails(t *testing.T) {
	for _, tc := range []struct {
		rule string
		h    []events.Envelope
		seq  uint64
	}{
		{verify.RuleDiscoveredBeforeConnect, history(start, conn), 1},
		{verify.RuleOutcomeAfterStart, history(disc, conn), 2},
		{verify.RuleOutcomeAfterStart, history(disc, start, conn, failed), 4},
		{verify.RuleListAfterConnected, history(disc, start, listed, conn), 3},
		{verify.RuleGateOncePerRound, history(disc, discB, start, gate, startedB), 5},
		{verify.RuleGateOncePerRound, history(disc, start, gate, gate), 4},
		{verify.RuleCallNeedsServer, history(disc, start, "c1", callS), 3},
		{verify.RuleCallFinishedOnce, history(disc, start, conn, "c1", callS, callF, callF), 6},
		{verify.RuleCallFinishedOnce, history(disc, start, conn, "c1", callS, "", closed), 4},
		{verify.RuleDisconnectAfterConnect, history(disc, disconn), 2},
		{verify.RuleNothingAfterDisconnect, history(disc, start, conn, disconn, listed), 5},
		{verify.RuleNothingAfterDisconnect, history(disc, start, conn, disconn, disconn), 5},
		{verify.RuleAttemptsInOrder, history(disc, start, conn, dropped, sched2, retry3), 6},
		{verify.RuleAttemptsInOrder, history(disc, start, conn, dropped, sched3), 5},
		{verify.RuleNothingAfterGaveUp, history(disc, start, conn, dropped, sched2, retry2, failed, gaveUp, sched3), 9},
		{verify.RuleNothingAfterGaveUp, history(disc, start, conn, dropped, sched2, retry2, failed, gaveUp, retry3), 9},
		{verify.RuleNoReconnectAfterRequest, history(disc, start, conn, disconn, sched2), 5},
		{verify.RuleNoReconnectAfterRequest, history(disc, start, conn, disconn, retry2), 5},
		{verify.RuleAuthAfterFailedConnect, history(disc, start, conn, &events.AuthRequired{Server: "a"}), 4},
		{verify.RuleAttachAfterConnected, history(disc, start, attach, conn), 3},
		{verify.RuleDetachAfterAttach, history(disc, start, conn, attach, detach, detach), 6},
		{verify.RuleIdleStopUnattached, history(disc, start, conn, attach, attach, detach, idleStop), 7},
		{verify.RuleNoReconnectAfterRequest, history(disc, start, conn, attach, detach, idleStop, sched2), 7},
	} {
		v := verify.Session("s", tc.h)
		if len(v) != 1 || v[0].Rule != tc.rule || v[0].Seq != tc.seq {
			t.Errorf("rule %s: got %v, want one violation at seq %d", tc.rule, v, tc.seq)
		}
	}
}

// A RecordingGap explains what it lost: a call open at the gap need not
// finish, and a server's phase after it is whatever its next events say.
// A call outside the gap is still checked.
func TestRecordingGap(t *testing.T) {
	gap := &events.RecordingGap{Dropped: 7}
	for name, h := range map[string][]events.Envelope{
		"finish lost in the gap":    history(disc, start, conn, "c1", callS, "", gap, closed),
		"finish stored after a gap": history(disc, start, conn, "c1", callS, "", gap, "c1", callF, "", closed),
		"drop lost in the gap":      history(disc, start, conn, gap, &events.ConnectStarted{Server: "a", Attempt: 2}, conn, closed),
		"server first seen after":   history(gap, startedB, &events.ServerConnected{Server: "b"}, closed),
		"list after a lost connect": history(disc, start, gap, listed, "c2", callS, callF, "", closed),
	} {
		if v := verify.Session("s", h); len(v) != 0 {
			t.Errorf("%s: unexpected violations: %v", name, v)
		}
	}
	for _, tc := range []struct {
		name, rule string
		h          []events.Envelope
		seq        uint64
	}{
		{"call started after the gap never finishes", verify.RuleCallFinishedOnce, history(disc, start, conn, gap, "c1", callS, "", closed), 5},
		{"finish without a start after the gap", verify.RuleCallFinishedOnce, history(disc, start, conn, gap, "c1", callF, "", closed), 5},
		{"the phase is known again after a connect", verify.RuleListAfterConnected, history(disc, start, conn, gap, &events.ConnectStarted{Server: "a", Attempt: 2}, listed), 6},
	} {
		v := verify.Session("s", tc.h)
		if len(v) != 1 || v[0].Rule != tc.rule || v[0].Seq != tc.seq {
			t.Errorf("%s: got %v, want one %s violation at seq %d", tc.name, v, tc.rule, tc.seq)
		}
	}
}
