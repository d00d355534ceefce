package loader

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fsnotify/fsnotify"
)

// notifyWatch watches the directories of a [Watcher]'s paths with one
// fsnotify watcher (inotify on Linux, kqueue on macOS and the BSDs,
// ReadDirectoryChangesW on Windows). Its fields other than fsn belong to
// its run goroutine once startNotify has returned.
type notifyWatch struct {
	fsn    *fsnotify.Watcher
	log    *slog.Logger
	report func([]string)
	done   <-chan struct{} // closed by Close, before fsn

	targets []*watchTarget
	// watched are the directories given to fsn, by the path they were
	// added under, with their identity then: a path that names another
	// directory since (a link retargeted, a directory replaced) is
	// watched anew.
	watched map[string]os.FileInfo
	// byKey are, for each path in watched, the directories it stands for:
	// two paths that reach one directory share one watch, whose events
	// fsnotify names after the path it was added under.
	byKey map[string][]string
	// points are, by needed directory, the entries awaited there.
	points map[string][]watchPoint
}

// watchTarget is one watched path and its state when last looked at.
type watchTarget struct {
	path  string
	state fileState
}

// watchPoint is an entry of a watched directory that matters to a target:
// its file (direct), or, when the file's directory does not exist, the
// first missing directory on the way to it.
type watchPoint struct {
	entry  string
	target *watchTarget
	direct bool
}

// maxBatch bounds the events run takes before acting on them.
const maxBatch = 256

// startNotify starts watching paths with fsnotify. It fails, and the
// watcher polls instead, when the system has no notifications fsnotify
// uses or a directory cannot be watched now (the watch limit,
// permissions).
func startNotify(w *Watcher, paths []string, report func([]string), log *slog.Logger) (func() error, error) {
	fsn, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("notifications: %w", err)
	}
	in := &notifyWatch{fsn: fsn, log: log, report: report, done: w.done,
		watched: map[string]os.FileInfo{}, byKey: map[string][]string{}}
	for _, p := range paths {
		in.targets = append(in.targets, &watchTarget{path: p})
	}
	if err := in.arm(); err != nil {
		fsn.Close()
		return nil, err
	}
	// Taken once watched, so that nothing falls between the two.
	for _, t := range in.targets {
		t.state = statFile(t.path)
	}
	w.wg.Go(in.run)
	return fsn.Close, nil
}

// run handles events until the watcher is closed. It takes the events
// already waiting as one batch, so that a burst re-arms once.
func (in *notifyWatch) run() {
	for {
		b := batch{changed: map[string]bool{}}
		if !in.next(&b, true) {
			return
		}
		for range maxBatch - 1 {
			if !in.next(&b, false) {
				break
			}
		}
		if b.closed {
			return
		}
		if b.rearm {
			if err := in.arm(); err != nil && !in.closed() {
				in.log.Warn("config watcher: a directory could not be watched; changes there are not reported", "error", err)
			}
			// What changed while a directory was not yet watched.
			for _, t := range in.targets {
				if s := statFile(t.path); !s.same(t.state) {
					t.state = s
					b.changed[t.path] = true
				}
			}
		}
		if len(b.changed) > 0 {
			in.report(sortedKeys(b.changed))
		}
	}
}

// batch is what run gathers from the events it takes at once.
type batch struct {
	changed map[string]bool // targets changed
	rearm   bool            // the watches must be re-armed
	closed  bool            // the watcher is closing
}

// next takes one event or error into b, waiting for it if block is set.
// It reports false when there was none to take without waiting, or when
// the watcher is closing (b.closed).
func (in *notifyWatch) next(b *batch, block bool) bool {
	var (
		ev    fsnotify.Event
		err   error
		isErr bool
		ok    bool // false after <-in.done too
	)
	if block {
		select {
		case ev, ok = <-in.fsn.Events:
		case err, ok = <-in.fsn.Errors:
			isErr = true
		case <-in.done:
		}
	} else {
		select {
		case ev, ok = <-in.fsn.Events:
		case err, ok = <-in.fsn.Errors:
			isErr = true
		default:
			return false
		}
	}
	switch {
	case !ok:
		b.closed = true
		return false
	case !isErr:
		if in.handle(ev, b.changed) {
			b.rearm = true
		}
	case errors.Is(err, fsnotify.ErrEventOverflow):
		// Events were lost: say everything changed.
		for _, t := range in.targets {
			b.changed[t.path] = true
		}
		b.rearm = true
	case !in.closed():
		in.log.Warn("config watcher: notifications failed; a change may go unreported", "error", err)
	}
	return true
}

// closed reports whether the watcher is being closed: fsn may be closed
// under arm, which then fails for that reason only.
func (in *notifyWatch) closed() bool {
	select {
	case <-in.done:
		return true
	default:
		return false
	}
}

// handle notes in changed the targets ev changed, and reports whether the
// watches must be re-armed: an awaited directory appeared, a watched one
// went away, or a target changed (a link may point elsewhere now).
func (in *notifyWatch) handle(ev fsnotify.Event, changed map[string]bool) (rearm bool) {
	name := filepath.Clean(ev.Name)
	if _, ok := in.watched[name]; ok && ev.Has(fsnotify.Remove|fsnotify.Rename) {
		rearm = true // a watched directory itself was deleted or moved
	}
	entry := filepath.Base(name)
	for _, dir := range in.byKey[filepath.Dir(name)] {
		for _, p := range in.points[dir] {
			if p.entry != entry {
				continue
			}
			rearm = true
			if p.direct {
				p.target.state = statFile(p.target.path)
				changed[p.target.path] = true
			}
		}
	}
	return rearm
}

