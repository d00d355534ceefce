package loader

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Defaults of [WatcherOptions].
const (
	DefaultDebounce     = 100 * time.Millisecond
	DefaultPollInterval = time.Second
)

// maxDelayFactor bounds how long a stream of changes can hold its report
// back: a change is delivered at most this many debounce periods after
// it, even while further changes keep arriving.
const maxDelayFactor = 10

// WatcherOptions configure a [Watcher]. The zero value means the defaults.
type WatcherOptions struct {
	// Debounce is how long the watched files must stay unchanged before
	// their change is delivered: editors write, rename and chmod in
	// bursts, and one burst is one change. A file that keeps changing is
	// reported at least every ten debounce periods. 0 means
	// DefaultDebounce.
	Debounce time.Duration
	// Poll makes the watcher compare each file's size, modification time
	// and identity every PollInterval instead of using the system's
	// notifications, for file systems whose notifications miss changes
	// made elsewhere (NFS, SMB, some FUSE and container mounts). Where
	// the system has no notifications the watcher polls anyway.
	Poll bool
	// PollInterval is the polling period; 0 means DefaultPollInterval.
	PollInterval time.Duration
	// Logger receives problems met while watching, such as a directory
	// that could not be watched; nil discards.
	Logger *slog.Logger
}

// Watcher reports changes to a fixed set of file paths: a file edited in
// place, replaced by a rename over it, created where none was, deleted, or
// its permissions changed. The paths need not exist, nor their
// directories.
//
// It watches each path's directory through the system's file
// notifications (inotify on Linux, kqueue on macOS and the BSDs,
// ReadDirectoryChangesW on Windows, by way of fsnotify), so creation,
// deletion and replacement are seen as well as edits; a path whose
// directory does not exist is watched through its nearest existing
// ancestor until the directory appears. A path reached through symbolic
// links (the path itself, a link it points to, or a directory on the
// way, such as a "current" release link) is watched at each link and at
// the file it resolves to, as resolved when the watcher starts and after
// each change, so a link retargeted is a change of the path. Where the
// system has no notifications, or they cannot watch a path's directory
// when the watcher starts (the system's limit on watches was reached, or
// the directory cannot be read), the watcher logs why and polls: see
// [WatcherOptions.Poll]. On macOS and the BSDs each watched directory
// holds a descriptor for every entry in it, as kqueue needs.
//
// A Watcher is safe for concurrent use.
type Watcher struct {
	out  chan []string
	done chan struct{}
	wg   sync.WaitGroup
	// stop ends the backend's own resources; called once, by Close.
	stop func() error

	closeOnce sync.Once
	closeErr  error
}

// NewWatcher starts watching paths; relative paths are made absolute.
// opts may be nil. It returns an error only for an empty path or a
// negative duration: where the system's notifications fail, it logs why
// and polls instead.
//
// A change made before NewWatcher returns may go unreported: a host that
// must not miss one made between reading the files and watching them
// reads them again once after NewWatcher returns.
func NewWatcher(paths []string, opts *WatcherOptions) (*Watcher, error) {
	var o WatcherOptions
	if opts != nil {
		o = *opts
	}
	var errs []error
	if o.Debounce < 0 {
		errs = append(errs, fmt.Errorf("loader: watcher: negative Debounce %v", o.Debounce))
	}
	if o.PollInterval < 0 {
		errs = append(errs, fmt.Errorf("loader: watcher: negative PollInterval %v", o.PollInterval))
	}
	var clean []string
	for _, p := range paths {
		if p == "" {
			errs = append(errs, errors.New("loader: watcher: empty path"))
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("loader: watcher: %s: %w", p, err))
			continue
		}
		clean = append(clean, abs)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.Sort(clean)
	clean = slices.Compact(clean)
	if o.Debounce == 0 {
		o.Debounce = DefaultDebounce
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}

	w := &Watcher{out: make(chan []string), done: make(chan struct{})}
	changed := make(chan []string)
	report := func(paths []string) {
		select {
		case changed <- paths:
		case <-w.done:
		}
	}
	// The backend's goroutines are counted in w.wg and end with w.done;
	// w.stop releases what they hold.
	notifying := false
	if !o.Poll {
		stop, err := startNotify(w, clean, report, o.Logger)
		if err == nil {
			w.stop, notifying = stop, true
		} else {
			o.Logger.Warn("config watcher: polling instead of notifications", "error", err)
		}
	}
	if !notifying {
		w.stop = startPolling(w, clean, o.PollInterval, report)
	}
	w.wg.Add(1)
	go w.deliver(changed, o.Debounce)
	return w, nil
}

