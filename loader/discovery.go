package loader

import (
	"log/slog"
	"maps"
	"slices"

	"github.com/mcplife/mcplife/events"
)

// Options are the inputs of [LoadConfigs]. The home directory, the working
// directory and the environment are explicit: the loader never reads the
// process environment or looks up the home directory itself.
type Options struct {
	// Cwd is the project directory (required). A relative path is made
	// absolute.
	Cwd string
	// Home is the user's home directory (required).
	Home string
	// LookupEnv looks up environment variables for ${VAR} expansion,
	// XDG_CONFIG_HOME, CODEX_HOME and APPDATA. When nil, Env is used.
	LookupEnv EnvLookup
	// Env is the environment when LookupEnv is nil. A nil map means an
	// empty environment.
	Env map[string]string
	// ExtraConfigs are further files in mcplife's own format (a
	// "mcpServers" object plus optional "disabledServers" and
	// "enabledServers" lists), such as those given with --config. They rank
	// above every other source, in the order given (the first wins), and
	// have level "native": they were named explicitly, so they are not
	// project-level files and DisableProjectConfig does not drop them. A
	// relative path is taken relative to Cwd. A missing file is an error,
	// and so is one that is not a regular file, as for every config file.
	ExtraConfigs []string
	// DisableProjectConfig leaves every project-level file (one inside
	// Cwd) unopened: nothing such a file configures is connected or run,
	// and each one that exists is named in [Discovery.Warnings].
	DisableProjectConfig bool
	// KeepExa keeps Exa servers like any other. By default they are
	// removed and their API keys collected (see [Discovery.ExaAPIKeys]).
	KeepExa bool
	// GOOS selects the platform's Claude Desktop path; empty means
	// runtime.GOOS.
	GOOS string
	// Logger receives warnings and per-file problems; nil discards.
	Logger *slog.Logger
}

// Server is one server configuration that survived discovery.
type Server struct {
	// Config is the unresolved configuration, Name set; every filter has
	// been applied (a server forced on by enabledServers has Enabled nil),
	// so it is to be connected as is. Env and header
	// values may still hold ${VAR} references and "!command" values: they
	// are resolved at connect time by [Resolver].
	Config events.ServerConfig
	Source events.SourceMeta
}

// Skipped is a server configuration that was found but will not be
// connected.
type Skipped struct {
	Name string
	// Reason is one of events.SkipShadowed, SkipDisabled, SkipExa or
	// SkipInvalid. (Entries of project-level files are not skipped with
	// events.SkipProjectDisabled: with project configs disabled those
	// files are not read.)
	Reason events.SkipReason
	// Detail says why, e.g. which source shadowed the entry, which list
	// disabled it, or the validation messages (for SkipInvalid, every
	// problem found, each prefixed `Server "<name>": `, joined with "; ";
	// those of [events.ServerConfig.Validate] read as the manager's).
	Detail string
	Source events.SourceMeta
	// Position locates the entry: "path:line:col" for JSON files, the
	// path for TOML files.
	Position string
	// Config is the configuration as mapped (unresolved; not redacted).
	Config events.ServerConfig
}

// FileError is a problem with one whole file: unreadable, not valid JSON or
// TOML, or of the wrong shape. Error names the path, with line and column
// when the parser gives them ("path:line:col: message"). Problems of one
// server entry are not FileErrors: they make that entry [Skipped] with
// reason events.SkipInvalid.
type FileError struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// Discovery is the result of [LoadConfigs].
type Discovery struct {
	// Servers are the configurations to connect, highest priority first.
	// Names are unique.
	Servers []Server
	// Skipped lists every other entry found, in the same order as the
	// sources were ranked.
	Skipped []Skipped
	// Errors lists files that could not be read or parsed; every other file
	// was still loaded. Project-level files are not listed when project
	// configs are disabled (they are not read).
	Errors []FileError
	// Warnings are human-readable notes, such as ${VAR} references to
	// unset variables; each names the file and the server.
	Warnings []string
	// ExaAPIKeys are the API keys of the filtered Exa servers, in discovery
	// order, without duplicates. They are secrets.
	ExaAPIKeys []string
	// FoundFiles are the config files that existed, sorted: each was read,
	// or refused or unparsable (then it is in Errors too). Project-level
	// files left unopened because project configs are disabled are not
	// among them.
	FoundFiles []string
	// MissingFiles are the candidate config paths that did not exist,
	// sorted: a file created at one of them changes what discovery finds.
	MissingFiles []string
	// EmptyFiles are the FoundFiles that held nothing but white space,
	// sorted. Such a file configures nothing; a host that watches its
	// configs can tell a file emptied for a moment by a save that
	// truncates first and writes after from one that holds servers.
	EmptyFiles []string

	// outcomes are all entries in ranked order, for [Discovery.Events].
	outcomes []outcome
}

// outcome is one entry's fate: served (skipped is nil) or skipped.
type outcome struct {
	server  *Server
	skipped *Skipped
}

// WatchPaths returns the paths whose change can change what this
// discovery found: FoundFiles and MissingFiles together, sorted. A host
// that reloads on a change watches them with [NewWatcher] and, after each
// rediscovery, watches the new discovery's paths, since a changed
// environment (XDG_CONFIG_HOME, CODEX_HOME) or working directory moves
// them.
func (d *Discovery) WatchPaths() []string {
	out := slices.Concat(d.FoundFiles, d.MissingFiles)
	slices.Sort(out)
	return slices.Compact(out)
}

