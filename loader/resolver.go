package loader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/internal/proc"
)

// Errors returned by [Resolver.Resolve], wrapped with the reason. None of
// them carries the value, the command or its output.
var (
	// ErrCommandFailed: a "!command" exited unsuccessfully or could not start.
	ErrCommandFailed = errors.New("shell command failed")
	// ErrCommandTimeout: a "!command" ran longer than the limit.
	ErrCommandTimeout = errors.New("shell command timed out")
	// ErrEmptyOutput: a "!command" printed nothing but white space.
	ErrEmptyOutput = errors.New("shell command printed nothing")
	// ErrUnsetVariable: a ${VAR} reference without default names an unset
	// variable.
	ErrUnsetVariable = errors.New("environment variable is not set")
)

// DefaultCommandTimeout bounds one "!command".
const DefaultCommandTimeout = 10 * time.Second

// ResolverOptions configure a [Resolver]. The zero value (or nil) means
// defaults.
type ResolverOptions struct {
	// CommandTimeout bounds each "!command"; 0 means DefaultCommandTimeout.
	CommandTimeout time.Duration
	// Shell runs commands as Shell -c COMMAND; "" means "/bin/sh".
	Shell string
	// Dir is the working directory of commands; "" means the process's.
	Dir string
	// Environ is the environment of commands (KEY=VALUE); nil means the
	// process's environment.
	Environ []string
	// Logger receives one debug line per command run (never its output or
	// the value); nil discards.
	Logger *slog.Logger
}

// Resolver performs the connect-time substitution of env and header values
// (a secret never enters a configuration; it is resolved here, at every
// connect).
//
// A Resolver is safe for concurrent use. Command results are cached for
// its lifetime, and concurrent resolutions of one command share one run.
type Resolver struct {
	lookup  EnvLookup
	timeout time.Duration
	shell   string
	dir     string
	environ []string
	logger  *slog.Logger

	mu sync.Mutex
	// cache holds successful command results by the full value.
	cache map[string]string
	// inflight holds commands being run, by the full value.
	inflight map[string]*commandRun
}

// ResolverFor returns a [Resolver] over the same environment as a
// discovery with opts (opts.LookupEnv, else opts.Env), running commands in
// opts.Cwd unless ro names another directory. Use it as the manager's
// resolver so connect-time substitution sees what discovery saw.
func ResolverFor(opts Options, ro *ResolverOptions) *Resolver {
	var o ResolverOptions
	if ro != nil {
		o = *ro
	}
	if o.Dir == "" {
		o.Dir = opts.Cwd
	}
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = MapEnv(opts.Env)
	}
	return NewResolver(lookup, &o)
}

// commandRun is one run of a command shared by concurrent callers.
type commandRun struct {
	done chan struct{}
	val  string
	err  error
	// abandoned: the run ended because its leader's context ended, so the
	// result says nothing about the command; waiters try again.
	abandoned bool
}

