package golden

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcplife/mcplife/events"
)

// Section names of a golden file. The first two are inputs; the others are
// written by -update and compared otherwise.
const (
	sectionConfig  = "config.json"
	sectionScript  = "script"
	sectionEvents  = "events"
	sectionResults = "results"
	sectionView    = "view"
	sectionLog     = "log"
)

// outputSections are compared with the recorded run, in file order.
var outputSections = []string{sectionEvents, sectionResults, sectionView, sectionLog}

// sessionID is the session id every scenario records to.
const sessionID = "golden"

// stepTimeout bounds every wait of a script step, so a scenario whose
// script does not match the manager's behaviour fails instead of hanging.
const stepTimeout = time.Minute

// scenario is the config.json section of a golden file.
type scenario struct {
	// Gate is the manager's startup gate, in Go syntax (default 1m: every
	// outcome of a round is then known before it elapses).
	Gate string `json:"gate"`
	// Reconnect is "off" for a scenario about what a drop does when no
	// reconnect follows; otherwise a reconnect waits, without jitter,
	// until the script's reconnect-now step.
	Reconnect string `json:"reconnect"`
	// Servers are the server configurations a script can connect, by
	// name. A key "NAME#N" is another configuration of server NAME.
	Servers map[string]serverSpec `json:"servers"`
	// Cache seeds the tool cache with a list of tool names per server, as
	// an earlier session would have recorded for the same configuration.
	Cache map[string][]string `json:"cache"`
	// CacheResources and CachePrompts seed the cache with resource URIs
	// and prompt names per server, likewise.
	CacheResources map[string][]string `json:"cacheResources"`
	CachePrompts   map[string][]string `json:"cachePrompts"`
	// CacheTTL gives a server's cached tool list the ttlMs (and public
	// scope) a server of protocol 2026-07-28 would have listed it with;
	// without it the list has no cache hints, as a legacy server's.
	CacheTTL map[string]int64 `json:"cacheTTL"`
	// Share makes the hosts attach their stdio servers to a shared host
	// that the script starts (share-host start).
	Share *shareSpec `json:"share"`
}

// serverSpec is one server of a scenario: an events.ServerConfig (JSON
// field names as in the event's config) plus how to run a fixture for it.
type serverSpec struct {
	events.ServerConfig
	// Fixture, when set, makes the server a fixture with these behaviours
	// (see internal/fixture). A value "@name" after "=" is replaced by the
	// path of the scenario's gate called name.
	Fixture []string `json:"fixture,omitempty"`
	// Serve runs the fixture in the test process over "http" (streamable
	// HTTP) or "sse" instead of as a stdio child; "oauth" makes the server
	// the OAuth-protected MCP server of internal/fixture/oauthfixture (no
	// fixture behaviours), whose logins the "login" step completes.
	Serve string `json:"serve,omitempty"`
	// Source overrides the default source metadata (mcplife, user level).
	Source *events.SourceMeta `json:"source,omitempty"`
}

// step is one line of a scenario's script.
type step struct {
	Line string // as written, trimmed
	Verb string
	Args []string
	Rest string // the text after the verb
	// Async is set for "async ID: STEP": Inner is run in the background
	// under the id in Args[0].
	Inner *step
}

// parseScript parses the script section: one step per line, blank lines
// and lines starting with # ignored.
func parseScript(text string) ([]step, error) {
	var steps []step
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseStep(line)
		if err != nil {
			return nil, fmt.Errorf("script line %d: %w", i+1, err)
		}
		steps = append(steps, s)
	}
	return steps, nil
}

func parseStep(line string) (step, error) {
	verb, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	s := step{Line: line, Verb: verb, Rest: rest, Args: strings.Fields(rest)}
	if verb == "async" {
		id, inner, ok := strings.Cut(rest, ":")
		id = strings.TrimSpace(id)
		if !ok || id == "" || strings.ContainsAny(id, " \t") {
			return s, errors.New(`want "async ID: STEP"`)
		}
		in, err := parseStep(strings.TrimSpace(inner))
		if err != nil {
			return s, err
		}
		if in.Verb == "async" || in.Verb == "join" {
			return s, fmt.Errorf("async %s cannot run in the background", in.Verb)
		}
		s.Args, s.Inner = []string{id}, &in
		return s, nil
	}
	if _, ok := stepVerbs[verb]; !ok {
		return s, fmt.Errorf("unknown step %q (known: %s)", verb, strings.Join(slices.Sorted(maps.Keys(stepVerbs)), ", "))
	}
	return s, nil
}

// stepVerbs lists the steps; the value says whether the step is an action
// (it moves the mark that a later "wait" starts after).
var stepVerbs = map[string]bool{
	"connect":        true,
	"reload":         true,
	"reload-failing": true,
	"disconnect":     true,
	"login":          true,
	"disconnect-all": true,
	"reconnect-now":  true,
	"call":           true,
	"release":        true,
	"subscribe":      true,
	"read":           true,
	"async":          true,
	"reached":        false,
	"wait":           false,
	"wait-gate":      false,
	"join":           false,
	"tools":          false,
	"status":         false,
	"watch-status":   false,
	// Actions or not by their first argument (shareActs).
	"share-host": false,
	"host2":      false,
}