// Changes returns the channel on which the watcher delivers the changed
// paths, sorted and as given to [NewWatcher] (made absolute), once a burst
// of changes has settled. A receiver that falls behind finds the paths
// changed in the meantime merged into its next slice: nothing is dropped
// and the watcher never waits for it. The channel is closed by
// [Watcher.Close]; changes not yet delivered then are discarded.
func (w *Watcher) Changes() <-chan []string { return w.out }

// Close stops watching, closes the Changes channel and waits for the
// watcher's goroutines to end. It returns the error of releasing the
// system's resources, if any. Close is idempotent and safe to call
// concurrently; every call returns the first call's result.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() {
		close(w.done)
		if w.stop != nil {
			w.closeErr = w.stop()
		}
		w.wg.Wait()
	})
	return w.closeErr
}

// deliver debounces the backend's reports onto w.out until w.done.
func (w *Watcher) deliver(changed <-chan []string, debounce time.Duration) {
	defer w.wg.Done()
	defer close(w.out)
	pending := map[string]bool{}
	var ready []string // settled, waiting for the receiver
	quiet := time.NewTimer(debounce)
	quiet.Stop()
	longest := time.NewTimer(debounce)
	longest.Stop()
	defer quiet.Stop()
	defer longest.Stop()
	settle := func() {
		quiet.Stop()
		longest.Stop()
		for p := range pending {
			if !slices.Contains(ready, p) {
				ready = append(ready, p)
			}
		}
		slices.Sort(ready)
		clear(pending)
	}
	for {
		var out chan<- []string
		if len(ready) > 0 {
			out = w.out
		}
		select {
		case <-w.done:
			return
		case paths := <-changed:
			if len(paths) == 0 {
				continue
			}
			if len(pending) == 0 {
				longest.Reset(maxDelayFactor * debounce)
			}
			for _, p := range paths {
				pending[p] = true
			}
			quiet.Reset(debounce)
		case <-quiet.C:
			settle()
		case <-longest.C:
			settle()
		case out <- ready:
			ready = nil
		}
	}
}

// fileState is what polling compares, and what the notifying watcher
// compares when it re-arms: whether the file exists and, if so, its identity, size, mode
// and modification time (symbolic links followed).
type fileState struct {
	info os.FileInfo // nil: the file does not exist or cannot be examined
}

func statFile(path string) fileState {
	fi, err := os.Stat(path)
	if err != nil {
		return fileState{}
	}
	return fileState{info: fi}
}

func (a fileState) same(b fileState) bool {
	if a.info == nil || b.info == nil {
		return a.info == nil && b.info == nil
	}
	return os.SameFile(a.info, b.info) && a.info.Size() == b.info.Size() &&
		a.info.Mode() == b.info.Mode() && a.info.ModTime().Equal(b.info.ModTime())
}

// startPolling stats every path now and then every interval, reporting the
// paths whose state differs from the previous look. Its goroutine ends
// with w.done.
func startPolling(w *Watcher, paths []string, interval time.Duration, report func([]string)) func() error {
	states := make([]fileState, len(paths))
	for i, p := range paths {
		states[i] = statFile(p)
	}
	w.wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-t.C:
			}
			var changed []string
			for i, p := range paths {
				if s := statFile(p); !s.same(states[i]) {
					states[i] = s
					changed = append(changed, p)
				}
			}
			if len(changed) > 0 {
				report(changed)
			}
		}
	})
	return func() error { return nil }
}
