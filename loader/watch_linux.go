//go:build linux

package loader

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// inotifyMask is what a watched directory reports: entries created,
// deleted, renamed in or out, written or changed in mode, and the
// directory itself deleted or renamed.
const inotifyMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// inotifyWatch watches the directories of a [Watcher]'s paths with one
// inotify instance. Its fields other than f and conn belong to its run
// goroutine once startNotify has returned.
type inotifyWatch struct {
	f      *os.File // the inotify instance, non-blocking, in the runtime poller
	conn   syscall.RawConn
	log    *slog.Logger
	report func([]string)
	done   <-chan struct{} // closed by Close, before f

	targets []*watchTarget
	// dirs are the watched directories by path; byWd the paths of each
	// watch (two paths may reach one directory).
	dirs map[string]dirWatch
	byWd map[int32][]string
	// points are, by watched directory, the entries awaited there.
	points map[string][]watchPoint
}

// watchTarget is one watched path and its state when last looked at.
type watchTarget struct {
	path  string
	state fileState
}

// dirWatch is one watched directory: the watch and the directory's
// identity when it was added, so that a directory replaced since is
// watched anew.
type dirWatch struct {
	wd       int32
	dev, ino uint64
}

// watchPoint is an entry of a watched directory that matters to a target:
// its file (direct), or, when the file's directory does not exist, the
// first missing directory on the way to it.
type watchPoint struct {
	entry  string
	target *watchTarget
	direct bool
}

// startNotify starts watching paths with inotify. It fails, and the
// watcher polls instead, when inotify cannot be used or a directory
// cannot be watched now (the watch limit, permissions).
func startNotify(w *Watcher, paths []string, report func([]string), log *slog.Logger) (func() error, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	// A non-blocking descriptor joins the runtime's poller: Read parks
	// the goroutine, and Close wakes it.
	f := os.NewFile(uintptr(fd), "inotify")
	conn, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("inotify: %w", err)
	}
	in := &inotifyWatch{f: f, conn: conn, log: log, report: report, done: w.done,
		dirs: map[string]dirWatch{}, byWd: map[int32][]string{}}
	for _, p := range paths {
		in.targets = append(in.targets, &watchTarget{path: p})
	}
	if err := in.arm(); err != nil {
		f.Close()
		return nil, err
	}
	// Taken once watched, so that nothing falls between the two.
	for _, t := range in.targets {
		t.state = statFile(t.path)
	}
	w.wg.Go(in.run)
	return f.Close, nil
}

// run reads events until the instance is closed.
func (in *inotifyWatch) run() {
	// Room for many events; one needs at most 16 bytes plus a name of
	// up to 255 bytes and its terminator.
	buf := make([]byte, 64<<10)
	for {
		n, err := in.f.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				in.log.Warn("config watcher: reading inotify events failed; no further changes are reported", "error", err)
			}
			return
		}
		changed, rearm := in.handle(buf[:n])
		if rearm {
			if err := in.arm(); err != nil && !in.closed() {
				in.log.Warn("config watcher: a directory could not be watched; changes there are not reported", "error", err)
			}
			// What changed while a directory was not yet watched.
			for _, t := range in.targets {
				if s := statFile(t.path); !s.same(t.state) {
					t.state = s
					changed[t.path] = true
				}
			}
		}
		if len(changed) > 0 {
			in.report(sortedKeys(changed))
		}
	}
}

// closed reports whether the watcher is being closed: the instance may be
// closed under arm, which then fails for that reason only.
func (in *inotifyWatch) closed() bool {
	select {
	case <-in.done:
		return true
	default:
		return false
	}
}

