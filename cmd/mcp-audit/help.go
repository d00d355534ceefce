package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"
)

// commandHelp is what `CMD --help` prints beside the flags: the usage
// line (after "mcp-audit "), a paragraph on what the command does, and
// examples (each a whole command line).
type commandHelp struct {
	usage    string
	about    string
	examples []string
}

// helps holds the help of every visible command and of auth's
// subcommands (keyed "auth login"), by flag set name.
var helps = map[string]commandHelp{
	"demo": {
		usage:    "demo",
		about:    "A zero-setup tour: writes a temporary project whose config names four example servers (this binary, re-executed), runs two lifecycles (the second served from the tool cache), calls tools, reloads and prints the replay. Events go to the default store (or --db).",
		examples: []string{"mcp-audit demo", "mcp-audit --db /tmp/demo.db demo"},
	},
	"run": {
		usage:    "run [flags]",
		about:    "Discover MCP servers from the project (--cwd), the home directory and --config files, connect them like an agent runtime, print the startup gate's outcome and the server table, then a line per change until Ctrl-C, which tears every server down. On a terminal it shows each server as it connects while the gate is open. With --once it waits for late servers (up to --settle), prints, tears down and exits: 1 when no server connected or the call failed, or with --strict when any server failed.",
		examples: []string{"mcp-audit run --once --cwd ~/src/project", "mcp-audit run --once --call mcp_everything_echo --args '{\"message\":\"hi\"}'"},
	},
	"discover": {
		usage:    "discover [flags]",
		about:    "Show what would be connected: each server with its transport, target and source, and every skipped, shadowed or invalid entry with its reason. Connects nothing. Exit 2 when a config file could not be read.",
		examples: []string{"mcp-audit discover --cwd ~/src/project", "mcp-audit discover --json --no-project-config"},
	},
	"daemon": {
		usage:    "daemon [flags]",
		about:    "Run the user's shared host: one process of each stdio server for every `run --share` (and every program with session.Options.Share) of this user whose server config, resolved values, working directory and roots are the same. It listens on a Unix socket only this user can reach, records the servers, the hosts that attach and detach and the calls made through it in a session of its own, stops a server --idle after its last host detached, and exits when it has neither servers nor hosts. A host that finds none starts one itself, so running it by hand is optional. Prints ready (or running, when another shared host listens already) once it listens.",
		examples: []string{"mcp-audit daemon", "mcp-audit daemon --idle 30m"},
	},
	"proxy": {
		usage:    "proxy SERVER [flags]",
		about:    "A stdio MCP server that relays one server of the discovered configs (--cwd, --config) through the user's shared host (started when none runs): the server's name, version, instructions, capabilities and tools as it lists them, list changes and progress. Put it in an agent's config (Claude Code, Codex, Cursor) in place of the server's command, and every agent session of the user shares one process of the server, recorded in the proxy's session and the shared host's. Only stdio servers are shared.",
		examples: []string{"mcp-audit proxy github --config ~/.config/mcplife/servers.json", "claude mcp add github -- mcp-audit proxy github --cwd ~/src/project"},
	},
	"sessions": {
		usage:    "sessions",
		about:    "List the recorded sessions: id, host, start, duration, working directory, servers, tools and failures.",
		examples: []string{"mcp-audit sessions", "mcp-audit sessions --json"},
	},
	"replay": {
		usage:    "replay SESSION|last [flags]",
		about:    "Print a session's events in order, with times relative to its first event. SESSION is an id, a unique prefix of one, or last.",
		examples: []string{"mcp-audit replay last", "mcp-audit replay 20261130T101500 --follow", "mcp-audit replay last --transcript"},
	},
	"mock": {
		usage:    "mock SESSION --server NAME [flags]",
		about:    "Serve what a recorded server listed (tools with their schemas, annotations and icons, resources, templates, prompts, instructions) as a real MCP server, on stdin/stdout or over streamable HTTP with --http, so a host can be tested offline. With the server's transcript (record \"transcript\") a call is answered with the result recorded for the same tool and arguments (canonical JSON); any other call gets an error result saying no recording matches.",
		examples: []string{"mcp-audit mock last --server github", "mcp-audit mock last --server github --http 127.0.0.1:8931"},
	},
	"search": {
		usage:    "search QUERY [flags]",
		about:    "Discover and connect like run --once (cached tools of servers still connecting count), rank every tool for QUERY, print the best and tear down. The query is never recorded.",
		examples: []string{"mcp-audit search 'read a file' --limit 5"},
	},
	"diff": {
		usage:    "diff A B [flags] | diff --server NAME [--since TIME] [flags]",
		about:    "Compare what servers listed in session A against session B (ids, prefixes, last, last~N): tools with their schemas and annotations, resources, templates and prompts added, removed and changed, each change named by its JSON pointer and classed breaking or not. With --server and no sessions, walk that server's history instead. --fail-on breaking exits 1 when a change is breaking.",
		examples: []string{"mcp-audit diff last~1 last --fail-on breaking", "mcp-audit diff --server git --since 168h --json"},
	},
	"export": {
		usage:    "export SESSION -o FILE.html|FILE.json",
		about:    "Write one self-contained report of a session: the startup timeline, a server table, the tool calls with durations and outcomes, and every event with a filter. The HTML loads nothing from the network.",
		examples: []string{"mcp-audit export last -o report.html", "mcp-audit export last~1 -o report.json"},
	},
	"inspect": {
		usage:    "inspect SESSION|last --at TIME | --seq N [flags]",
		about:    "Show every server's status and the tool view of a session as of one point: TIME is RFC 3339 or an offset from the session's start (300ms, +1.5s); N a global sequence number.",
		examples: []string{"mcp-audit inspect last --at 260ms", "mcp-audit inspect last --seq 12 --json"},
	},
	"verify": {
		usage:    "verify [SESSION|last | --all] [flags]",
		about:    "Check the lifecycle ordering invariants of a session (default: the newest) or of every session; print each violating event and exit 1 when one fails.",
		examples: []string{"mcp-audit verify", "mcp-audit verify --all --json"},
	},
	"auth": {
		usage:    "auth login SERVER | status | logout SERVER [flags]",
		about:    "Manage the OAuth tokens of remote servers: login runs the browser flow and stores the token, status lists the configured remote servers, logout revokes and deletes a token. Run mcp-audit help auth SUBCOMMAND for the flags of each.",
		examples: []string{"mcp-audit auth login notion", "mcp-audit auth status --json"},
	},
	"auth login": {
		usage:    "auth login SERVER [flags]",
		about:    "Run the OAuth login of a remote server: opens the browser and stores the token it returns.",
		examples: []string{"mcp-audit auth login notion --cwd ~/src/project"},
	},
	"auth status": {
		usage:    "auth status [flags]",
		about:    "List the configured remote servers with their token status (authenticated, needs-auth or none), expiry and scopes.",
		examples: []string{"mcp-audit auth status", "mcp-audit auth status --json"},
	},
	"auth logout": {
		usage:    "auth logout SERVER [flags]",
		about:    "Revoke (where the server can) and delete the stored token of a remote server.",
		examples: []string{"mcp-audit auth logout notion"},
	},
	"timeline": {
		usage:    "timeline SESSION|last -o FILE.svg|FILE.html [flags]",
		about:    "Draw the startup waterfall of a session: one row per server with its connect and tools/list bars, failures, cached tools and the startup gate.",
		examples: []string{"mcp-audit timeline last -o startup.html"},
	},
	"version": {
		usage:    "version",
		about:    "Print mcp-audit's module version, its VCS revision and time when built from a checkout, and the Go version.",
		examples: []string{"mcp-audit version", "mcp-audit --version"},
	},
}

