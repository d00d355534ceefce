// Command mcp-audit runs, inspects, replays and verifies the MCP server
// lifecycle recorded by mcplife. Run `mcp-audit help` for the subcommands.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/paths"
	"github.com/mcplife/mcplife/journal"
	"github.com/mcplife/mcplife/natsbus"
	"github.com/mcplife/mcplife/store"
	"github.com/mcplife/mcplife/store/postgres"
	"github.com/mcplife/mcplife/store/sqlite"
)

func main() {
	// SIGTERM and SIGHUP (the terminal went away) end a command as Ctrl-C
	// does, so run still tears every server down.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	// A write to a closed stdout (the reader of a pipe gone, as Ctrl-C
	// ends a whole pipeline) then fails instead of killing this process
	// before run's teardown. Notify, not Ignore: an ignored signal would
	// stay ignored in the servers it starts.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	// A second interrupt while the first one's teardown waits (for a
	// store that stopped answering, say) ends the process at once.
	again := make(chan os.Signal, 1)
	go func() {
		<-ctx.Done()
		signal.Notify(again, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		<-again
		fmt.Fprintln(os.Stderr, "mcp-audit: interrupted again: exiting without waiting for the teardown to finish")
		os.Exit(130)
	}()
	code := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit statuses.
const (
	exitOK    = 0
	exitCheck = 1 // a check failed, or a promised connection failed
	exitUsage = 2 // usage or input error
)

// usageError is an error in the command line or its input (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// checkFailed reports a failed check (exit 1) whose details were printed.
var errCheckFailed = errors.New("check failed")

// globals are the flags every subcommand accepts.
type globals struct {
	db     string
	bus    string
	json   bool
	stdout io.Writer
	stderr io.Writer
	color  bool

	// forceProgress shows run's progress when stderr is no terminal, and
	// installAfter replaces defaultInstallAfter (tests set both).
	forceProgress bool
	installAfter  time.Duration
}

type command struct {
	name    string
	summary string
	hidden  bool
	run     func(ctx context.Context, g *globals, args []string) error
}

func commands() []command {
	return []command{
		{name: "demo", summary: "zero-setup tour: bundled example servers, two lifecycles, replay", run: runDemo},
		{name: "run", summary: "behave like an agent runtime on real configs", run: runRun},
		{name: "discover", summary: "show what would be connected, and what is skipped and why", run: runDiscover},
		{name: "sessions", summary: "list recorded sessions", run: runSessions},
		{name: "replay", summary: "replay SESSION|last [--follow]: a session's events with relative times", run: runReplay},
		{name: "search", summary: "search QUERY [--server S] [--limit N]: rank the tools of the discovered servers", run: runSearch},
		{name: "inspect", summary: "inspect SESSION --at TIME|--seq N: servers and tools at that point", run: runInspect},
		{name: "verify", summary: "verify [--chain] [SESSION|--all]: check the lifecycle ordering invariants, or the hash chain", run: runVerify},
		{name: "auth", summary: "auth login SERVER | status [--json] | logout SERVER: OAuth tokens of remote servers", run: runAuth},
		{name: "timeline", summary: "timeline SESSION -o FILE.svg|.html: waterfall of the startup", run: runTimeline},
		{name: "diff", summary: "diff A B [--server S] [--fail-on breaking]: what servers listed, changed between two sessions", run: runDiff},
		{name: "mock", summary: "mock SESSION --server NAME [--http ADDR]: serve a recorded server as a real MCP server", run: runMock},
		{name: "export", summary: "export SESSION -o FILE.html|.json: one self-contained report of a session", run: runExport},
		{name: "daemon", summary: "daemon [--idle DURATION]: run the shared host that run --share attaches to", run: runDaemon},
		{name: "proxy", summary: "proxy SERVER [--config FILE]... [--cwd DIR]: a stdio MCP server relaying one shared server, for any agent's config", run: runProxy},
		{name: "version", summary: "print the version of mcp-audit and of Go it was built with", run: runVersion},
		{name: fixtureCommand, hidden: true, run: runFixture},
	}
}

// Run is the whole command: it parses args, runs a subcommand and returns
// the exit status. It never calls os.Exit.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runWith(ctx, args, &globals{stdout: stdout, stderr: stderr})
}

// runWith is Run with the globals prepared by the caller (tests set the
// fields no flag sets, such as a forced progress display).
func runWith(ctx context.Context, args []string, g *globals) int {
	out := &pipeWriter{w: g.stdout}
	g.stdout = out
	stdout, stderr := out, g.stderr
	fs := newFlagSet("mcp-audit", g)
	version := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return exitOK
		}
		fmt.Fprintf(stderr, "mcp-audit: %s\n", escapeLine(flagError(fs, err).Error()))
		return exitUsage
	}
	rest := fs.Args()
	if *version {
		return exitCode(runVersion(ctx, g, nil), stderr, out)
	}
	if len(rest) == 0 {
		usage(stderr)
		return exitUsage
	}
	name := rest[0]
	if name == "help" || name == "--help" {
		if len(rest) > 1 { // help CMD [SUB]: the command's own --help
			return runWith(ctx, append(slices.Clone(rest[1:]), "--help"), &globals{stdout: out.w, stderr: stderr, db: g.db, bus: g.bus})
		}
		usage(stdout)
		return exitOK
	}
	g.color = useColor(out.w)
	for _, c := range commands() {
		if c.name == name {
			err := c.run(ctx, g, rest[1:])
			if he, ok := errors.AsType[helpError](err); ok {
				printHelp(stdout, he.fs)
				return exitOK
			}
			return exitCode(err, stderr, out)
		}
	}
	return exitCode(unknownCommand(name), stderr, out)
}

