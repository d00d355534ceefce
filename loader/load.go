package loader

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/mcplife/mcplife/events"
)

// LoadConfigs discovers MCP server configurations from every provider's
// files (see [Providers]) for the project in opts.Cwd and the user in
// opts.Home. It reads files only: it never runs a command and never
// connects.
//
// With opts.DisableProjectConfig, project-level files are not even
// opened, so such files neither run anything nor hide other entries; each
// one that exists is named in a warning instead. Every file read must be a
// regular file (symlinks are followed) of at most 4 MiB (~/.claude.json,
// where Claude Code also keeps its history: 256 MiB); a named pipe, a
// device or a larger file is a [FileError] saying so, and never blocks.
//
// Providers are read in parallel and their entries merged by priority.
// Each entry then passes, in order:
//
//  1. validation (the fields' types, [events.ServerConfig.Validate] as
//     the manager applies it, a stdio server's working directory and a
//     URL once expanded; events.SkipInvalid), before de-duplication, so
//     an invalid entry does not hide a valid lower-priority one;
//  2. de-duplication by name: the first remaining entry wins, later ones
//     are events.SkipShadowed with a Detail naming the winner's source;
//  3. disabledServers of mcplife's files (user, project and extra files)
//     wins (events.SkipDisabled);
//  4. disabled by the entry's own source (enabled: false, Crush's and
//     Windsurf's disabled, Gemini's mcp.excluded, Claude Code's rejected
//     .mcp.json servers) unless the name is in an enabledServers list
//     (events.SkipDisabled);
//  5. Exa servers removed and their keys collected unless opts.KeepExa
//     (events.SkipExa).
//
// A disabled or Exa-filtered winner still shadows lower entries of the
// same name: the name is what is switched off.
//
// Files that cannot be read or parsed are listed in [Discovery.Errors];
// every other file still loads. The error result is reserved for
// discovery failing as a whole: missing Cwd or Home, or ctx ended.
// LoadConfigs is safe for concurrent use.
func LoadConfigs(ctx context.Context, opts Options) (*Discovery, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("loader: %w", err)
	}
	var errs []error
	if opts.Cwd == "" {
		errs = append(errs, errors.New("loader: Options.Cwd is required"))
	}
	if opts.Home == "" {
		errs = append(errs, errors.New("loader: Options.Home is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	cwd, err := filepath.Abs(opts.Cwd)
	if err != nil {
		return nil, fmt.Errorf("loader: cwd %q: %w", opts.Cwd, err)
	}
	home, err := filepath.Abs(opts.Home)
	if err != nil {
		return nil, fmt.Errorf("loader: home %q: %w", opts.Home, err)
	}
	// The working directory must exist; a missing home directory simply
	// has no user files, but one that cannot be examined fails the whole
	// discovery rather than every user file one by one.
	if fi, err := os.Stat(cwd); err != nil {
		return nil, fmt.Errorf("loader: cwd: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("loader: cwd %s: not a directory", cwd)
	}
	if fi, err := os.Stat(home); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("loader: home: %w", err)
	} else if err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("loader: home %s: not a directory", home)
	}
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = MapEnv(opts.Env)
	}
	goos := opts.GOOS
	if goos == "" {
		goos = runtime.GOOS
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	lc := &loadCtx{ctx: ctx, cwd: cwd, cwds: []string{cwd}, home: home, lookup: lookup, goos: goos,
		enableProject: !opts.DisableProjectConfig}
	if real, err := filepath.EvalSymlinks(cwd); err == nil && real != cwd {
		lc.cwds = append(lc.cwds, real)
	}
	for _, x := range opts.ExtraConfigs {
		if !filepath.IsAbs(x) {
			x = filepath.Join(cwd, x)
		}
		lc.extra = append(lc.extra, filepath.Clean(x))
	}

	results := make([][]fileResult, len(providerTable))
	var wg sync.WaitGroup
	for i, p := range providerTable {
		wg.Go(func() { results[i] = lc.load(p) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("loader: %w", err)
	}

	d := merge(results, mergeOptions{
		cwd:       cwd,
		filterExa: !opts.KeepExa,
		lookup:    lookup,
	})
	d.FoundFiles, d.MissingFiles = lc.files.sorted()
	d.EmptyFiles = lc.files.emptyFiles()
	for _, e := range d.Errors {
		logger.Warn("mcp config file skipped", "path", e.Path, "error", e.Error)
	}
	for _, w := range d.Warnings {
		logger.Warn("mcp config", "warning", w)
	}
	for _, s := range d.Skipped {
		logger.Debug("mcp server skipped", "server", s.Name, "reason", s.Reason, "detail", events.RedactText(s.Detail), "at", s.Position)
	}
	return d, nil
}

type mergeOptions struct {
	cwd       string
	filterExa bool
	lookup    EnvLookup
}

// merge applies the filters of [LoadConfigs] to the entries of every file,
// given highest priority first.
func merge(results [][]fileResult, mo mergeOptions) *Discovery {
	d := &Discovery{}
	disabledBy := map[string]string{} // name → path of the list
	enabledBy := map[string]bool{}
	for _, files := range results {
		for _, fr := range files {
			if fr.err != nil {
				d.Errors = append(d.Errors, FileError{Path: fr.err.Path, Error: fr.err.Msg})
			}
			d.Warnings = append(d.Warnings, fr.warnings...)
			for _, n := range fr.disabledServers {
				if _, ok := disabledBy[n]; !ok {
					disabledBy[n] = fr.path
				}
			}
			for _, n := range fr.enabledServers {
				enabledBy[n] = true
			}
		}
	}
	winners := map[string]events.SourceMeta{}
	skip := func(e *entry, reason events.SkipReason, detail string) {
		s := &Skipped{Name: e.name, Reason: reason, Detail: detail, Source: e.src, Position: e.where, Config: e.cfg}
		d.Skipped = append(d.Skipped, *s)
		d.outcomes = append(d.outcomes, outcome{skipped: s})
	}
	for _, files := range results {
		for _, fr := range files {
			for i := range fr.entries {
				e := &fr.entries[i]
				d.Warnings = append(d.Warnings, e.warnings...)
				if msgs := append(validate(e.cfg, e.problems), checkPlaces(e.cfg, mo.lookup, mo.cwd)...); len(msgs) > 0 {
					skip(e, events.SkipInvalid, strings.Join(msgs, "; "))
					continue
				}
				if w, dup := winners[e.name]; dup {
					skip(e, events.SkipShadowed, fmt.Sprintf("shadowed by %s (%s) %s", w.ProviderName, w.Level, w.Path))
					continue
				}
				winners[e.name] = e.src
				if path, ok := disabledBy[e.name]; ok {
					skip(e, events.SkipDisabled, "listed in disabledServers of "+path)
					continue
				}
				if e.disabled != "" || (e.cfg.Enabled != nil && !*e.cfg.Enabled) {
					if !enabledBy[e.name] {
						detail := e.disabled
						if detail == "" {
							detail = "disabled in " + e.src.Path
						}
						skip(e, events.SkipDisabled, detail)
						continue
					}
					// Forced on by enabledServers: the returned
					// configuration no longer says disabled, so whoever
					// connects it need not know about the lists.
					e.cfg.Enabled = nil
				}
				if mo.filterExa && isExa(e.cfg, mo.lookup) {
					detail := "Exa servers are replaced by the built-in Exa tools"
					if key := exaKey(e.cfg, mo.lookup); key != "" {
						if !slices.Contains(d.ExaAPIKeys, key) {
							d.ExaAPIKeys = append(d.ExaAPIKeys, key)
						}
						detail += "; API key collected"
					}
					skip(e, events.SkipExa, detail)
					continue
				}
				s := &Server{Config: e.cfg, Source: e.src}
				d.Servers = append(d.Servers, *s)
				d.outcomes = append(d.outcomes, outcome{server: s})
			}
		}
	}
	return d
}

var (
	exaHostPattern = regexp.MustCompile(`(?i)mcp\.exa\.ai`)
	exaKeyPattern  = regexp.MustCompile(`(?i)exaApiKey=([^&\s]+)`)
)

// isExa reports whether cfg is an Exa server: named "exa" (any case), or
// with an mcp.exa.ai URL or argument (references expanded through lookup
// for the check).
func isExa(cfg events.ServerConfig, lookup EnvLookup) bool {
	if strings.EqualFold(cfg.Name, "exa") || exaHostPattern.MatchString(expandRefs(cfg.URL, lookup, nil)) {
		return true
	}
	for _, a := range cfg.Args {
		if exaHostPattern.MatchString(expandRefs(a, lookup, nil)) {
			return true
		}
	}
	return false
}

// exaKey returns the API key of an Exa server: exaApiKey= in the URL or an
// argument (references expanded through lookup), else its EXA_API_KEY env
// value (resolved without running anything), else "".
func exaKey(cfg events.ServerConfig, lookup EnvLookup) string {
	if m := exaKeyPattern.FindStringSubmatch(expandRefs(cfg.URL, lookup, nil)); m != nil {
		return m[1]
	}
	for _, a := range cfg.Args {
		if m := exaKeyPattern.FindStringSubmatch(expandRefs(a, lookup, nil)); m != nil {
			return m[1]
		}
	}
	if v, ok := cfg.Env["EXA_API_KEY"]; ok {
		return resolveWithoutCommands(v, lookup)
	}
	return ""
}

// resolveWithoutCommands applies [Resolver.Resolve]'s rules except that a
// "!command" value yields "" instead of running.
func resolveWithoutCommands(v string, lookup EnvLookup) string {
	if strings.HasPrefix(v, "!") {
		return ""
	}
	if strings.Contains(v, "${") {
		out, err := expandStrict(v, lookup)
		if err != nil {
			return ""
		}
		return out
	}
	return v
}