// authSubcommands are the subcommands of auth.
var authSubcommands = []string{"login", "status", "logout"}

// globalFlagNames are the flags every flag set from newFlagSet holds.
var globalFlagNames = []string{"db", "bus", "json"}

// helpError asks for the help of the command whose flag set is fs; Run
// prints it to stdout and exits 0. It wraps [flag.ErrHelp].
type helpError struct{ fs *flag.FlagSet }

func (e helpError) Error() string { return flag.ErrHelp.Error() }
func (e helpError) Unwrap() error { return flag.ErrHelp }

// isHelpArg reports whether arg asks for help.
func isHelpArg(arg string) bool {
	switch arg {
	case "-h", "--h", "-help", "--help", "help":
		return true
	}
	return false
}

// printHelp prints the help of the command whose flag set is fs: usage,
// what it does, its own flags, the global flags and examples.
func printHelp(w io.Writer, fs *flag.FlagSet) {
	name := fs.Name()
	h, ok := helps[name]
	if !ok {
		h = commandHelp{usage: name + " [flags]"}
	}
	fmt.Fprintf(w, "usage: mcp-audit %s\n", h.usage)
	if h.about != "" {
		fmt.Fprintf(w, "\n%s\n", wrapText(h.about, 78))
	}
	var own, global []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if slices.Contains(globalFlagNames, f.Name) {
			global = append(global, f)
		} else {
			own = append(own, f)
		}
	})
	if len(own) > 0 {
		fmt.Fprintln(w, "\nflags:")
		printFlags(w, own)
	}
	if len(global) > 0 {
		fmt.Fprintln(w, "\nglobal flags (before or after the command):")
		printFlags(w, global)
	}
	if len(h.examples) > 0 {
		fmt.Fprintln(w, "\nexamples:")
		for _, e := range h.examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

// valueNames name the value of flags whose usage does not (a backquoted
// word in the usage names it otherwise).
var valueNames = map[string]string{
	"db": "PATH", "bus": "URL", "cwd": "DIR", "args": "JSON", "prompt-args": "JSON",
	"elicit": "MODE", "at": "TIME", "seq": "N", "o": "FILE", "server": "SERVER",
}

// printFlags prints one line per flag: its double-dash form with the
// name of its value, its usage and its default, wrapped under the usage
// column.
func printFlags(w io.Writer, flags []*flag.Flag) {
	forms := make([]string, len(flags))
	width := 0
	for i, f := range flags {
		value, _ := flag.UnquoteUsage(f)
		if v, ok := valueNames[f.Name]; ok {
			value = v
		}
		forms[i] = flagName(f.Name)
		if value != "" {
			forms[i] += " " + strings.ToUpper(value)
		}
		width = max(width, len(forms[i]))
	}
	for i, f := range flags {
		_, usage := flag.UnquoteUsage(f)
		if def := flagDefault(f); def != "" {
			usage += " (default " + def + ")"
		}
		if isBoolFlag(f) && f.DefValue == "true" {
			usage += "; " + flagName(f.Name) + "=false turns it off"
		}
		lines := strings.Split(wrapText(usage, max(40, 96-width-4)), "\n")
		fmt.Fprintf(w, "  %-*s  %s\n", width, forms[i], lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "  %-*s  %s\n", width, "", l)
		}
	}
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// flagName is how a flag is written: --name, or -x for one letter.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// flagDefault is the default of f worth printing ("" for an empty, zero
// or false one: a flag that is off unless given).
func flagDefault(f *flag.Flag) string {
	switch f.DefValue {
	case "", "0", "false", "0s", "[]":
		return ""
	}
	return f.DefValue
}

// wrapText breaks s into lines of at most width runes at spaces.
func wrapText(s string, width int) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(s) {
		if i > 0 {
			if n+1+len(word) > width {
				b.WriteByte('\n')
				n = 0
			} else {
				b.WriteByte(' ')
				n++
			}
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}

// The messages of the flag package, rewritten by flagError.
var (
	reUndefined = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	reNeedsArg  = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
	reBadValue  = regexp.MustCompile(`^invalid value "((?:[^"\\]|\\.)*)" for flag -+([^:]*): (.*)$`)
	reBadBool   = regexp.MustCompile(`^invalid boolean value "((?:[^"\\]|\\.)*)" for -+([^:]*): (.*)$`)
	reBadSyntax = regexp.MustCompile(`^bad flag syntax: (.*)$`)
)

// flagError rewrites an error of fs.Parse so that it names flags in
// their double-dash form, suggests a flag for an unknown one, and says
// what a bad value should look like.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if m := reUndefined.FindStringSubmatch(msg); m != nil {
		name, _, _ := strings.Cut(m[1], "=")
		out := fmt.Sprintf("unknown flag %s", flagName(name))
		if s := suggest(name, flagNames(fs)); s != "" {
			out += fmt.Sprintf(" (did you mean %s?)", flagName(s))
		}
		return errors.New(out + helpHint(fs))
	}
	if m := reNeedsArg.FindStringSubmatch(msg); m != nil {
		f := fs.Lookup(m[1])
		example := ""
		if f != nil {
			example = exampleValue(f)
		}
		if example != "" {
			return fmt.Errorf("%s needs a value (e.g. %s)", flagName(m[1]), example)
		}
		return fmt.Errorf("%s needs a value", flagName(m[1]))
	}
	if m := reBadValue.FindStringSubmatch(msg); m != nil {
		value, name, cause := m[1], m[2], m[3]
		f := fs.Lookup(name)
		if f == nil {
			return fmt.Errorf("%s: invalid value %q: %s", flagName(name), value, cause)
		}
		kind := flagKind(f)
		if example := exampleValue(f); example != "" {
			return fmt.Errorf("%s: invalid %s %q (e.g. %s)", flagName(name), kind, value, example)
		}
		return fmt.Errorf("%s: invalid value %q: %s", flagName(name), value, cause)
	}
	if m := reBadBool.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%s: invalid boolean %q (e.g. %s=true, %s=false)", flagName(m[2]), m[1], flagName(m[2]), flagName(m[2]))
	}
	if m := reBadSyntax.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("bad flag syntax: %s", m[1])
	}
	return err
}