func exitCode(err error, stderr io.Writer, stdout *pipeWriter) int {
	var ue usageError
	var es exitStatus
	switch {
	case err == nil:
		return exitOK
	case stdout.closed():
		// The reader of stdout went away (| head): nothing more to say.
		return exitOK
	case errors.As(err, &es):
		return int(es)
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errCheckFailed):
		return exitCheck
	case errors.As(err, &ue):
		if msg := firstLine(err.Error()); msg != "" {
			fmt.Fprintf(stderr, "mcp-audit: %s\n", escapeLine(msg))
		}
		return exitUsage
	case errors.Is(err, context.Canceled):
		return exitOK
	}
	fmt.Fprintf(stderr, "mcp-audit: %s\n", escapeText(err.Error()))
	return exitCheck
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: mcp-audit [--db PATH|postgres://…] [--bus nats://…] [--json] <command> [arguments]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands() {
		if !c.hidden {
			fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
		}
	}
	fmt.Fprintln(w, "\nmcp-audit help COMMAND (or COMMAND --help) prints a command's flags and an example.")
	fmt.Fprintln(w, "\nglobal flags (before or after the command):")
	fmt.Fprintln(w, "  --db PATH  event store: a SQLite file, or postgres://…[?schema=NAME] for a fleet's shared store")
	fmt.Fprintln(w, "             (default $MCP_AUDIT_DB, else $XDG_STATE_HOME/mcplife/events.db, else ~/.local/state/mcplife/events.db)")
	fmt.Fprintln(w, "  --bus URL  nats://… : the fleet's NATS JetStream bus, so other hosts' events arrive live (default $MCPLIFE_BUS)")
	fmt.Fprintln(w, "  --json     machine-readable output (shapes in the README)")
	fmt.Fprintln(w, "  --version  print the version and exit")
	fmt.Fprintln(w, "\nenvironment: MCPLIFE_HOST sets the host id recorded on events (default a hash of user and host name, and of the PID namespace in a container)")
	fmt.Fprintln(w, "\nexit status: 0 ok, 1 a check or a promised connection failed, 2 usage or input error")
}

// newFlagSet returns a flag set with the global flags bound to g.
func newFlagSet(name string, g *globals) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {} // help and errors are printed by Run
	fs.StringVar(&g.db, "db", g.db, "event store path or postgres:// URL")
	fs.StringVar(&g.bus, "bus", g.bus, "nats:// URL of the fleet's bus")
	fs.BoolVar(&g.json, "json", g.json, "machine-readable output")
	return fs
}

// parseInterleaved parses flags that may come before or after positional
// arguments, and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, helpError{fs}
			}
			return nil, usageError{flagError(fs, err)}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// dbPath resolves the store path: --db, else the default store
// (paths.DefaultStore: $MCP_AUDIT_DB, $XDG_STATE_HOME/mcplife/events.db,
// ~/.local/state/mcplife/events.db), where embedded sessions record too.
func (g *globals) dbPath() (string, error) {
	if g.db != "" {
		return g.db, nil
	}
	if p := os.Getenv(paths.StoreEnv); p != "" {
		return p, nil
	}
	return g.defaultDBPath()
}

// defaultDBPath is the store of a user who named none:
// $XDG_STATE_HOME/mcplife/events.db, else ~/.local/state/mcplife/events.db.
func (g *globals) defaultDBPath() (string, error) {
	p, err := paths.StateStore()
	if err != nil {
		return "", usagef("no --db given and no home directory: %v", err)
	}
	return p, nil
}

func mustPath(g *globals) string {
	p, _ := g.dbPath()
	if isPostgres(p) {
		return redactURL(p)
	}
	return p
}

