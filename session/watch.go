package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcplife/mcplife/events"
	"github.com/mcplife/mcplife/loader"
	"github.com/mcplife/mcplife/manager"
)

// configWatch is a session's live config ([Options.WatchConfig]): a
// watcher on the paths of the latest applied discovery and the goroutine
// that applies their changes to the manager.
type configWatch struct {
	mgr   *manager.Manager
	log   *slog.Logger
	opts  loader.Options
	wopts loader.WatcherOptions

	// Owned by the run goroutine once it started.
	last     *loader.Discovery // the discovery last applied
	watcher  *loader.Watcher   // nil when watching failed
	watching []string          // the watcher's paths

	// reread is the discovery made once the first watcher was watching.
	reread chan discoveryResult

	cancel context.CancelFunc
	done   chan struct{}
}

type discoveryResult struct {
	d   *loader.Discovery
	err error
}

// newConfigWatch starts watching the paths of d, the session's initial
// discovery made with opts, and reads the configs once more in the
// background: an edit made between the first reading and the watcher's
// start is seen by that second reading, an edit made later by the
// watcher. start, called when the session has loaded, applies what the
// second reading found and then follows the watcher.
func newConfigWatch(m *manager.Manager, log *slog.Logger, opts loader.Options, wopts loader.WatcherOptions, d *loader.Discovery) *configWatch {
	if wopts.Logger == nil {
		wopts.Logger = log
	}
	w := &configWatch{mgr: m, log: log, opts: opts, wopts: wopts, last: d,
		reread: make(chan discoveryResult, 1), done: make(chan struct{})}
	w.rewatch()
	go func() {
		d, err := loader.LoadConfigs(context.Background(), opts)
		w.reread <- discoveryResult{d, err}
	}()
	return w
}

// waitReread waits for the second reading of newConfigWatch, so that every
// edit made after it returns is reported by the watcher.
func (w *configWatch) waitReread() discoveryResult { return <-w.reread }

// start runs the watch until stop; first is the second reading's result.
func (w *configWatch) start(first discoveryResult) {
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go w.run(ctx, first)
}

// stop ends the watch and waits for it: an apply in progress returns at
// once (ctx cancelled), its teardowns finishing in the background.
func (w *configWatch) stop() {
	if w.cancel == nil { // never started
		if w.watcher != nil {
			w.watcher.Close()
		}
		return
	}
	w.cancel()
	<-w.done
}

func (w *configWatch) run(ctx context.Context, first discoveryResult) {
	defer close(w.done)
	defer func() {
		if w.watcher != nil {
			w.watcher.Close()
		}
	}()
	w.catchUp(ctx, first)
	for {
		var changes <-chan []string
		if w.watcher != nil {
			changes = w.watcher.Changes()
		}
		select {
		case <-ctx.Done():
			return
		case paths := <-changes:
			d, err := loader.LoadConfigs(ctx, w.opts)
			if ctx.Err() != nil {
				return
			}
			r := discoveryResult{d, err}
			if held := unsettledFiles(w.last, r); len(held) > 0 {
				var more []string
				if r, more = w.readAgain(ctx, held, changes); ctx.Err() != nil {
					return
				}
				paths = append(paths, more...)
				slices.Sort(paths)
				paths = slices.Compact(paths)
			}
			// A save that changed no server (an editor's touch, Claude
			// Code rewriting its history in ~/.claude.json, a truncated
			// file written back as it was) is no config change.
			if r.err == nil && sameDiscovery(w.last, r.d) {
				w.log.Debug("MCP config files changed; no server changed", "paths", paths)
				continue
			}
			w.apply(ctx, paths, r)
		}
	}
}

