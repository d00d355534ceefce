package loader

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcplife/mcplife/events"
	"github.com/pelletier/go-toml/v2"
)

// parseEnv is what a format parser needs besides the file's bytes.
type parseEnv struct {
	src    events.SourceMeta
	lookup EnvLookup
	cwd    string
	home   string
}

// mapFunc maps one generically decoded server entry onto e.cfg.
type mapFunc func(f fields, e *entry)

// mapCommon reads the fields every JSON format shares.
func mapCommon(f fields, e *entry) {
	c := &e.cfg
	c.Type = NormalizeType(f.str("type"))
	c.Command = f.str("command")
	c.Args = f.strs("args")
	c.Env = f.strMap("env")
	c.Cwd = f.str("cwd")
	c.URL = f.str("url")
	c.Headers = f.strMap("headers")
}

// mapNative reads mcplife's own format: every field of
// [events.ServerConfig].
func mapNative(f fields, e *entry) {
	mapCommon(f, e)
	c := &e.cfg
	c.TimeoutMs = f.millis("timeout", 1)
	c.ToolTimeoutMs = f.millis("toolTimeoutMs", 1)
	c.MaxOutputBytes = f.byteCount("maxOutputBytes")
	c.Enabled = f.boolean("enabled")
	c.EnabledTools = f.strs("enabledTools")
	c.DisabledTools = f.strs("disabledTools")
	c.ProtocolVersion = f.str("protocolVersion")
	c.Era = f.str("era")
	c.Roots = f.strs("roots")
	c.AlwaysLoad = alwaysLoad(f)
	c.OAuth = mapOAuth(f, nativeOAuth)
	switch r := f.str("record"); r {
	case "", events.RecordTranscript:
		c.Record = r
	default:
		*f.problems = append(*f.problems, fmt.Sprintf(`"record" must be %q, not %q`, events.RecordTranscript, r))
	}
	switch p := f.str("envPolicy"); p {
	case "", "names":
	case "literal":
		e.literal = true
	default:
		*f.problems = append(*f.problems, fmt.Sprintf(`"envPolicy" must be "names" or "literal", not %q`, p))
	}
}

// mapClaudeCode reads Claude Code's entries: type stdio, http or sse;
// alwaysLoad keeps a server's tools out of Claude Code's tool search, which
// is what it means here too.
func mapClaudeCode(f fields, e *entry) {
	mapCommon(f, e)
	e.cfg.TimeoutMs = f.millis("timeout", 1)
	e.cfg.AlwaysLoad = alwaysLoad(f)
	e.cfg.OAuth = mapOAuth(f, claudeOAuth)
}

// alwaysLoad reads the per-server "alwaysLoad" boolean. Of the formats
// read here only the native one and Claude Code's document a per-server
// switch that keeps a server's tools loaded when the others are deferred
// behind a search; the others (Codex's tool_search_always_defer_mcp_tools
// is global, not per server) are not mapped.
func alwaysLoad(f fields) bool {
	b := f.boolean("alwaysLoad")
	return b != nil && *b
}

// mapCursor reads Cursor's entries.
func mapCursor(f fields, e *entry) {
	mapCommon(f, e)
	if f.has("envFile") {
		e.warnings = append(e.warnings, fmt.Sprintf("%s: server %q: envFile is not read; set the variables in env", e.src.Path, e.name))
	}
}

// mapWindsurf reads Windsurf's entries: serverUrl is a streamable HTTP
// endpoint; disabled and disabledTools are honoured.
func mapWindsurf(f fields, e *entry) {
	mapCommon(f, e)
	c := &e.cfg
	if u := f.str("serverUrl"); u != "" && c.URL == "" {
		c.URL = u
		if c.Type == "" {
			c.Type = events.TransportHTTP
		}
	}
	if d := f.boolean("disabled"); d != nil && *d {
		c.Enabled = new(false)
	}
	c.DisabledTools = f.strs("disabledTools")
}

// mapClaudeDesktop reads Claude Desktop's entries, which are stdio only:
// a URL is ignored, so a URL-only entry fails validation as a stdio server
// without command.
func mapClaudeDesktop(f fields, e *entry) {
	c := &e.cfg
	c.Command = f.str("command")
	c.Args = f.strs("args")
	c.Env = f.strMap("env")
	if f.has("url") || f.has("serverUrl") {
		e.problems = append(e.problems, "Claude Desktop's config file supports only stdio servers (command); \"url\" is ignored")
	}
}