// isPostgres reports whether the store named on the command line is a
// PostgreSQL connection URL rather than a SQLite file.
func isPostgres(target string) bool {
	return strings.HasPrefix(target, "postgres://") || strings.HasPrefix(target, "postgresql://")
}

// postgresTarget splits the store's schema (the query parameter "schema",
// default postgres.DefaultSchema) from a PostgreSQL URL, so several stores
// can share a database.
func postgresTarget(raw string) (connString, schema string) {
	u, err := url.Parse(raw)
	if err != nil {
		return raw, ""
	}
	q := u.Query()
	schema = q.Get("schema")
	q.Del("schema")
	u.RawQuery = q.Encode()
	return u.String(), schema
}

// redactURL is raw for messages: its credentials replaced
// ([events.RedactURL]), and nothing of it when it does not parse.
func redactURL(raw string) string {
	if _, err := url.Parse(raw); err != nil {
		return "the database URL"
	}
	return events.RedactURL(raw)
}

// storeOpenTimeout bounds connecting to a PostgreSQL store.
const storeOpenTimeout = 15 * time.Second

// openReadOnly opens the store for the inspection commands. It never
// creates, migrates or modifies it; every failure is a one-line input
// error.
func (g *globals) openReadOnly() (store.Store, error) {
	path, err := g.dbPath()
	if err != nil {
		return nil, err
	}
	if isPostgres(path) {
		ctx, cancel := context.WithTimeout(context.Background(), storeOpenTimeout)
		defer cancel()
		conn, schema := postgresTarget(path)
		db, err := postgres.Open(ctx, conn, &postgres.Options{ReadOnly: true, Schema: schema})
		if err != nil {
			return nil, storeOpenError(redactURL(path), err)
		}
		return db, nil
	}
	db, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
	if err != nil {
		return nil, storeOpenError(path, err)
	}
	return db, nil
}

// storeOpenError is the one-line input error of a store that would not
// open.
func storeOpenError(name string, err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return usagef("no event store at %s (run `mcp-audit demo` or `mcp-audit run` first, or pass --db)", name)
	case errors.Is(err, store.ErrNewerSchema):
		return usagef("%s was written by a newer mcplife; upgrade mcp-audit to read it", name)
	}
	return usagef("open %s: %s", name, strings.ReplaceAll(err.Error(), "\n", " "))
}

// openWritable opens (creating when needed) the store for run and demo.
func (g *globals) openWritable() (store.Store, error) {
	path, err := g.dbPath()
	if err != nil {
		return nil, err
	}
	if isPostgres(path) {
		ctx, cancel := context.WithTimeout(context.Background(), storeOpenTimeout)
		defer cancel()
		conn, schema := postgresTarget(path)
		db, err := postgres.Open(ctx, conn, &postgres.Options{Schema: schema})
		if err != nil {
			return nil, storeOpenError(redactURL(path), err)
		}
		return db, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, usagef("create the directory of %s: %v", path, err)
	}
	db, err := sqlite.Open(path, nil)
	if err != nil {
		return nil, storeOpenError(path, err)
	}
	return db, nil
}

// busURL returns the bus named by --bus or $MCPLIFE_BUS ("" for none).
func (g *globals) busURL() string {
	if g.bus != "" {
		return g.bus
	}
	return os.Getenv("MCPLIFE_BUS")
}

// busTopic returns the bus topic of st: one per store, named after its
// identity, so that stores sharing a NATS server (two databases, two
// PostgreSQL servers, every SQLite user with MCPLIFE_BUS exported) never
// send each other their events. A store without an identity (a file of an
// older schema opened read-only) takes journal.DefaultTopic; its
// subscriptions read the store, taking no event off the bus.
func busTopic(st store.Store) string {
	if id := store.ID(st); id != "" {
		return journal.DefaultTopic + "-" + id
	}
	return journal.DefaultTopic
}

// journalOn returns a journal on st, on the bus when one is named, with
// the host id of $MCPLIFE_HOST when set, keeping what st cannot take yet
// in spool (none when ""); closing the returned function
// closes the journal and the bus, not st.
func (g *globals) journalOn(st store.Store, spool string) (*journal.Journal, func(), error) {
	opts := &journal.Options{Host: os.Getenv("MCPLIFE_HOST"), Topic: busTopic(st), Spool: spool}
	closeBus := func() {}
	if u := g.busURL(); u != "" {
		if !strings.HasPrefix(u, "nats://") && !strings.HasPrefix(u, "tls://") {
			return nil, nil, usagef("--bus %s: want a nats:// URL", redactURL(u))
		}
		bus, err := natsbus.Open(u, nil)
		if err != nil {
			return nil, nil, usagef("bus: %s", err)
		}
		opts.Publisher, opts.Subscriber, closeBus = bus, bus, func() { bus.Close() }
	}
	j, err := journal.New(st, opts)
	if err != nil {
		closeBus()
		return nil, nil, err
	}
	return j, func() { j.Close(); closeBus() }, nil
}