// readAgain reads the configs once more after another debounce period,
// or sooner when the watcher reports a further change (whose paths it
// returns): held are the files that now read empty or fail to parse
// (see unsettledFiles). A save that truncates a file first and
// writes it after shows that moment to a reader, and the save is one
// edit: nothing is disconnected for it.
func (w *configWatch) readAgain(ctx context.Context, held []string, changes <-chan []string) (discoveryResult, []string) {
	debounce := w.wopts.Debounce
	if debounce == 0 {
		debounce = loader.DefaultDebounce
	}
	w.log.Debug("MCP config file empty or unreadable; reading it again", "paths", held, "after", debounce)
	t := time.NewTimer(debounce)
	defer t.Stop()
	var more []string
	select {
	case <-ctx.Done():
		return discoveryResult{}, nil
	case more = <-changes:
	case <-t.C:
	}
	d, err := loader.LoadConfigs(ctx, w.opts)
	return discoveryResult{d, err}, more
}

// unsettledFiles returns the config files that r cannot parse and prev
// parsed (or did not find), and those that r reads empty and prev read
// with something in them, sorted.
func unsettledFiles(prev *loader.Discovery, r discoveryResult) []string {
	if r.err != nil || prev == nil {
		return nil
	}
	out := append(newlyBroken(prev, r.d), newlyEmpty(prev, r.d)...)
	slices.Sort(out)
	return slices.Compact(out)
}

// catchUp applies r, a discovery made without a watcher's report, when it
// differs from the last one applied.
func (w *configWatch) catchUp(ctx context.Context, r discoveryResult) {
	if r.err == nil && sameDiscovery(w.last, r.d) {
		return
	}
	w.apply(ctx, configFiles(w.last, r.d), r)
}