// mapVSCode reads VS Code's `servers` entries.
func mapVSCode(f fields, e *entry) {
	mapCommon(f, e)
	if f.has("envFile") {
		e.warnings = append(e.warnings, fmt.Sprintf("%s: server %q: envFile is not read; set the variables in env", e.src.Path, e.name))
	}
}

// mapGemini reads Gemini CLI's entries: url is legacy SSE, httpUrl is
// streamable HTTP (and wins when both are set); includeTools/excludeTools
// are the tool filters. Gemini CLI's timeout, in milliseconds, bounds every
// request to the server, the connect and each tool call alike, so it sets
// both TimeoutMs and ToolTimeoutMs.
func mapGemini(f fields, e *entry) {
	c := &e.cfg
	c.Command = f.str("command")
	c.Args = f.strs("args")
	c.Env = f.strMap("env")
	c.Cwd = f.str("cwd")
	c.Headers = f.strMap("headers")
	t := NormalizeType(f.str("type"))
	if u := f.str("httpUrl"); u != "" {
		c.URL, c.Type = u, events.TransportHTTP
	} else if u := f.str("url"); u != "" {
		c.URL, c.Type = u, events.TransportSSE
		if t != "" {
			c.Type = t
		}
	} else {
		c.Type = t
	}
	c.TimeoutMs = f.millis("timeout", 1)
	if c.TimeoutMs != nil {
		c.ToolTimeoutMs = new(*c.TimeoutMs)
	}
	c.EnabledTools = f.strs("includeTools")
	c.DisabledTools = f.strs("excludeTools")
	c.OAuth = mapOAuth(f, geminiOAuth)
}

// mapOpenCode reads OpenCode's `mcp` entries: type local (command is an
// argv array, environment in `environment`) or remote (url, headers).
func mapOpenCode(f fields, e *entry) {
	c := &e.cfg
	switch t := f.str("type"); t {
	case "local":
		c.Type = events.TransportStdio
	case "remote":
		c.Type = events.TransportHTTP
	default:
		c.Type = NormalizeType(t)
	}
	switch v := f.m["command"].(type) {
	case nil:
	case string:
		c.Command = v
	case []any:
		argv := f.strs("command")
		if len(argv) > 0 {
			c.Command, c.Args = argv[0], argv[1:]
		}
	default:
		f.bad("command", "an array of strings")
	}
	c.Args = append(c.Args, f.strs("args")...)
	if len(c.Args) == 0 {
		c.Args = nil
	}
	c.Env = f.strMap("environment")
	if c.Env == nil {
		c.Env = f.strMap("env")
	}
	c.URL = f.str("url")
	c.Headers = f.strMap("headers")
	c.Enabled = f.boolean("enabled")
	c.TimeoutMs = f.millis("timeout", 1)
	c.OAuth = mapOAuth(f, openCodeOAuth)
}

// mapCrush reads Crush's `mcp` entries: timeout is in seconds; disabled and
// disabled_tools are honoured.
func mapCrush(f fields, e *entry) {
	mapCommon(f, e)
	c := &e.cfg
	c.TimeoutMs = f.millis("timeout", 1000)
	if d := f.boolean("disabled"); d != nil && *d {
		c.Enabled = new(false)
	}
	c.DisabledTools = f.strs("disabled_tools")
}

// serverObject maps every member of the object at m (a map of server name
// to entry).
func serverObject(doc *jsonDoc, m member, key string, pe parseEnv, sub substituter, mapFn mapFunc) ([]entry, *fileErr) {
	servers, ok := doc.objectOf(m)
	if !ok {
		if strings.TrimSpace(string(m.Value)) == "null" {
			return nil, nil
		}
		return nil, doc.errorAt(m.Offset, fmt.Sprintf("%q must be an object", key))
	}
	out := make([]entry, 0, len(servers))
	for _, s := range servers {
		e := entry{name: s.Key, src: pe.src, where: doc.where(s.Offset)}
		v, err := decodeValue(s.Value)
		if obj, ok := v.(map[string]any); ok && err == nil {
			mapFn(fields{m: obj, problems: &e.problems}, &e)
		} else if err != nil {
			e.problems = append(e.problems, "invalid entry: "+err.Error())
		} else {
			e.problems = append(e.problems, "entry must be an object")
		}
		e.cfg.Name = s.Key
		sub.apply(&e)
		out = append(out, e)
	}
	return out, nil
}

// parseServersFile parses a JSON file whose servers sit under key at the
// top level (mcpServers, servers or mcp).
func parseServersFile(path string, data []byte, key string, pe parseEnv, sub substituter, mapFn mapFunc) fileResult {
	res, _, _ := parseServersDoc(path, data, key, pe, sub, mapFn)
	return res
}

