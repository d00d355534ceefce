package loader

import (
	"fmt"
	"regexp"
	"strings"
)

// EnvLookup looks up an environment variable, like [os.LookupEnv]. The
// loader never reads the process environment itself: the environment is
// always an input.
type EnvLookup func(name string) (value string, ok bool)

// MapEnv returns an [EnvLookup] over a fixed map. A nil map has no variables.
func MapEnv(m map[string]string) EnvLookup {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// envNamePattern matches the name of an environment variable.
var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// refPattern matches ${VAR}, ${VAR:-default}, ${env:VAR} and
// ${env:VAR:-default}.
var refPattern = regexp.MustCompile(`\$\{(env:)?([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// bareRefPattern matches $VAR (Crush and Gemini CLI spell references so).
var bareRefPattern = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)

// openCodeRefPattern matches OpenCode's {env:VAR}.
var openCodeRefPattern = regexp.MustCompile(`\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)

// inputRefPattern matches VS Code's ${input:id}, which needs a prompt.
var inputRefPattern = regexp.MustCompile(`\$\{input:([^}]*)\}`)

// shellSubstPattern matches $(command), which Crush would run; the loader
// never runs anything at discovery.
var shellSubstPattern = regexp.MustCompile(`\$\([^)]*\)`)

// anyRefPattern matches a braced reference or a bare $VAR.
var anyRefPattern = regexp.MustCompile(`\$\{(env:)?([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// expandWithBare is [expandRefs] that also expands $VAR, in one pass (a
// value is never expanded twice). An unset $VAR stays as written.
func expandWithBare(s string, lookup EnvLookup, unset func(name string)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	return anyRefPattern.ReplaceAllStringFunc(s, func(m string) string {
		sub := anyRefPattern.FindStringSubmatch(m)
		if sub[5] != "" {
			v, ok := lookup(sub[5])
			if !ok {
				if unset != nil {
					unset(sub[5])
				}
				return m
			}
			return v
		}
		return expandRefs(m, lookup, unset)
	})
}

// expandRefs replaces every reference in s by the variable's value. A
// default applies when the variable is unset or empty. An unset variable
// without default stays literal and its name is passed to unset.
func expandRefs(s string, lookup EnvLookup, unset func(name string)) string {
	if !strings.Contains(s, "${") {
		return s
	}
	return refPattern.ReplaceAllStringFunc(s, func(m string) string {
		sub := refPattern.FindStringSubmatch(m)
		name, hasDefault, def := sub[2], sub[3] != "", sub[4]
		v, ok := lookup(name)
		if hasDefault && v == "" {
			return def
		}
		if !ok {
			if unset != nil {
				unset(name)
			}
			return m
		}
		return v
	})
}

// unsetRefs calls unset for every variable referenced by s that is unset and
// has no default.
func unsetRefs(s string, lookup EnvLookup, unset func(name string)) {
	if !strings.Contains(s, "${") {
		return
	}
	for _, sub := range refPattern.FindAllStringSubmatch(s, -1) {
		if sub[3] != "" {
			continue
		}
		if _, ok := lookup(sub[2]); !ok {
			unset(sub[2])
		}
	}
}

// braceBareRefs rewrites $VAR as ${VAR}.
func braceBareRefs(s string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	return bareRefPattern.ReplaceAllString(s, "$${$1}")
}

// braceOpenCodeRefs rewrites OpenCode's {env:VAR} as ${VAR}, leaving
// ${env:VAR} alone.
func braceOpenCodeRefs(s string) string {
	if !strings.Contains(s, "{env:") {
		return s
	}
	var b strings.Builder
	last := 0
	for _, loc := range openCodeRefPattern.FindAllStringSubmatchIndex(s, -1) {
		if loc[0] > 0 && s[loc[0]-1] == '$' {
			continue
		}
		b.WriteString(s[last:loc[0]])
		b.WriteString("${" + s[loc[2]:loc[3]] + "}")
		last = loc[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// substituter applies one provider's discovery-time substitution rules to a
// mapped entry.
//
// Nothing is expanded at discovery: a reference may name a secret, and
// what discovery returns is recorded and printed. Every field's references
// are only normalised to the ${VAR} form (the provider's $VAR or {env:VAR}
// spelling rewritten) and checked for unset variables; [Resolver] expands
// them at connect time. Editor variables such as ${workspaceFolder} are
// not secrets and are replaced now.
type substituter struct {
	lookup EnvLookup
	// bare: $VAR is a reference too (Crush, Gemini CLI).
	bare bool
	// openCode: {env:VAR} is a reference too.
	openCode bool
	// editor replaces editor variables such as ${workspaceFolder}; nil when
	// the provider has none.
	editor *strings.Replacer
	// inputs: ${input:id} makes the entry invalid (VS Code).
	inputs bool
	// names: an env or header value that is only the name of a variable
	// stands for that variable's value when it is set and non-empty (the
	// reference runtime's rule, for mcplife's own format unless the entry
	// says envPolicy "literal"); it is rewritten as ${NAME:-NAME}.
	names bool
}

// editorVars returns the replacer for the editor variables of VS Code,
// Cursor and Windsurf files.
func editorVars(cwd, home string) *strings.Replacer {
	base := cwd
	if i := strings.LastIndexAny(cwd, `/\`); i >= 0 {
		base = cwd[i+1:]
	}
	sep := "/"
	if strings.Contains(cwd, `\`) && !strings.Contains(cwd, "/") {
		sep = `\`
	}
	return strings.NewReplacer(
		"${workspaceFolder}", cwd,
		"${workspaceRoot}", cwd,
		"${workspaceFolderBasename}", base,
		"${userHome}", home,
		"${pathSeparator}", sep,
		"${/}", sep,
	)
}

// prepare applies the provider's spelling rules to one string; with
// braceBare, $VAR is rewritten as ${VAR}.
func (s substituter) prepare(v string, braceBare bool) string {
	if s.editor != nil {
		v = s.editor.Replace(v)
	}
	if s.openCode {
		v = braceOpenCodeRefs(v)
	}
	if braceBare && s.bareApplies(v) {
		v = braceBareRefs(v)
	}
	return v
}

// bareApplies reports whether $VAR in v is a reference: the provider says
// so and v is not a $(command), which is used as written (and warned
// about), leaving its $VAR to the shell.
func (s substituter) bareApplies(v string) bool {
	return s.bare && !(strings.Contains(v, "$(") && shellSubstPattern.MatchString(v))
}

// apply substitutes e's configuration in place, adding warnings and
// problems to e.
func (s substituter) apply(e *entry) {
	c := &e.cfg
	warnUnset := func(field string) func(string) {
		return func(name string) {
			e.warnings = append(e.warnings, fmt.Sprintf("%s: server %q: %s: environment variable %s is not set", e.src.Path, e.name, field, name))
		}
	}
	checkInput := func(field, v string) {
		if !s.inputs || !strings.Contains(v, "${input:") {
			return
		}
		for _, sub := range inputRefPattern.FindAllStringSubmatch(v, -1) {
			e.problems = append(e.problems, fmt.Sprintf("%s: ${input:%s} cannot be prompted for outside VS Code; put the value in the environment and use ${env:VAR}", field, sub[1]))
		}
	}
	checkShell := func(field, v string) {
		if s.bare && strings.Contains(v, "$(") && shellSubstPattern.MatchString(v) {
			e.warnings = append(e.warnings, fmt.Sprintf("%s: server %q: %s: $(...) is not run; the text is used as written (use a value starting with \"!\" to run a command at connect time)", e.src.Path, e.name, field))
		}
	}
	keep := func(field, v string, secret bool) string {
		checkInput(field, v)
		if secret && strings.HasPrefix(v, "!") {
			// A command for the shell at connect time; it expands its own
			// variables.
			return v
		}
		checkShell(field, v)
		v = s.prepare(v, true)
		if secret && s.names && !e.literal && envNamePattern.MatchString(v) {
			return "${" + v + ":-" + v + "}"
		}
		unsetRefs(v, s.lookup, warnUnset(field))
		return v
	}
	now := func(field, v string) string { return keep(field, v, false) }
	later := func(field, v string) string { return keep(field, v, true) }
	c.Command = now("command", c.Command)
	for i, a := range c.Args {
		c.Args[i] = now(fmt.Sprintf("args[%d]", i), a)
	}
	c.URL = now("url", c.URL)
	c.Cwd = now("cwd", c.Cwd)
	for _, k := range sortedKeys(c.Env) {
		c.Env[k] = later("env."+k, c.Env[k])
	}
	for _, k := range sortedKeys(c.Headers) {
		c.Headers[k] = later("headers."+k, c.Headers[k])
	}
}