// NewResolver returns a Resolver over the environment lookup (nil means
// an empty environment) with opts (nil means defaults).
func NewResolver(lookup EnvLookup, opts *ResolverOptions) *Resolver {
	var o ResolverOptions
	if opts != nil {
		o = *opts
	}
	if lookup == nil {
		lookup = MapEnv(nil)
	}
	if o.CommandTimeout <= 0 {
		o.CommandTimeout = DefaultCommandTimeout
	}
	if o.Shell == "" {
		o.Shell = "/bin/sh"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Resolver{
		lookup:   lookup,
		timeout:  o.CommandTimeout,
		shell:    o.Shell,
		dir:      o.Dir,
		environ:  o.Environ,
		logger:   o.Logger,
		cache:    map[string]string{},
		inflight: map[string]*commandRun{},
	}
}

// Resolve returns the value to use for one env or header value:
//
//   - "!command": the rest runs as Shell -c command (bounded by the
//     command timeout and ctx); its trimmed standard output is the value.
//     Failure, timeout or empty output is an error (ErrCommandFailed,
//     ErrCommandTimeout, ErrEmptyOutput); the caller omits the entry.
//   - a value with ${VAR}, ${VAR:-default} or ${env:VAR} references: the
//     references are expanded (e.g. "Bearer ${TOKEN}"); a reference to an
//     unset variable without default is an error (ErrUnsetVariable).
//   - anything else: the value itself. A bare variable name is literal
//     here; the formats whose values may be a bare name (mcplife's own
//     file, Codex's env_vars) are given as references by discovery
//     (${NAME:-NAME}, ${NAME}).
//
// Errors never contain the value, the command or its output.
func (r *Resolver) Resolve(ctx context.Context, value string) (string, error) {
	if cmd, ok := strings.CutPrefix(value, "!"); ok {
		return r.command(ctx, value, cmd)
	}
	if strings.Contains(value, "${") {
		return expandStrict(value, r.lookup)
	}
	return value, nil
}

// Expand replaces the ${VAR}, ${VAR:-default} and ${env:VAR} references of
// a command, argument, URL or working directory; nothing is run. A
// reference to an unset variable without default stays as written (and
// discovery warned about it). subst holds the values substituted: they are
// secrets to keep out of every recorded text.
func (r *Resolver) Expand(value string) (expanded string, subst []string) {
	if !strings.Contains(value, "${") {
		return value, nil
	}
	expanded = refPattern.ReplaceAllStringFunc(value, func(m string) string {
		v := expandRefs(m, r.lookup, nil)
		if v != m {
			subst = append(subst, v)
		}
		return v
	})
	return expanded, subst
}

// ResolveConfig returns a copy of cfg whose env and header values are
// resolved; entries that fail are omitted and reported in the returned
// error, one line per entry naming the server and the key (never the
// value). Nothing else of cfg is changed.
func (r *Resolver) ResolveConfig(ctx context.Context, cfg events.ServerConfig) (events.ServerConfig, error) {
	out := cfg.Clone()
	var errs []error
	for _, part := range []struct {
		what string
		m    map[string]string
	}{{"env", out.Env}, {"header", out.Headers}} {
		for _, k := range sortedKeys(part.m) {
			v, err := r.Resolve(ctx, part.m[k])
			if err != nil {
				delete(part.m, k)
				errs = append(errs, fmt.Errorf("server %q: %s %q omitted: %w", cfg.Name, part.what, k, err))
				continue
			}
			part.m[k] = v
		}
	}
	return out, errors.Join(errs...)
}

// command resolves a "!command" value, from the cache or by running it
// once for all concurrent callers.
func (r *Resolver) command(ctx context.Context, key, cmd string) (string, error) {
	for {
		r.mu.Lock()
		if v, ok := r.cache[key]; ok {
			r.mu.Unlock()
			return v, nil
		}
		if run, ok := r.inflight[key]; ok {
			r.mu.Unlock()
			select {
			case <-run.done:
				if run.abandoned {
					continue
				}
				return run.val, run.err
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		run := &commandRun{done: make(chan struct{})}
		r.inflight[key] = run
		r.mu.Unlock()

		run.val, run.err = r.run(ctx, cmd)
		run.abandoned = run.err != nil && ctx.Err() != nil

		r.mu.Lock()
		delete(r.inflight, key)
		if run.err == nil {
			r.cache[key] = run.val
		}
		r.mu.Unlock()
		close(run.done)
		if run.abandoned {
			return "", ctx.Err()
		}
		return run.val, run.err
	}
}

// run runs one command under the timeout.
func (r *Resolver) run(ctx context.Context, cmd string) (string, error) {
	if strings.TrimSpace(cmd) == "" {
		return "", fmt.Errorf("%w: empty command", ErrCommandFailed)
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	c := exec.CommandContext(ctx, r.shell, "-c", cmd)
	c.Dir = r.dir
	c.Env = r.environ
	var stdout bytes.Buffer
	c.Stdout = &stdout
	// Stdin and stderr stay empty/discarded: the output of a failing
	// command may hold a secret.
	proc.KillGroupOnCancel(c)
	start := time.Now()
	err := c.Run()
	r.logger.Debug("mcp substitution command finished", "duration", time.Since(start), "ok", err == nil)
	switch {
	case parent.Err() != nil:
		return "", parent.Err()
	case ctx.Err() != nil:
		return "", fmt.Errorf("%w after %s", ErrCommandTimeout, r.timeout)
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("%w: %s", ErrCommandFailed, ee.ProcessState.String())
		}
		return "", fmt.Errorf("%w: %s", ErrCommandFailed, unwrapPathError(err))
	}
	v := strings.TrimSpace(stdout.String())
	if v == "" {
		return "", ErrEmptyOutput
	}
	return v, nil
}

// expandStrict expands references like [Resolver.Resolve]: an unset
// variable without default is an error naming the variable.
func expandStrict(v string, lookup EnvLookup) (string, error) {
	var missing []string
	out := expandRefs(v, lookup, func(name string) { missing = append(missing, name) })
	if len(missing) > 0 {
		return "", fmt.Errorf("%w: %s", ErrUnsetVariable, strings.Join(missing, ", "))
	}
	return out, nil
}
