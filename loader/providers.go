package loader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/mcplife/mcplife/events"
)

// Provider ids, as recorded in [events.SourceMeta.Provider].
const (
	ProviderNative        = "native"
	ProviderClaudeCode    = "claude-code"
	ProviderCodex         = "codex"
	ProviderGemini        = "gemini"
	ProviderOpenCode      = "opencode"
	ProviderCursor        = "cursor"
	ProviderWindsurf      = "windsurf"
	ProviderCrush         = "crush"
	ProviderClaudeDesktop = "claude-desktop"
	ProviderVSCode        = "vscode"
	ProviderMCPJSON       = "mcp-json"
)

// Provider describes one configuration source: an agent host whose files
// the loader reads.
type Provider struct {
	ID       string // e.g. "claude-code"
	Name     string // display label, e.g. "Claude Code"
	Priority int    // higher wins on a duplicate server name
}

// providerTable lists the providers highest priority first; equal
// priorities keep this order.
var providerTable = []Provider{
	{ProviderNative, "mcplife", 100},
	{ProviderClaudeCode, "Claude Code", 80},
	{ProviderCodex, "OpenAI Codex", 70},
	{ProviderGemini, "Gemini CLI", 60},
	{ProviderOpenCode, "OpenCode", 55},
	{ProviderCursor, "Cursor", 50},
	{ProviderWindsurf, "Windsurf", 50},
	{ProviderCrush, "Crush", 45},
	{ProviderClaudeDesktop, "Claude Desktop", 40},
	{ProviderVSCode, "VS Code", 20},
	{ProviderMCPJSON, "MCP Config", 5},
}

// Providers returns every provider, highest priority first (equal
// priorities in a fixed order: Cursor before Windsurf).
func Providers() []Provider { return slices.Clone(providerTable) }

// loadCtx carries the inputs shared by every provider.
type loadCtx struct {
	ctx    context.Context
	cwd    string
	cwds   []string // cwd and its symlink-free form, for ~/.claude.json
	home   string
	lookup EnvLookup
	goos   string
	extra  []string
	// enableProject false: project-level files are not opened at all.
	enableProject bool
	// files records every path lc.read looked at, for
	// [Discovery.WatchPaths].
	files fileLog
}

// fileLog records the config paths one discovery looked at. Providers
// read in parallel, so it has its own lock.
type fileLog struct {
	mu sync.Mutex
	// found are paths that existed (read, or refused as a [FileError]);
	// missing are paths that did not; empty are the found files read
	// whole that held nothing but white space.
	found, missing, empty map[string]bool
}

func (l *fileLog) add(path string, exists bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.found == nil {
		l.found, l.missing, l.empty = map[string]bool{}, map[string]bool{}, map[string]bool{}
	}
	if exists {
		l.found[path] = true
	} else {
		l.missing[path] = true
	}
}

// addEmpty records that the found file at path held nothing but white
// space.
func (l *fileLog) addEmpty(path string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.empty[path] = true
}

// emptyFiles returns the empty files, sorted.
func (l *fileLog) emptyFiles() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return sortedKeys(l.empty)
}

// sorted returns the found and the missing paths, each sorted. A path
// both found and missing (it appeared while being looked at) is found.
func (l *fileLog) sorted() (found, missing []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p := range l.missing {
		if !l.found[p] {
			missing = append(missing, p)
		}
	}
	slices.Sort(missing)
	return sortedKeys(l.found), missing
}

// configHome is $XDG_CONFIG_HOME when set to an absolute path, else
// ~/.config.
func (lc *loadCtx) configHome() string {
	if v, ok := lc.lookup("XDG_CONFIG_HOME"); ok && filepath.IsAbs(v) {
		return v
	}
	return filepath.Join(lc.home, ".config")
}

// read reads one config file of at most limit bytes (see
// [readConfigFile]). A missing file is not an error (exists is false)
// unless required.
func (lc *loadCtx) read(path string, limit int64, required bool) (data []byte, exists bool, ferr *fileErr) {
	if err := lc.ctx.Err(); err != nil {
		return nil, false, nil
	}
	data, err := readConfigFile(path, limit)
	lc.files.add(path, !errors.Is(err, fs.ErrNotExist))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !required {
			return nil, false, nil
		}
		return nil, false, &fileErr{Path: path, Msg: fmt.Sprintf("%s: %v", path, unwrapPathError(err))}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		lc.files.addEmpty(path)
	}
	return data, true, nil
}