// parseServersDoc is parseServersFile that also returns the parsed
// document and its top-level members (nil after a syntax error), for
// formats with further top-level keys.
func parseServersDoc(path string, data []byte, key string, pe parseEnv, sub substituter, mapFn mapFunc) (fileResult, *jsonDoc, []member) {
	res := fileResult{path: path, level: pe.src.Level}
	doc, top, err := parseJSONC(path, data)
	if err != nil {
		res.err = asFileErr(path, err)
		return res, nil, nil
	}
	if m, ok := find(top, key); ok {
		res.entries, res.err = serverObject(doc, m, key, pe, sub, mapFn)
	}
	return res, doc, top
}

// parseNative parses mcplife's own file: mcpServers plus the file-level
// disabledServers and enabledServers lists.
func parseNative(path string, data []byte, pe parseEnv) fileResult {
	sub := substituter{lookup: pe.lookup, names: true}
	res, doc, top := parseServersDoc(path, data, "mcpServers", pe, sub, mapNative)
	if res.err != nil {
		return res
	}
	for _, key := range []string{"disabledServers", "enabledServers"} {
		m, ok := find(top, key)
		if !ok {
			continue
		}
		var list []string
		v, _ := decodeValue(m.Value)
		arr, ok := v.([]any)
		for _, a := range arr {
			s, isStr := a.(string)
			if !isStr {
				ok = false
				break
			}
			list = append(list, s)
		}
		if !ok && v != nil {
			res.err = doc.errorAt(m.Offset, fmt.Sprintf("%q must be an array of server names", key))
			res.entries = nil
			return res
		}
		if key == "disabledServers" {
			res.disabledServers = list
		} else {
			res.enabledServers = list
		}
	}
	return res
}

// parseClaudeJSON parses ~/.claude.json: its top-level mcpServers (user
// scope) and projects["<cwd>"].mcpServers (Claude Code's "local" scope:
// private to the user and this project, stored in the user's own file).
// It also returns the names listed in that project's
// disabledMcpjsonServers, which Claude Code's user rejected from the
// project's .mcp.json.
//
// Only those values are decoded (see [claudeScan]); a file the scan does
// not accept is parsed whole, for its error.
func parseClaudeJSON(path string, data []byte, pe parseEnv, cwds []string) (local, user fileResult, rejected []string) {
	parts, ok := claudeScan(data, cwds)
	if !ok {
		return parseClaudeJSONWhole(path, data, pe, cwds)
	}
	local = fileResult{path: path, level: pe.src.Level}
	user = fileResult{path: path, level: pe.src.Level}
	sub := substituter{lookup: pe.lookup}
	if v := parts.servers; v != nil {
		doc, m, ok := spanMember(path, data, "mcpServers", *v)
		if !ok {
			return parseClaudeJSONWhole(path, data, pe, cwds)
		}
		user.entries, user.err = serverObject(doc, m, "mcpServers", pe, sub, mapClaudeCode)
	}
	if v := parts.local; v != nil {
		doc, m, ok := spanMember(path, data, "mcpServers", *v)
		if !ok {
			return parseClaudeJSONWhole(path, data, pe, cwds)
		}
		local.entries, local.err = serverObject(doc, m, "projects."+parts.project+".mcpServers", pe, sub, mapClaudeCode)
	}
	if v := parts.rejected; v != nil {
		_, m, ok := spanMember(path, data, "disabledMcpjsonServers", *v)
		if !ok {
			return parseClaudeJSONWhole(path, data, pe, cwds)
		}
		rejected = stringsOf(m.Value)
	}
	return local, user, rejected
}