// openJournal opens the store for writing and a journal on it; closing
// the returned function closes both.
func (g *globals) openJournal() (store.Store, *journal.Journal, func(), error) {
	db, err := g.openWritable()
	if err != nil {
		return nil, nil, nil, err
	}
	j, closeJournal, err := g.journalOn(db, g.spoolDir())
	if err != nil {
		db.Close()
		return nil, nil, nil, err
	}
	return db, j, func() { closeJournal(); db.Close() }, nil
}

// spoolDir is where the journal keeps the events the store could not take
// yet (see journal.Options.Spool), so that they are stored by the next
// host of that store. For a SQLite store it is beside the file (its path
// + ".spool"). A PostgreSQL store has no local file, so its spool is in
// the directory of the default store, one per server, database and schema
// (named by a digest of those and the user, never the password): a host of
// another store never stores them into its own.
func (g *globals) spoolDir() string {
	path, err := g.dbPath()
	if err != nil {
		return ""
	}
	if !isPostgres(path) {
		return path + ".spool"
	}
	def, err := (&globals{}).defaultDBPath()
	if err != nil {
		return ""
	}
	conn, schema := postgresTarget(path)
	key := conn
	if u, err := url.Parse(conn); err == nil {
		key = u.User.Username() + "@" + u.Host + u.Path
	}
	sum := sha256.Sum256([]byte(key + "\x00" + schema))
	return filepath.Join(filepath.Dir(def), "spool", "postgres-"+hex.EncodeToString(sum[:8]))
}

// resolveSession maps "last", an exact id or a unique id prefix onto a
// recorded session id ([store.ResolveSession]); a reference that names no
// one session is a usage error.
func resolveSession(ctx context.Context, st store.Store, arg string) (string, error) {
	id, err := store.ResolveSession(ctx, st, arg)
	if re, ok := errors.AsType[*store.SessionRefError](err); ok {
		if !re.Empty && re.Matches == 0 {
			return "", usagef("%s (see mcp-audit sessions)", re)
		}
		return "", usagef("%s", re)
	}
	return id, err
}

// openSession opens the store read-only and resolves arg to a session id.
func (g *globals) openSession(ctx context.Context, arg string) (store.Store, string, error) {
	st, err := g.openReadOnly()
	if err != nil {
		return nil, "", err
	}
	session, err := resolveSession(ctx, st, arg)
	if err != nil {
		st.Close()
		return nil, "", err
	}
	return st, session, nil
}

// writeJSON prints v as indented JSON without HTML escaping, and with
// the characters a terminal acts on escaped (see [escapeJSON]).
func (g *globals) writeJSON(v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := g.stdout.Write(escapeJSON(b.Bytes()))
	return err
}

// writeJSONLine prints v as one compact JSON line, with the characters a
// terminal acts on escaped (see [escapeJSON]).
func (g *globals) writeJSONLine(v any) error {
	b, err := marshalNoEscape(v)
	if err != nil {
		return err
	}
	_, err = g.stdout.Write(append(escapeJSON(b), '\n'))
	return err
}

func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// useColor reports whether w is a terminal and NO_COLOR is unset.
func useColor(w io.Writer) bool {
	if _, ok := os.LookupEnv("NO_COLOR"); ok {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// paint wraps s in an ANSI colour when colour is on. s must be escaped
// already, when it holds text from outside.
func (g *globals) paint(code, s string) string {
	if !g.color || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

const (
	colorRed    = "31"
	colorGreen  = "32"
	colorYellow = "33"
	colorDim    = "2"
)

func (g *globals) statusColor(status string) string {
	switch status {
	case "connected", "ready", "ok":
		return g.paint(colorGreen, status)
	case "connecting", "deferred", "awaited":
		return g.paint(colorYellow, status)
	case "disconnected", "failed":
		return g.paint(colorRed, status)
	}
	return escapeLine(status)
}

type toolJSON struct {
	Name     string `json:"name"`
	Server   string `json:"server"`
	Tool     string `json:"tool"`
	Deferred bool   `json:"deferred"`
	// Loaded is set when a tool budget is in force: the tool is exposed
	// to the model now.
	Loaded *bool `json:"loaded,omitempty"`
}

func fmtOffset(d time.Duration) string {
	return "+" + strconv.FormatFloat(ms(d), 'f', 1, 64) + "ms"
}

func fmtDur(d time.Duration) string {
	if d < time.Second {
		return strconv.FormatFloat(ms(d), 'f', 1, 64) + "ms"
	}
	return d.Round(time.Millisecond).String()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