// projectNotRead stands for a project-level file left unopened because
// project configs are disabled: a warning names it when it exists
// (checked with Lstat, which opens nothing). ok is false when it does not.
func projectNotRead(path string) (r fileResult, ok bool) {
	if _, err := os.Lstat(path); err != nil {
		return fileResult{}, false
	}
	return fileResult{path: path, level: events.LevelProject, warnings: []string{path + " not read: project-level configs are disabled"}}, true
}

// unwrapPathError drops the operation and path that *fs.PathError repeats.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// source is one file of a provider.
type source struct {
	path     string
	level    string
	required bool
	parse    func(path string, data []byte, pe parseEnv) fileResult
}

// readSources reads and parses the provider's files in order. A
// project-level path that is also one of the provider's user-level paths
// (the project is the home directory) is read once, as user level.
func (lc *loadCtx) readSources(p Provider, sources []source) []fileResult {
	userPaths := map[string]bool{}
	for _, s := range sources {
		if s.level == events.LevelUser {
			userPaths[filepath.Clean(s.path)] = true
		}
	}
	var out []fileResult
	for _, s := range sources {
		if s.level == events.LevelProject && userPaths[filepath.Clean(s.path)] {
			continue
		}
		if r, ok := lc.readOne(p, s); ok {
			out = append(out, r)
		}
	}
	return out
}

// readOne reads and parses one source; ok is false when there is nothing
// to report (a missing optional file). A project-level file is not opened
// when project configs are disabled.
func (lc *loadCtx) readOne(p Provider, s source) (r fileResult, ok bool) {
	if s.level == events.LevelProject && !lc.enableProject {
		return projectNotRead(s.path)
	}
	data, exists, ferr := lc.read(s.path, maxConfigFileSize, s.required)
	if ferr != nil {
		return fileResult{path: s.path, level: s.level, err: ferr}, true
	}
	if !exists {
		return fileResult{}, false
	}
	return s.parse(s.path, data, lc.parseEnv(p, s.path, s.level)), true
}

func (lc *loadCtx) parseEnv(p Provider, path, level string) parseEnv {
	return parseEnv{
		src:    events.SourceMeta{Provider: p.ID, ProviderName: p.Name, Path: path, Level: level},
		lookup: lc.lookup,
		cwd:    lc.cwd,
		home:   lc.home,
	}
}

// load runs provider p: its files in its own order of precedence (project
// before user, as each host itself lets project settings override user
// settings).
func (lc *loadCtx) load(p Provider) []fileResult {
	cwd, home := lc.cwd, lc.home
	project, user := events.LevelProject, events.LevelUser
	switch p.ID {
	case ProviderNative:
		var srcs []source
		for _, x := range lc.extra {
			srcs = append(srcs, source{path: x, level: events.LevelNative, required: true, parse: parseNative})
		}
		srcs = append(srcs,
			source{path: filepath.Join(cwd, ".mcplife", "mcp.json"), level: project, parse: parseNative},
			source{path: filepath.Join(lc.configHome(), "mcplife", "mcp.json"), level: user, parse: parseNative},
		)
		return lc.readSources(p, srcs)
	case ProviderClaudeCode:
		return lc.loadClaudeCode(p)
	case ProviderCodex:
		codexHome := filepath.Join(home, ".codex")
		if v, ok := lc.lookup("CODEX_HOME"); ok && filepath.IsAbs(v) {
			codexHome = v
		}
		return lc.readSources(p, []source{
			{path: filepath.Join(cwd, ".codex", "config.toml"), level: project, parse: parseCodex},
			{path: filepath.Join(codexHome, "config.toml"), level: user, parse: parseCodex},
		})
	case ProviderGemini:
		return lc.readSources(p, []source{
			{path: filepath.Join(cwd, ".gemini", "settings.json"), level: project, parse: parseGemini},
			{path: filepath.Join(home, ".gemini", "settings.json"), level: user, parse: parseGemini},
		})
	case ProviderOpenCode:
		dir := filepath.Join(lc.configHome(), "opencode")
		return lc.readSources(p, []source{
			{path: filepath.Join(cwd, "opencode.json"), level: project, parse: parseOpenCode},
			{path: filepath.Join(cwd, "opencode.jsonc"), level: project, parse: parseOpenCode},
			{path: filepath.Join(dir, "opencode.json"), level: user, parse: parseOpenCode},
			{path: filepath.Join(dir, "opencode.jsonc"), level: user, parse: parseOpenCode},
		})
	case ProviderCursor:
		parse := parseEditorServers(mapCursor)
		return lc.readSources(p, []source{
			{path: filepath.Join(cwd, ".cursor", "mcp.json"), level: project, parse: parse},
			{path: filepath.Join(home, ".cursor", "mcp.json"), level: user, parse: parse},
		})
	case ProviderWindsurf:
		parse := parseEditorServers(mapWindsurf)
		return lc.readSources(p, []source{
			{path: filepath.Join(cwd, ".windsurf", "mcp_config.json"), level: project, parse: parse},
			{path: filepath.Join(home, ".codeium", "windsurf", "mcp_config.json"), level: user, parse: parse},
		})
	case ProviderCrush:
		return lc.readSources(p, []source{
			{path: filepath.Join(cwd, ".crush.json"), level: project, parse: parseCrush},
			{path: filepath.Join(cwd, "crush.json"), level: project, parse: parseCrush},
			{path: filepath.Join(lc.configHome(), "crush", "crush.json"), level: user, parse: parseCrush},
		})
	case ProviderClaudeDesktop:
		return lc.readSources(p, []source{
			{path: lc.claudeDesktopPath(), level: user, parse: parseMCPServers(mapClaudeDesktop)},
		})
	case ProviderVSCode:
		return lc.readSources(p, []source{
			{path: filepath.Join(cwd, ".vscode", "mcp.json"), level: project, parse: parseVSCode},
		})
	case ProviderMCPJSON:
		return lc.readSources(p, []source{
			{path: filepath.Join(cwd, "mcp.json"), level: project, parse: parseMCPServers(mapNative)},
		})
	}
	return nil
}