// configFiles returns the config files a or b (which may be nil) read,
// sorted: the paths of a change that no watcher reported.
func configFiles(a, b *loader.Discovery) []string {
	var out []string
	for _, d := range []*loader.Discovery{a, b} {
		if d != nil {
			out = append(out, d.FoundFiles...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// apply applies the discovery r made after a change of paths. A
// discovery that failed as a whole, or that could not read or parse a
// file that the last applied discovery read, or reads it empty where it
// held something, is not applied: the change
// is recorded with its error and every server keeps running. Otherwise
// the manager connects and disconnects the difference, the discovery's
// new skipped and invalid entries are recorded, and the watcher moves to
// the new discovery's paths when they differ (then the configs are read
// once more, for edits made meanwhile).
func (w *configWatch) apply(ctx context.Context, paths []string, r discoveryResult) {
	for {
		err := r.err
		if err == nil {
			err = newFileErrors(w.last, r.d)
		}
		if err != nil {
			w.log.Warn("MCP config change not applied; servers keep running", "paths", paths, "error", events.RedactText(err.Error()))
			if rerr := w.mgr.RecordConfigError(paths, err); rerr != nil && !errors.Is(rerr, manager.ErrClosed) {
				w.log.Error("MCP config change not recorded", "error", rerr)
			}
			return
		}
		d := r.d
		configs, sources := discovered(d)
		res, err := w.mgr.ApplyConfigs(ctx, paths, configs, sources)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, manager.ErrClosed) {
				w.log.Error("MCP config change", "error", err)
			}
			return
		}
		for _, name := range slices.Sorted(maps.Keys(res.Errors)) {
			w.log.Error("MCP tool load failed", "path", "mcp:"+name, "error", res.Errors[name])
		}
		if evs := newSkips(w.last, d); len(evs) > 0 {
			if err := w.mgr.RecordDiscovery(ctx, evs...); err != nil && ctx.Err() == nil {
				w.log.Error("MCP config change: record skipped servers", "error", err)
			}
		}
		w.last = d
		if !w.rewatch() {
			return
		}
		d2, err := loader.LoadConfigs(ctx, w.opts)
		if ctx.Err() != nil || (err == nil && sameDiscovery(d, d2)) {
			return
		}
		r = discoveryResult{d2, err}
		paths = configFiles(d, d2)
	}
}

// rewatch watches the last discovery's paths unless the watcher already
// does, and reports whether it started a new watcher.
func (w *configWatch) rewatch() bool {
	paths := w.last.WatchPaths()
	if w.watcher != nil && slices.Equal(paths, w.watching) {
		return false
	}
	if w.watcher != nil {
		w.watcher.Close()
		w.watcher = nil
	}
	wopts := w.wopts
	nw, err := loader.NewWatcher(paths, &wopts)
	if err != nil {
		// Options were checked by Start, and discovery names no empty path.
		w.log.Error("MCP config files not watched", "error", err)
		return false
	}
	w.watcher, w.watching = nw, paths
	return true
}

// newFileErrors returns the errors of d's files that prev read without
// one, joined, and names the files that prev read with something in them
// and d reads empty; nil when there are none. A file that was already
// broken or empty does not stop a change elsewhere from being applied.
//
// An empty file configures nothing when discovery starts, but one that
// held servers is far more often caught in the middle of a save, or left
// by a writer that failed, than emptied to remove them all, which deleting
// the file or writing {} does: it changes nothing, as a file that no
// longer parses does.
func newFileErrors(prev, d *loader.Discovery) error {
	var errs []string
	for _, fe := range d.Errors {
		if !slices.ContainsFunc(prev.Errors, func(p loader.FileError) bool { return p.Path == fe.Path }) {
			errs = append(errs, fe.Error)
		}
	}
	var empty []string
	for _, p := range newlyEmpty(prev, d) {
		empty = append(empty, p+": empty")
	}
	switch {
	case len(errs) > 0 && len(empty) > 0:
		return fmt.Errorf("config file unreadable: %s; config file emptied (delete it, or write {}, to remove its servers): %s",
			strings.Join(errs, "; "), strings.Join(empty, "; "))
	case len(errs) > 0:
		return fmt.Errorf("config file unreadable: %s", strings.Join(errs, "; "))
	case len(empty) > 0:
		return fmt.Errorf("config file emptied (delete it, or write {}, to remove its servers): %s", strings.Join(empty, "; "))
	}
	return nil
}

// newlyBroken returns the paths of d's file errors that prev did not
// have.
func newlyBroken(prev, d *loader.Discovery) []string {
	var out []string
	for _, fe := range d.Errors {
		if !slices.ContainsFunc(prev.Errors, func(p loader.FileError) bool { return p.Path == fe.Path }) {
			out = append(out, fe.Path)
		}
	}
	return out
}

// newlyEmpty returns the files that d reads empty and that prev read
// fine with something in them.
func newlyEmpty(prev, d *loader.Discovery) []string {
	var out []string
	for _, p := range d.EmptyFiles {
		if slices.Contains(prev.FoundFiles, p) && !slices.Contains(prev.EmptyFiles, p) &&
			!slices.ContainsFunc(prev.Errors, func(fe loader.FileError) bool { return fe.Path == p }) {
			out = append(out, p)
		}
	}
	return out
}

// newSkips returns d's ServerSkipped and ServerInvalid outcomes that prev
// did not have, for names d does not serve.
func newSkips(prev, d *loader.Discovery) []events.Event {
	served := map[string]bool{}
	for _, s := range d.Servers {
		served[s.Config.Name] = true
	}
	old := map[string]bool{}
	for _, k := range outcomeKeys(prev, false) {
		old[k] = true
	}
	var out []events.Event
	for _, ev := range d.Events() {
		if ev.Type() == events.TypeServerDiscovered || served[events.ServerOf(ev)] {
			continue
		}
		if !old[outcomeKey(ev)] {
			out = append(out, ev)
		}
	}
	return out
}

// sameDiscovery reports whether a and b found the same servers, configs,
// sources, skipped entries and broken files.
func sameDiscovery(a, b *loader.Discovery) bool {
	if !slices.Equal(outcomeKeys(a, true), outcomeKeys(b, true)) {
		return false
	}
	paths := func(d *loader.Discovery) []string {
		var out []string
		for _, fe := range d.Errors {
			out = append(out, fe.Path)
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(paths(a), paths(b))
}

// outcomeKeys returns a key per discovery outcome of d (only the skipped
// and invalid ones unless all), sorted.
func outcomeKeys(d *loader.Discovery, all bool) []string {
	var out []string
	for _, ev := range d.Events() {
		if all || ev.Type() != events.TypeServerDiscovered {
			out = append(out, outcomeKey(ev))
		}
	}
	slices.Sort(out)
	return out
}

func outcomeKey(ev events.Event) string {
	b, _ := json.Marshal(ev)
	return ev.Type() + " " + string(b)
}
