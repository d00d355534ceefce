package golden

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/manager"
	"github.com/mcplife/mcplife/projector"
)

// eventLines describes every event of history, one line each, with
// correlation ids renamed c1, c2, … by first appearance.
func (r *runner) eventLines(history []events.Envelope) []string {
	corr := map[string]string{}
	out := make([]string, 0, len(history))
	for _, env := range history {
		line := env.Type
		if id := env.CorrelationID; id != "" {
			if _, ok := corr[id]; !ok {
				corr[id] = "c" + strconv.Itoa(len(corr)+1)
			}
			line += " [" + corr[id] + "]"
		}
		ev, err := events.Decode(env)
		if err != nil {
			line += " (undecodable: " + err.Error() + ")"
		} else if d := events.Describe(ev); d != "" {
			line += " " + d
		}
		out = append(out, r.norm.text(line))
	}
	return out
}

// checkReplay compares the live manager with a view rebuilt from the
// stored history up to the same sequence. Background steps may record
// events meanwhile, so the manager is read until two views agree on their
// sequence.
func (r *runner) checkReplay(when string) {
	r.t.Helper()
	type exposed struct {
		Name, Server, Original string
		Deferred               bool
	}
	var (
		live        *projector.ToolView
		fromManager []exposed
		statuses    map[string]projector.Status
	)
	for attempt := 0; ; attempt++ {
		live = r.m.View()
		fromManager = fromManager[:0]
		for _, t := range r.m.Tools() {
			fromManager = append(fromManager, exposed{t.Name, t.Server, t.Original, t.Deferred})
		}
		statuses = map[string]projector.Status{}
		for _, s := range live.Servers() {
			statuses[s.Name] = r.m.Status(s.Name)
		}
		if r.m.View().LastSeq() == live.LastSeq() {
			break
		}
		if attempt == 100 {
			r.t.Logf("%s: the manager kept recording; replay check skipped", when)
			return
		}
	}
	replay := projector.NewToolView(sessionID)
	for _, env := range r.history() {
		if env.Seq <= live.LastSeq() {
			replay.Apply(env)
		}
	}
	if d := cmp.Diff(live.Servers(), replay.Servers()); d != "" {
		r.t.Errorf("%s: replayed servers differ from the live manager (-live +replay):\n%s", when, d)
	}
	if d := cmp.Diff(live.Tools(), replay.Tools()); d != "" {
		r.t.Errorf("%s: replayed tools differ from the live manager (-live +replay):\n%s", when, d)
	}
	var fromReplay []exposed
	for _, t := range replay.Tools() {
		fromReplay = append(fromReplay, exposed{t.Name, t.Server, t.Original, t.Deferred})
	}
	if d := cmp.Diff(fromManager, fromReplay); d != "" {
		r.t.Errorf("%s: Manager.Tools differs from the replay (-manager +replay):\n%s", when, d)
	}
	for _, s := range replay.Servers() {
		if got := statuses[s.Name]; got != s.Status {
			r.t.Errorf("%s: status of %s: manager %s, replay %s", when, s.Name, got, s.Status)
		}
	}
}

// viewLines describes the manager's servers and tools.
func (r *runner) viewLines() []string {
	v := r.m.View()
	var out []string
	for _, s := range v.Servers() {
		names := make([]string, len(s.Tools))
		for i, d := range s.Tools {
			names[i] = d.Name
		}
		line := fmt.Sprintf("server %s status=%s attempt=%d deferred=%t tools=[%s]", s.Name, s.Status, s.Attempt, s.Deferred, strings.Join(names, " "))
		line += surfaceView(s)
		if s.DisconnectReason != "" {
			line += " disconnect=" + string(s.DisconnectReason)
		}
		if s.Error != "" {
			line += fmt.Sprintf(" error=%q", s.Error)
		}
		out = append(out, r.norm.text(line))
	}
	out = append(out, r.toolLines()...)
	return out
}

// surfaceView describes the resources, templates and prompts of a server
// in the view, for a server that has any.
func surfaceView(s projector.ServerState) string {
	var out string
	list := func(key string, items []string) {
		if len(items) > 0 {
			out += fmt.Sprintf(" %s=[%s]", key, strings.Join(items, " "))
		}
	}
	var uris, templates, prompts []string
	for _, r := range s.Resources {
		uris = append(uris, r.URI)
	}
	for _, t := range s.Templates {
		templates = append(templates, t.URITemplate)
	}
	for _, p := range s.Prompts {
		prompts = append(prompts, p.Name)
	}
	list("resources", uris)
	list("templates", templates)
	list("prompts", prompts)
	return out
}