// stringsOf returns the strings of the JSON array raw, skipping other
// elements; nil when raw is not an array.
func stringsOf(raw []byte) []string {
	v, _ := decodeValue(raw)
	arr, _ := v.([]any)
	var out []string
	for _, a := range arr {
		if s, ok := a.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// parseClaudeJSONWhole is parseClaudeJSON decoding the whole file: for a
// file that claudeScan does not accept, whose error it reports.
func parseClaudeJSONWhole(path string, data []byte, pe parseEnv, cwds []string) (local, user fileResult, rejected []string) {
	local = fileResult{path: path, level: pe.src.Level}
	user = fileResult{path: path, level: pe.src.Level}
	doc, top, err := parseJSONC(path, data)
	if err != nil {
		user.err = asFileErr(path, err)
		return local, user, nil
	}
	sub := substituter{lookup: pe.lookup}
	if m, ok := find(top, "mcpServers"); ok {
		user.entries, user.err = serverObject(doc, m, "mcpServers", pe, sub, mapClaudeCode)
	}
	pm, ok := find(top, "projects")
	if !ok {
		return local, user, nil
	}
	projects, ok := doc.objectOf(pm)
	if !ok {
		return local, user, nil
	}
	for _, p := range projects {
		if !slices.Contains(cwds, p.Key) {
			continue
		}
		proj, ok := doc.objectOf(p)
		if !ok {
			continue
		}
		if m, ok := find(proj, "mcpServers"); ok {
			local.entries, local.err = serverObject(doc, m, "projects."+p.Key+".mcpServers", pe, sub, mapClaudeCode)
		}
		if m, ok := find(proj, "disabledMcpjsonServers"); ok {
			rejected = stringsOf(m.Value)
		}
		break
	}
	return local, user, rejected
}

// parseGemini parses Gemini CLI's settings.json: mcpServers, plus the
// mcp.allowed / mcp.excluded lists of server names.
func parseGemini(path string, data []byte, pe parseEnv) fileResult {
	sub := substituter{lookup: pe.lookup, bare: true}
	res, doc, top := parseServersDoc(path, data, "mcpServers", pe, sub, mapGemini)
	if res.err != nil || len(res.entries) == 0 {
		return res
	}
	m, ok := find(top, "mcp")
	if !ok {
		return res
	}
	mcp, ok := doc.objectOf(m)
	if !ok {
		return res
	}
	list := func(key string) ([]string, bool) {
		m, ok := find(mcp, key)
		if !ok {
			return nil, false
		}
		v, _ := decodeValue(m.Value)
		arr, ok := v.([]any)
		if !ok {
			return nil, false
		}
		var out []string
		for _, a := range arr {
			if s, ok := a.(string); ok {
				out = append(out, s)
			}
		}
		return out, true
	}
	allowed, hasAllowed := list("allowed")
	excluded, _ := list("excluded")
	for i := range res.entries {
		e := &res.entries[i]
		switch {
		case slices.Contains(excluded, e.name):
			e.disabled = "listed in mcp.excluded of " + path
		case hasAllowed && !slices.Contains(allowed, e.name):
			e.disabled = "not listed in mcp.allowed of " + path
		}
	}
	return res
}

// parseOpenCode parses opencode.json: servers under "mcp"; {env:VAR} is a
// reference.
func parseOpenCode(path string, data []byte, pe parseEnv) fileResult {
	sub := substituter{lookup: pe.lookup, openCode: true}
	res := parseServersFile(path, data, "mcp", pe, sub, mapOpenCode)
	for i := range res.entries {
		e := &res.entries[i]
		if strings.Contains(e.cfg.Command+strings.Join(e.cfg.Args, " ")+e.cfg.URL, "{file:") {
			e.warnings = append(e.warnings, fmt.Sprintf("%s: server %q: {file:...} is not read; the text is used as written", path, e.name))
		}
	}
	return res
}

// parseCrush parses crush.json: servers under "mcp"; $VAR is a reference.
func parseCrush(path string, data []byte, pe parseEnv) fileResult {
	sub := substituter{lookup: pe.lookup, bare: true}
	return parseServersFile(path, data, "mcp", pe, sub, mapCrush)
}

// parseVSCode parses .vscode/mcp.json: servers under "servers"; editor
// variables such as ${workspaceFolder} are replaced and ${input:id}
// (a prompt) makes the entry invalid.
func parseVSCode(path string, data []byte, pe parseEnv) fileResult {
	sub := substituter{lookup: pe.lookup, editor: editorVars(pe.cwd, pe.home), inputs: true}
	return parseServersFile(path, data, "servers", pe, sub, mapVSCode)
}

// parseEditorServers parses an mcpServers file of an editor that knows
// ${workspaceFolder}, ${userHome} and ${env:VAR} (Cursor, Windsurf).
func parseEditorServers(mapFn mapFunc) func(string, []byte, parseEnv) fileResult {
	return func(path string, data []byte, pe parseEnv) fileResult {
		sub := substituter{lookup: pe.lookup, editor: editorVars(pe.cwd, pe.home)}
		return parseServersFile(path, data, "mcpServers", pe, sub, mapFn)
	}
}

// parseMCPServers parses a plain mcpServers file with the given mapping.
func parseMCPServers(mapFn mapFunc) func(string, []byte, parseEnv) fileResult {
	return func(path string, data []byte, pe parseEnv) fileResult {
		return parseServersFile(path, data, "mcpServers", pe, substituter{lookup: pe.lookup}, mapFn)
	}
}

// parseCodex parses Codex's config.toml: [mcp_servers.<name>] tables.
//
// Secrets stay out of the configuration: env_vars become env entries
// "${NAME}" (for variables set now), env_http_headers become headers
// "${VAR}" and bearer_token_env_var becomes "Authorization: Bearer ${VAR}";
// [Resolver.Resolve] expands them at connect time. startup_timeout_sec (or
// startup_timeout_ms) is the connect timeout and tool_timeout_sec the
// tool-call timeout, both in seconds (fractions allowed) and kept in
// milliseconds.
func parseCodex(path string, data []byte, pe parseEnv) fileResult {
	res := fileResult{path: path, level: pe.src.Level}
	var top map[string]any
	if err := toml.Unmarshal(data, &top); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			res.err = &fileErr{Path: path, Msg: fmt.Sprintf("%s:%d:%d: %s", path, row, col, de.Error())}
		} else {
			res.err = &fileErr{Path: path, Msg: fmt.Sprintf("%s: %v", path, err)}
		}
		return res
	}
	raw, ok := top["mcp_servers"]
	if !ok || raw == nil {
		return res
	}
	servers, ok := raw.(map[string]any)
	if !ok {
		res.err = &fileErr{Path: path, Msg: path + `: "mcp_servers" must be a table`}
		return res
	}
	sub := substituter{lookup: pe.lookup}
	for _, name := range sortedKeys(servers) {
		e := entry{name: name, src: pe.src, where: path}
		if obj, ok := servers[name].(map[string]any); ok {
			mapCodex(fields{m: obj, problems: &e.problems}, &e, pe.lookup)
		} else {
			e.problems = append(e.problems, "entry must be a table")
		}
		e.cfg.Name = name
		sub.apply(&e)
		res.entries = append(res.entries, e)
	}
	return res
}