// helpHint points at the command's help.
func helpHint(fs *flag.FlagSet) string {
	if fs.Name() == "mcp-audit" {
		return "; see mcp-audit --help"
	}
	return fmt.Sprintf("; see mcp-audit %s --help", fs.Name())
}

// flagKind names the type of f's value, for messages.
func flagKind(f *flag.Flag) string {
	getter, ok := f.Value.(flag.Getter)
	if !ok {
		return "value"
	}
	switch getter.Get().(type) {
	case time.Duration:
		return "duration"
	case int, int64, uint, uint64:
		return "number"
	case bool:
		return "boolean"
	}
	return "value"
}

// exampleValue gives example values of f's type, or "".
func exampleValue(f *flag.Flag) string {
	switch flagKind(f) {
	case "duration":
		return "250ms, 5s"
	case "number":
		if f.DefValue != "" && f.DefValue != "0" {
			return f.DefValue
		}
		return "10"
	}
	return ""
}

// flagNames lists the names of fs's flags.
func flagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

// suggest returns the candidate closest to s when it is close enough to
// be a typo of it (or s is a prefix of exactly one candidate), else "".
func suggest(s string, candidates []string) string {
	best, bestDist := "", -1
	var prefixed []string
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if len(s) >= 2 && strings.HasPrefix(c, s) {
			prefixed = append(prefixed, c)
		}
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	limit := 2
	if len(s) <= 3 {
		limit = 1
	}
	if bestDist >= 0 && bestDist <= limit {
		return best
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	return ""
}

// editDistance is the Levenshtein distance of a and b, in bytes, where
// swapping two adjacent bytes counts as one edit.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// commandNames lists the visible commands and "help".
func commandNames() []string {
	names := []string{"help"}
	for _, c := range commands() {
		if !c.hidden {
			names = append(names, c.name)
		}
	}
	return names
}

// unknownCommand is the error of a command that does not exist.
func unknownCommand(name string) error {
	msg := fmt.Sprintf("unknown command %q", name)
	if s := suggest(name, commandNames()); s != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	}
	return usagef("%s; see mcp-audit help", msg)
}