func (r *runner) toolLines() []string {
	var out []string
	for _, t := range r.m.Tools() {
		line := fmt.Sprintf("tool %s = %s/%s path=%q", t.Name, t.Server, t.Original, t.Path())
		if t.Deferred {
			line += " deferred"
		}
		out = append(out, line)
	}
	if len(out) == 0 {
		out = append(out, "no tools")
	}
	return out
}

// formatConnect describes a ConnectServers or Reload result.
func (r *runner) formatConnect(res *manager.ConnectResult, err error) []string {
	var out []string
	if err != nil {
		out = append(out, "error: "+err.Error())
	}
	if res == nil {
		return out
	}
	if res.Gate.Round != 0 {
		var parts []string
		for _, name := range slices.Sorted(maps.Keys(res.Gate.Outcomes)) {
			parts = append(parts, name+"="+string(res.Gate.Outcomes[name]))
		}
		out = append(out, fmt.Sprintf("gate round=%d outcomes=[%s]", res.Gate.Round, strings.Join(parts, " ")))
	}
	out = append(out, fmt.Sprintf("connected [%s]", strings.Join(res.Connected, " ")))
	for _, name := range slices.Sorted(maps.Keys(res.Errors)) {
		out = append(out, fmt.Sprintf("error %s: %s", name, res.Errors[name]))
	}
	var tools []string
	for _, t := range res.Tools {
		if t.Deferred {
			tools = append(tools, t.Name+"(deferred)")
		} else {
			tools = append(tools, t.Name)
		}
	}
	out = append(out, fmt.Sprintf("tools [%s]", strings.Join(tools, " ")))
	return out
}

func formatCall(res *manager.CallResult) string {
	text := res.Text()
	if len(text) > 300 {
		text = text[:300] + fmt.Sprintf("…(%d bytes)", len(text))
	}
	s := fmt.Sprintf("isError=%t text=%q", res.Result.IsError, text)
	if res.Result.StructuredContent != nil {
		b, err := json.Marshal(res.Result.StructuredContent)
		if err != nil {
			b = []byte(err.Error())
		}
		s += " structured=" + string(b)
	}
	return s
}

// formatRead describes a resources/read result, one line per item.
func formatRead(res *mcp.ReadResourceResult) []string {
	var out []string
	for _, c := range res.Contents {
		out = append(out, fmt.Sprintf("uri=%s mimeType=%s text=%q blob=%d", c.URI, c.MIMEType, c.Text, len(c.Blob)))
	}
	if len(out) == 0 {
		out = append(out, "no contents")
	}
	return out
}

func errText(err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return "ok"
}

// normalizer replaces what differs between runs (temporary directories,
// the test binary, gate paths, ports) with stable names.
type normalizer struct {
	mu    sync.Mutex
	pairs []string // old, new; longest old first when built
	repl  *strings.Replacer
	// patterns are replaced after the pairs (pattern, replacement).
	patterns []*regexp.Regexp
	with     []string
}

// addPattern replaces what re matches by with (regexp.ReplaceAllString).
func (n *normalizer) addPattern(re *regexp.Regexp, with string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.patterns = append(n.patterns, re)
	n.with = append(n.with, with)
}

var (
	portPattern = regexp.MustCompile(`(127\.0\.0\.1|localhost|\[::1\]):[0-9]+`)
	tmpPattern  = regexp.MustCompile(regexp.QuoteMeta(os.TempDir()) + `/[^\s"'\]\)]*`)
)

func newNormalizer(cwd, exe string) *normalizer {
	n := &normalizer{}
	n.add(cwd, "$CWD")
	n.add(exe, "$FIXTURE")
	return n
}

func (n *normalizer) add(old, new string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pairs = append(n.pairs, old, new)
	n.repl = nil
}

func (n *normalizer) addGate(name, path string) { n.add(path, "@"+name) }

func (n *normalizer) text(s string) string {
	n.mu.Lock()
	if n.repl == nil {
		type pair struct{ old, new string }
		ps := make([]pair, 0, len(n.pairs)/2)
		for i := 0; i < len(n.pairs); i += 2 {
			ps = append(ps, pair{n.pairs[i], n.pairs[i+1]})
		}
		slices.SortStableFunc(ps, func(a, b pair) int { return len(b.old) - len(a.old) })
		flat := make([]string, 0, len(n.pairs))
		for _, p := range ps {
			flat = append(flat, p.old, p.new)
		}
		n.repl = strings.NewReplacer(flat...)
	}
	repl := n.repl
	patterns, with := n.patterns, n.with
	n.mu.Unlock()
	s = repl.Replace(s)
	for i, re := range patterns {
		s = re.ReplaceAllString(s, with[i])
	}
	s = tmpPattern.ReplaceAllString(s, "$$TMP")
	return portPattern.ReplaceAllString(s, "$1:$$PORT")
}