func mapCodex(f fields, e *entry, lookup EnvLookup) {
	c := &e.cfg
	c.Command = f.str("command")
	c.Args = f.strs("args")
	c.Env = f.strMap("env")
	c.Cwd = f.str("cwd")
	c.URL = f.str("url")
	c.Headers = f.strMap("http_headers")
	setHeader := func(k, v string) {
		if c.Headers == nil {
			c.Headers = map[string]string{}
		}
		c.Headers[k] = v
	}
	if hs := f.strMap("env_http_headers"); hs != nil {
		for _, k := range sortedKeys(hs) {
			if !envNamePattern.MatchString(hs[k]) {
				f.bad("env_http_headers."+k, "the name of an environment variable")
				continue
			}
			setHeader(k, "${"+hs[k]+"}")
		}
	}
	if v := f.str("bearer_token_env_var"); v != "" {
		if !envNamePattern.MatchString(v) {
			f.bad("bearer_token_env_var", "the name of an environment variable")
		} else {
			setHeader("Authorization", "Bearer ${"+v+"}")
		}
	}
	if f.has("bearer_token") {
		*f.problems = append(*f.problems, `"bearer_token" is not supported: keep the token in an environment variable and name it in "bearer_token_env_var"`)
	}
	// env_vars: names (or {name = "..."} tables) copied from the parent
	// environment. Only variables set now are forwarded, as Codex does.
	if raw, ok := f.m["env_vars"]; ok && raw != nil {
		arr, ok := raw.([]any)
		if !ok {
			f.bad("env_vars", "an array of variable names")
		}
		for _, a := range arr {
			name := ""
			switch x := a.(type) {
			case string:
				name = x
			case map[string]any:
				name, _ = x["name"].(string)
			}
			if !envNamePattern.MatchString(name) {
				f.bad("env_vars", "an array of variable names")
				break
			}
			if _, set := lookup(name); !set {
				continue
			}
			if _, exists := c.Env[name]; exists {
				continue
			}
			if c.Env == nil {
				c.Env = map[string]string{}
			}
			c.Env[name] = "${" + name + "}"
		}
	}
	if f.has("startup_timeout_sec") {
		c.TimeoutMs = f.millis("startup_timeout_sec", 1000)
	} else if f.has("startup_timeout_ms") {
		c.TimeoutMs = f.millis("startup_timeout_ms", 1)
	}
	c.ToolTimeoutMs = f.millis("tool_timeout_sec", 1000)
	c.Enabled = f.boolean("enabled")
	c.EnabledTools = f.strs("enabled_tools")
	c.DisabledTools = f.strs("disabled_tools")
}

// asFileErr converts a parse error into a *fileErr.
func asFileErr(path string, err error) *fileErr {
	var fe *fileErr
	if errors.As(err, &fe) {
		return fe
	}
	return &fileErr{Path: path, Msg: fmt.Sprintf("%s: %v", path, err)}
}
