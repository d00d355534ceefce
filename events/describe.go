package events

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Describe returns a one-line, deterministic summary of ev: its server and
// the fields that matter, without times or durations (see [DurationOf]).
// It never includes secrets: configs in events are already redacted, and
// env and header values are not printed at all.
func Describe(ev Event) string {
	switch e := ev.(type) {
	case *SessionStarted:
		return fmt.Sprintf("cwd=%s gate=%s", e.Cwd, e.Gate)
	case *SessionClosed:
		return kv("reason", e.Reason)
	case *DiscoveryFailed:
		return fmt.Sprintf("path=%s error=%q", e.Path, e.Error)
	case *ServerDiscovered:
		return fmt.Sprintf("%s transport=%s source=%s/%s", e.Server, e.Transport, e.Source.Provider, e.Source.Level)
	case *ServerSkipped:
		return fmt.Sprintf("%s reason=%s%s", e.Server, e.Reason, kv(" detail", e.Detail))
	case *ServerInvalid:
		return fmt.Sprintf("%s error=%q", e.Server, e.Error)
	case *ConnectStarted:
		return fmt.Sprintf("%s transport=%s attempt=%d round=%d", e.Server, e.Transport, e.Attempt, e.Round)
	case *ServerConnected:
		return fmt.Sprintf("%s protocol=%s%s%s%s", e.Server, e.ProtocolVersion, kv(" peer", e.PeerName), kv(" transport", e.Transport), kv(" instance", e.SharedInstance))
	case *ConnectFailed:
		return fmt.Sprintf("%s timedOut=%t error=%q", e.Server, e.TimedOut, e.Error)
	case *ToolsListed:
		return fmt.Sprintf("%s cause=%s count=%d tools=%s", e.Server, e.Cause, e.Count, toolNames(e.Tools)) + e.CacheHints.describe()
	case *ServerEraDetected:
		s := fmt.Sprintf("%s era=%s protocol=%s", e.Server, e.Era, e.ProtocolVersion)
		if len(e.SupportedVersions) > 0 {
			s += " supported=[" + strings.Join(e.SupportedVersions, " ") + "]"
		}
		return s + CacheHints{TTLMs: e.TTLMs, CacheScope: e.CacheScope}.describe()
	case *ToolsListFailed:
		return fmt.Sprintf("%s error=%q", e.Server, e.Error)
	case *StartupGateElapsed:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(e.Outcomes)) {
			parts = append(parts, k+"="+string(e.Outcomes[k]))
		}
		return fmt.Sprintf("round=%d outcomes=[%s]", e.Round, strings.Join(parts, " "))
	case *CachedToolsServed:
		return fmt.Sprintf("%s count=%d tools=%s", e.Server, e.Count, toolNames(e.Tools))
	case *ToolListChanged:
		return e.Server
	case *ToolCallStarted:
		return fmt.Sprintf("%s tool=%s deferred=%t", e.Server, e.Tool, e.Deferred)
	case *ToolCallFinished:
		s := fmt.Sprintf("%s tool=%s isError=%t", e.Server, e.Tool, e.IsError)
		if e.Cancelled {
			s += " cancelled=true"
		}
		if e.Retried {
			s += " retried=true"
		}
		if e.Truncated {
			s += fmt.Sprintf(" truncated=true outputBytes=%d", e.OutputBytes)
		}
		if e.InputRounds > 0 {
			s += fmt.Sprintf(" inputRounds=%d", e.InputRounds)
		}
		return s + kvq(" error", e.Error)
	case *Disconnected:
		s := fmt.Sprintf("%s reason=%s", e.Server, e.Reason)
		if e.ExitStatus != nil {
			s += fmt.Sprintf(" exit=%d", *e.ExitStatus)
		}
		if e.Reconnecting {
			s += " reconnecting=true"
		}
		return s + kvq(" error", e.Error)
	case *ReconnectScheduled:
		return fmt.Sprintf("%s attempt=%d delayMs=%d cause=%q", e.Server, e.Attempt, e.DelayMs, e.Cause)
	case *ReconnectGaveUp:
		return fmt.Sprintf("%s attempts=%d lastError=%q", e.Server, e.Attempts, e.LastError)
	case *HostResumed:
		return fmt.Sprintf("sleptMs=%d", e.SleptMs)
	case *HostAttached:
		return fmt.Sprintf("%s session=%s pid=%d", e.Server, e.Session, e.Pid)
	case *HostDetached:
		return fmt.Sprintf("%s session=%s pid=%d%s", e.Server, e.Session, e.Pid, kv(" reason", e.Reason))
	case *ConfigChanged:
		s := fmt.Sprintf("paths=[%s]", strings.Join(e.Paths, " "))
		for _, l := range []struct {
			k string
			v []string
		}{{"added", e.Added}, {"changed", e.Changed}, {"removed", e.Removed}} {
			if len(l.v) > 0 {
				s += fmt.Sprintf(" %s=[%s]", l.k, strings.Join(l.v, " "))
			}
		}
		return s + kvq(" error", e.Error)
	case *ProcessesSeen:
		return fmt.Sprintf("%s pids=%s", e.Server, pidList(e.Pids))
	case *SessionAbandoned:
		return fmt.Sprintf("session=%s detectedBy=%s", e.Session, e.DetectedBy)
	case *OrphansReaped:
		return fmt.Sprintf("session=%s pids=%s", e.Session, pidList(e.Pids))
	case *RecordingGap:
		return fmt.Sprintf("dropped=%d", e.Dropped)
	case *ServerLog:
		s := fmt.Sprintf("%s level=%s%s", e.Server, e.Level, kv(" logger", e.Logger))
		if e.Dropped > 0 {
			s += fmt.Sprintf(" dropped=%d", e.Dropped)
		}
		return s + fmt.Sprintf(" text=%q", e.Text)
	case *ElicitationRequested:
		return fmt.Sprintf("%s mode=%s fields=%d", e.Server, e.Mode, e.Fields)
	case *ElicitationAnswered:
		return fmt.Sprintf("%s action=%s fields=%d", e.Server, e.Action, e.Fields) + kvq(" error", e.Error)
	case *SamplingRequested:
		return fmt.Sprintf("%s messages=%d maxTokens=%d", e.Server, e.Messages, e.MaxTokens)
	case *SamplingAnswered:
		return fmt.Sprintf("%s%s%s", e.Server, kv(" model", e.Model), kv(" stopReason", e.StopReason)) + kvq(" error", e.Error)
	case *ResourcesListed:
		names := make([]string, len(e.Resources))
		for i, r := range e.Resources {
			names[i] = r.URI
		}
		s := fmt.Sprintf("%s cause=%s count=%d resources=[%s]", e.Server, e.Cause, e.Count, strings.Join(names, " "))
		if len(e.Templates) > 0 {
			tpls := make([]string, len(e.Templates))
			for i, t := range e.Templates {
				tpls[i] = t.URITemplate
			}
			s += " templates=[" + strings.Join(tpls, " ") + "]"
		}
		return s + e.CacheHints.describe()
	case *PromptsListed:
		names := make([]string, len(e.Prompts))
		for i, p := range e.Prompts {
			names[i] = p.Name
		}
		return fmt.Sprintf("%s cause=%s count=%d prompts=[%s]", e.Server, e.Cause, e.Count, strings.Join(names, " ")) + e.CacheHints.describe()
	case *ResourceRead:
		return fmt.Sprintf("%s uri=%s contents=%d", e.Server, e.URI, e.Contents) + kvq(" error", e.Error)
	case *PromptRetrieved:
		return fmt.Sprintf("%s prompt=%s messages=%d", e.Server, e.Prompt, e.Messages) + kvq(" error", e.Error)
	case *ResourceUpdated:
		s := fmt.Sprintf("%s uri=%s", e.Server, e.URI)
		if e.Coalesced > 0 {
			s += fmt.Sprintf(" coalesced=%d", e.Coalesced)
		}
		return s
	case *ServerMessagesLimited:
		return fmt.Sprintf("%s%s%s", e.Server, countList(" declined", e.Declined), countList(" ignored", e.Ignored))
	case *ReloadRequested:
		return fmt.Sprintf("servers=%d", e.Servers)
	case *ReloadCompleted:
		return fmt.Sprintf("servers=%d failed=%d tools=%d", e.Servers, e.Failed, e.Tools)
	case *ToolsActivated:
		return fmt.Sprintf("by=%s count=%d tools=[%s]", e.By, len(e.Tools), strings.Join(e.Tools, " "))
	case *AuthRequired:
		return fmt.Sprintf("%s%s scopes=[%s]", e.Server, kv(" issuer", e.Issuer), strings.Join(e.Scopes, " "))
	case *AuthCompleted:
		return fmt.Sprintf("%s%s%s scopes=[%s]", e.Server, kv(" grant", e.Grant), kv(" issuer", e.Issuer), strings.Join(e.Scopes, " "))
	case *AuthFailed:
		return fmt.Sprintf("%s error=%q", e.Server, e.Error)
	case *Unknown:
		return fmt.Sprintf("(unknown schema %d) %s", e.Schema, e.Data)
	}
	return ""
}

