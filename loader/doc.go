// Package loader discovers MCP server configurations and resolves their
// secrets at connect time.
//
// [LoadConfigs] reads the configuration files of mcplife itself and of the
// agent hosts a user may already have configured (Claude Code, OpenAI Codex,
// Gemini CLI, OpenCode, Cursor, Windsurf, Crush, Claude Desktop, VS Code and
// a plain mcp.json), maps each format onto [events.ServerConfig], and
// merges them by provider priority (see [Providers]). It reads files only:
// nothing is executed or connected during discovery.
//
// # Formats
//
// JSON files may hold // and /* */ comments and trailing commas. A file
// that cannot be parsed yields one [FileError] naming the file with line and
// column; every other file still loads. A server entry with a bad field
// makes that entry invalid, not the file.
//
// # Substitution
//
// At discovery, ${VAR}, ${VAR:-default} and ${env:VAR} are expanded in
// command, arguments, URL and working directory (Crush and Gemini CLI also
// spell a reference $VAR, OpenCode {env:VAR}; VS Code, Cursor and Windsurf
// files also know ${workspaceFolder} and ${userHome}). An unset variable
// without default stays as written and adds a warning naming the file and
// the server.
//
// Env and header values are secrets, so they are not expanded at
// discovery: references in them are normalised to ${VAR} (and checked, with
// the same warnings) and left for [Resolver.Resolve], which the connecting
// code calls for every env and header value at every connect. Codex's
// bearer_token_env_var, env_http_headers and env_vars map onto such
// references too ("Authorization: Bearer ${VAR}"). A secret therefore never
// enters a discovered configuration, its hash, or an event.
//
// # Trust boundary
//
// Project-level files (inside the working directory) can name commands to
// run. With Options.DisableProjectConfig, such files are not opened at
// all (a warning names each one present), so nothing they configure is ever
// returned for connecting or resolving, and a file planted there cannot
// make discovery block.
//
// Every config file, user-level ones included, must be a regular file
// (symlinks are followed) of at most 4 MiB, or 256 MiB for ~/.claude.json,
// where Claude Code also keeps its history. A named pipe, a device or a
// larger file yields a [FileError] saying why, without being read.
//
// # Watching
//
// [Discovery.WatchPaths] names every file a discovery read and every
// candidate path it found empty. A [Watcher] on them reports, debounced,
// each file edited, replaced by a rename, created, deleted or changed in
// mode (the system's file notifications through fsnotify, watching each
// file's directory or, while that does not exist, its nearest existing
// ancestor; stat polling where there are none, or on request); the host
// then discovers again and applies what differs.
//
// Example:
//
//	d, err := loader.LoadConfigs(ctx, loader.Options{
//		Cwd:       projectDir,
//		Home:      os.Getenv("HOME"),
//		LookupEnv: os.LookupEnv,
//	})
//	if err != nil {
//		return err // discovery failed as a whole
//	}
//	for _, ev := range d.Events() {
//		record(ev) // ServerDiscovered, ServerSkipped, ServerInvalid
//	}
//	r := loader.NewResolver(os.LookupEnv, nil)
//	for _, s := range d.Servers {
//		cfg, err := r.ResolveConfig(ctx, s.Config) // at every connect
//		...
//	}
package loader