// maxArmRounds bounds arm's repeats while directories keep appearing.
const maxArmRounds = 16

// arm watches, for every target, the directory of its path and of the
// file its link resolves to, or the nearest existing ancestor of a
// directory that does not exist; it stops watching directories no longer
// needed. It returns the errors of directories it could not watch.
//
// A directory created on the way to a target after arm looked for it but
// before the watch on its parent was in place sends no event: arm looks
// again once its watches are in place, and repeats while it finds one.
func (in *notifyWatch) arm() error {
	for range maxArmRounds {
		if err := in.armOnce(); err != nil || !in.awaitedExists() {
			return err
		}
	}
	return nil
}

// awaitedExists reports whether a directory awaited on the way to a target
// exists now.
func (in *notifyWatch) awaitedExists() bool {
	for dir, points := range in.points {
		for _, p := range points {
			if p.direct {
				continue
			}
			if fi, err := os.Stat(filepath.Join(dir, p.entry)); err == nil && fi.IsDir() {
				return true
			}
		}
	}
	return false
}

// armOnce is one round of arm.
func (in *notifyWatch) armOnce() error {
	points := map[string][]watchPoint{}
	for _, t := range in.targets {
		for _, name := range targetNames(t.path) {
			dir, entry, direct := awaitedIn(name)
			if !slices.ContainsFunc(points[dir], func(p watchPoint) bool { return p.target == t && p.entry == entry }) {
				points[dir] = append(points[dir], watchPoint{entry: entry, target: t, direct: direct})
			}
		}
	}

	// Forget the watches fsnotify dropped (their directory was deleted or
	// moved), and those whose path names another directory now: the
	// events of a watch are named after the path it was added under.
	kept := fsnotifyWatching(in.fsn)
	for key, was := range in.watched {
		if !kept[key] {
			delete(in.watched, key)
			continue
		}
		if now, err := os.Stat(key); err != nil || !os.SameFile(now, was) {
			_ = in.fsn.Remove(key) // gone already if the kernel dropped it
			delete(in.watched, key)
		}
	}

	var errs []error
	byKey := map[string][]string{}
	for _, dir := range sortedKeys(points) {
		key, err := in.watchDir(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		byKey[key] = append(byKey[key], dir)
	}
	for key := range in.watched {
		if _, ok := byKey[key]; !ok {
			_ = in.fsn.Remove(key)
			delete(in.watched, key)
		}
	}
	in.points, in.byKey = points, byKey
	return errors.Join(errs...)
}

// fsnotifyWatching is the set of paths fsn watches.
func fsnotifyWatching(fsn *fsnotify.Watcher) map[string]bool {
	set := map[string]bool{}
	for _, p := range fsn.WatchList() {
		set[filepath.Clean(p)] = true
	}
	return set
}

// watchDir makes sure the directory dir names is watched, and returns the
// path of the watch that serves it: dir itself, or another path that
// reaches the same directory.
func (in *notifyWatch) watchDir(dir string) (key string, err error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("watch %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("watch %s: not a directory", dir)
	}
	if was, ok := in.watched[dir]; ok && os.SameFile(was, fi) {
		return dir, nil
	}
	for _, key := range sortedKeys(in.watched) {
		if os.SameFile(in.watched[key], fi) {
			return key, nil
		}
	}
	if err := in.fsn.Add(dir); err != nil {
		return "", fmt.Errorf("watch %s: %w", dir, err)
	}
	in.watched[dir] = fi
	return dir, nil
}

// targetNames are the paths whose directory entries stand for path: path
// itself, every symbolic link met while resolving it (the path, a link
// it points to, or a directory on the way, such as a "current" release
// link or a ~/.config kept in a dotfiles repository), and the file it
// resolves to. A link retargeted changes what path reads although no
// entry of path's own directory changed.
func targetNames(path string) []string {
	links, real := resolveLinks(path)
	names := append([]string{path}, links...)
	if real != path {
		names = append(names, real)
	}
	return names
}

// maxLinks bounds the symbolic links resolveLinks follows, as the kernel
// bounds them (ELOOP).
const maxLinks = 40

// resolveLinks resolves the absolute path one component at a time, as
// the kernel does, and returns each symbolic link it met, named by its
// own link-free path, and the link-free path that path resolves to. A
// component that does not exist, or a link that cannot be read, ends the
// resolution: the rest of the path is kept as it is.
func resolveLinks(path string) (links []string, real string) {
	path = filepath.Clean(path)
	vol := filepath.VolumeName(path) // "" outside Windows
	rest := strings.Split(path[len(vol):], string(filepath.Separator))
	resolved := vol + string(filepath.Separator)
	for n := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, c)
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			if err != nil {
				return links, filepath.Join(append([]string{next}, rest...)...)
			}
			continue
		}
		target, err := os.Readlink(next)
		if n++; err != nil || n > maxLinks {
			return append(links, next), filepath.Join(append([]string{next}, rest...)...)
		}
		links = append(links, next)
		target = filepath.FromSlash(target)
		if filepath.IsAbs(target) {
			v := filepath.VolumeName(target)
			resolved, target = v+string(filepath.Separator), target[len(v):]
		}
		rest = append(strings.Split(target, string(filepath.Separator)), rest...)
	}
	return links, resolved
}

// awaitedIn returns the directory to watch for name: its own directory
// when that exists, else its nearest existing ancestor; entry is the name
// to look for there, and direct says it is name's own entry rather than
// a missing directory on the way to it.
func awaitedIn(name string) (dir, entry string, direct bool) {
	child, dir := name, filepath.Dir(name)
	for {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break // the root
		}
		child, dir = dir, parent
	}
	return dir, filepath.Base(child), child == name
}