// DurationOf returns the duration an event reports, if it has one.
func DurationOf(ev Event) (time.Duration, bool) {
	switch e := ev.(type) {
	case *ServerConnected:
		return e.Duration, true
	case *ConnectFailed:
		return e.Duration, true
	case *ToolsListed:
		return e.Duration, true
	case *ToolsListFailed:
		return e.Duration, true
	case *StartupGateElapsed:
		return e.Elapsed, true
	case *ToolCallFinished:
		return e.Duration, true
	case *ReloadCompleted:
		return e.Duration, true
	case *ElicitationAnswered:
		return e.Duration, true
	case *ResourceRead:
		return e.Duration, true
	case *PromptRetrieved:
		return e.Duration, true
	case *ResourcesListed:
		return e.Duration, true
	case *PromptsListed:
		return e.Duration, true
	case *SamplingAnswered:
		return e.Duration, true
	case *RecordingGap:
		return e.To.Sub(e.From), true
	}
	return 0, false
}

// ServerOf returns the server an event is about, or "".
func ServerOf(ev Event) string {
	if s, ok := ev.(ServerEvent); ok {
		return s.ServerName()
	}
	return ""
}

func toolNames(defs []ToolDef) string {
	const max = 8
	names := make([]string, 0, min(len(defs), max))
	for i, d := range defs {
		if i == max {
			names = append(names, fmt.Sprintf("…+%d", len(defs)-max))
			break
		}
		names = append(names, d.Name)
	}
	return "[" + strings.Join(names, " ") + "]"
}

func kv(k, v string) string {
	if v == "" {
		return ""
	}
	return k + "=" + v
}

func kvq(k, v string) string {
	if v == "" {
		return ""
	}
	return fmt.Sprintf("%s=%q", k, v)
}

// pidList writes processes as [pid pid …].
func pidList(ps []ProcessRef) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprint(p.Pid)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// countList renders counts by name as " key=[a:1 b:2]", names sorted, or
// "" when there are none.
func countList(key string, counts map[string]int) string {
	if len(counts) == 0 {
		return ""
	}
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	sortStrings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s:%d", n, counts[n])
	}
	return key + "=[" + strings.Join(parts, " ") + "]"
}

// describe returns the hints as " ttlMs=N scope=S", or "" when there are
// none (lists of the legacy era).
func (h CacheHints) describe() string {
	s := ""
	if h.TTLMs > 0 {
		s += fmt.Sprintf(" ttlMs=%d", h.TTLMs)
	}
	return s + kv(" scope", h.CacheScope)
}