// Configs returns the configurations of d.Servers keyed by name, and their
// sources.
func (d *Discovery) Configs() (map[string]events.ServerConfig, map[string]events.SourceMeta) {
	cfgs := make(map[string]events.ServerConfig, len(d.Servers))
	srcs := make(map[string]events.SourceMeta, len(d.Servers))
	for _, s := range d.Servers {
		cfgs[s.Config.Name] = s.Config.Clone()
		srcs[s.Config.Name] = s.Source
	}
	return cfgs, srcs
}

// Events returns the events that record this discovery, one per entry found,
// in ranked order (the order of the sources, then of the entries in each
// file): [events.ServerDiscovered] for a server to connect (redacted
// configuration, hash of the unredacted unresolved configuration),
// [events.ServerInvalid] for an entry that failed validation, and
// [events.ServerSkipped] for every other skipped entry. The result is the
// same for the same inputs and holds no secret.
func (d *Discovery) Events() []events.Event {
	out := make([]events.Event, 0, len(d.outcomes))
	for _, o := range d.outcomes {
		switch {
		case o.server != nil:
			cfg := o.server.Config
			out = append(out, &events.ServerDiscovered{
				Server:     cfg.Name,
				Source:     o.server.Source,
				Transport:  cfg.Transport(),
				ConfigHash: cfg.Hash(),
				Config:     cfg.Redact(),
			})
		case o.skipped.Reason == events.SkipInvalid:
			out = append(out, &events.ServerInvalid{
				Server: o.skipped.Name,
				Error:  events.RedactText(o.skipped.Detail),
				Source: o.skipped.Source,
			})
		default:
			out = append(out, &events.ServerSkipped{
				Server: o.skipped.Name,
				Reason: o.skipped.Reason,
				Detail: events.RedactText(o.skipped.Detail),
				Source: o.skipped.Source,
			})
		}
	}
	return out
}

// Report is the machine-readable form of a discovery printed by
// `mcp-audit discover --json`. Field names are fixed. Env and header values
// are redacted and Exa keys only counted.
type Report struct {
	Servers []ReportServer  `json:"servers"`
	Skipped []ReportSkipped `json:"skipped"`
	Errors  []FileError     `json:"errors"`
	ExaKeys int             `json:"exaKeys"`
}

// ReportServer is one server of a [Report].
type ReportServer struct {
	Name          string            `json:"name"`
	Transport     string            `json:"transport"`
	Command       string            `json:"command,omitempty"`
	Args          []string          `json:"args,omitempty"`
	Cwd           string            `json:"cwd,omitempty"`
	URL           string            `json:"url,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	EnabledTools  []string          `json:"enabledTools,omitempty"`
	DisabledTools []string          `json:"disabledTools,omitempty"`
	TimeoutMs     *int64            `json:"timeoutMs,omitempty"`
	ToolTimeoutMs *int64            `json:"toolTimeoutMs,omitempty"`
	Source        events.SourceMeta `json:"source"`
}

// ReportSkipped is one skipped entry of a [Report].
type ReportSkipped struct {
	Name   string            `json:"name"`
	Reason events.SkipReason `json:"reason"`
	Detail string            `json:"detail,omitempty"`
	Source events.SourceMeta `json:"source"`
}

// Report returns d in the documented `discover --json` shape. Slices are
// never nil, so they encode as [].
func (d *Discovery) Report() Report {
	r := Report{
		Servers: []ReportServer{},
		Skipped: []ReportSkipped{},
		Errors:  slices.Clone(d.Errors),
		ExaKeys: len(d.ExaAPIKeys),
	}
	if r.Errors == nil {
		r.Errors = []FileError{}
	}
	for _, s := range d.Servers {
		c := s.Config.Redact()
		r.Servers = append(r.Servers, ReportServer{
			Name:          c.Name,
			Transport:     c.Transport(),
			Command:       c.Command,
			Args:          c.Args,
			Cwd:           c.Cwd,
			URL:           c.URL,
			Headers:       c.Headers,
			Env:           c.Env,
			EnabledTools:  c.EnabledTools,
			DisabledTools: c.DisabledTools,
			TimeoutMs:     c.TimeoutMs,
			ToolTimeoutMs: c.ToolTimeoutMs,
			Source:        s.Source,
		})
	}
	for _, s := range d.Skipped {
		r.Skipped = append(r.Skipped, ReportSkipped{
			Name:   s.Name,
			Reason: s.Reason,
			Detail: events.RedactText(s.Detail),
			Source: s.Source,
		})
	}
	return r
}

// entry is one server entry as mapped from a file, before filtering.
type entry struct {
	name string
	cfg  events.ServerConfig
	src  events.SourceMeta
	// where locates the entry for messages: "path:line:col" or the path.
	where string
	// problems are mapping problems (wrong field types, unsupported
	// values); each is a message without the `Server "<n>": ` prefix.
	problems []string
	// disabled, when set, skips the entry as disabled for a reason the
	// source itself states (e.g. Gemini's mcp.excluded).
	disabled string
	// warnings belong to this entry: dropped with it when its file is
	// project-level and project configs are disabled.
	warnings []string
	// literal: env and header values are used as written, never as the
	// name of a variable (mcplife's envPolicy "literal").
	literal bool
}

// fileResult is what one source file yields.
type fileResult struct {
	entries  []entry
	err      *fileErr
	warnings []string
	// disabledServers and enabledServers are mcplife's file-level lists.
	disabledServers []string
	enabledServers  []string
	level           string
	path            string
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	return slices.Sorted(maps.Keys(m))
}