// handle decodes a buffer of events. It returns the targets changed, and
// whether the watches must be re-armed: an awaited directory appeared, a
// watched one went away, or a target changed (a link may point elsewhere
// now).
func (in *inotifyWatch) handle(buf []byte) (changed map[string]bool, rearm bool) {
	changed = map[string]bool{}
	for len(buf) >= unix.SizeofInotifyEvent {
		wd := int32(binary.NativeEndian.Uint32(buf[0:]))
		mask := binary.NativeEndian.Uint32(buf[4:])
		size := int(binary.NativeEndian.Uint32(buf[12:]))
		end := min(unix.SizeofInotifyEvent+size, len(buf))
		name := strings.TrimRight(string(buf[unix.SizeofInotifyEvent:end]), "\x00")
		buf = buf[end:]

		switch {
		case mask&unix.IN_Q_OVERFLOW != 0:
			// Events were lost: say everything changed.
			for _, t := range in.targets {
				changed[t.path] = true
			}
			rearm = true
			continue
		case mask&unix.IN_IGNORED != 0:
			// The watch is gone: its directory was deleted, or unmounted,
			// or arm removed it.
			if dirs, ok := in.byWd[wd]; ok {
				for _, d := range dirs {
					delete(in.dirs, d)
				}
				delete(in.byWd, wd)
				rearm = true
			}
			continue
		}
		for _, dir := range in.byWd[wd] {
			if name == "" { // the directory itself was deleted or moved
				rearm = true
				continue
			}
			for _, p := range in.points[dir] {
				if p.entry != name {
					continue
				}
				rearm = true
				if p.direct {
					p.target.state = statFile(p.target.path)
					changed[p.target.path] = true
				}
			}
		}
	}
	return changed, rearm
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
func (in *inotifyWatch) arm() error {
	for range maxArmRounds {
		if err := in.armOnce(); err != nil || !in.awaitedExists() {
			return err
		}
	}
	return nil
}

// awaitedExists reports whether a directory awaited on the way to a target
// exists now.
func (in *inotifyWatch) awaitedExists() bool {
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
func (in *inotifyWatch) armOnce() error {
	points := map[string][]watchPoint{}
	for _, t := range in.targets {
		for _, name := range targetNames(t.path) {
			dir, entry, direct := awaitedIn(name)
			if !slices.ContainsFunc(points[dir], func(p watchPoint) bool { return p.target == t && p.entry == entry }) {
				points[dir] = append(points[dir], watchPoint{entry: entry, target: t, direct: direct})
			}
		}
	}
	var errs []error
	for _, dir := range sortedKeys(points) {
		if err := in.watchDir(dir); err != nil {
			errs = append(errs, err)
		}
	}
	for _, dir := range sortedKeys(in.dirs) {
		if _, ok := points[dir]; !ok {
			in.unwatchDir(dir)
		}
	}
	in.points = points
	return errors.Join(errs...)
}

// watchDir adds a watch on dir unless the same directory is watched
// already.
func (in *inotifyWatch) watchDir(dir string) error {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	dev, ino := uint64(st.Dev), uint64(st.Ino) // their widths differ between architectures
	if old, ok := in.dirs[dir]; ok {
		if old.dev == dev && old.ino == ino {
			return nil
		}
		in.unwatchDir(dir) // replaced since it was watched
	}
	var wd int
	var err error
	if cerr := in.conn.Control(func(fd uintptr) {
		wd, err = unix.InotifyAddWatch(int(fd), dir, inotifyMask)
	}); cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	in.dirs[dir] = dirWatch{wd: int32(wd), dev: dev, ino: ino}
	if !slices.Contains(in.byWd[int32(wd)], dir) {
		in.byWd[int32(wd)] = append(in.byWd[int32(wd)], dir)
	}
	return nil
}

// unwatchDir forgets dir, and removes its watch when no other path uses
// it.
func (in *inotifyWatch) unwatchDir(dir string) {
	dw, ok := in.dirs[dir]
	if !ok {
		return
	}
	delete(in.dirs, dir)
	rest := slices.DeleteFunc(in.byWd[dw.wd], func(d string) bool { return d == dir })
	if len(rest) > 0 {
		in.byWd[dw.wd] = rest
		return
	}
	delete(in.byWd, dw.wd)
	// The watch may be gone already (its directory was deleted); the
	// kernel's IN_IGNORED for it then finds no owner and is skipped.
	_ = in.conn.Control(func(fd uintptr) { _, _ = unix.InotifyRmWatch(int(fd), uint32(dw.wd)) })
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
	rest := strings.Split(filepath.Clean(path), string(filepath.Separator))
	resolved := string(filepath.Separator)
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
		if filepath.IsAbs(target) {
			resolved = string(filepath.Separator)
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