// claudeDesktopPath is Claude Desktop's config file on lc.goos.
func (lc *loadCtx) claudeDesktopPath() string {
	const file = "claude_desktop_config.json"
	switch lc.goos {
	case "darwin":
		return filepath.Join(lc.home, "Library", "Application Support", "Claude", file)
	case "windows":
		appData := filepath.Join(lc.home, "AppData", "Roaming")
		if v, ok := lc.lookup("APPDATA"); ok && v != "" {
			appData = v
		}
		return filepath.Join(appData, "Claude", file)
	}
	return filepath.Join(lc.configHome(), "Claude", file)
}

// loadClaudeCode reads Claude Code's scopes in its own precedence: local
// (projects["<cwd>"].mcpServers in ~/.claude.json), project (<cwd>/.mcp.json),
// user (top-level mcpServers in ~/.claude.json, then ~/.claude/mcp.json).
//
// Local-scope entries are recorded with level "user": Claude Code writes
// them into the user's own file (claude mcp add --scope local), so a
// project directory cannot inject them and they are not dropped when
// project configs are disabled. Entries of .mcp.json that the user rejected
// in Claude Code (disabledMcpjsonServers) are skipped as disabled.
func (lc *loadCtx) loadClaudeCode(p Provider) []fileResult {
	userFile := filepath.Join(lc.home, ".claude.json")
	var local, user fileResult
	var rejected []string
	haveUserFile := false
	data, exists, ferr := lc.read(userFile, maxClaudeStateSize, false)
	switch {
	case ferr != nil:
		user = fileResult{path: userFile, level: events.LevelUser, err: ferr}
		haveUserFile = true
	case exists:
		local, user, rejected = parseClaudeJSON(userFile, data, lc.parseEnv(p, userFile, events.LevelUser), lc.cwds)
		haveUserFile = true
	}
	var out []fileResult
	if len(local.entries) > 0 || local.err != nil {
		out = append(out, local)
	}
	projectFile := filepath.Join(lc.cwd, ".mcp.json")
	if filepath.Clean(projectFile) != filepath.Clean(userFile) {
		if r, ok := lc.readOne(p, source{path: projectFile, level: events.LevelProject, parse: parseMCPServers(mapClaudeCode)}); ok {
			for i := range r.entries {
				if slices.Contains(rejected, r.entries[i].name) {
					r.entries[i].disabled = "rejected in Claude Code (disabledMcpjsonServers in " + userFile + ")"
				}
			}
			out = append(out, r)
		}
	}
	if haveUserFile {
		out = append(out, user)
	}
	if r, ok := lc.readOne(p, source{path: filepath.Join(lc.home, ".claude", "mcp.json"), level: events.LevelUser, parse: parseMCPServers(mapClaudeCode)}); ok {
		out = append(out, r)
	}
	return out
}
