package journal

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// A spool keeps held items in files of one directory, one JSON line per
// item, so that an outage longer than memory holds, and a Close or a crash
// during one, loses nothing. Each file starts with a header line holding
// the offset of its first item not yet stored; the journal moves it on as
// the items are stored and removes the file once they all are. A journal
// locks every file it uses, so a file found unlocked was left by a journal
// that ended before its store came back: the next journal on that
// directory takes it over and stores what it holds first. Files are 0600
// in a 0700 directory, and hold the envelopes the store would have held.
type spool struct {
	dir   string
	limit int64
	segs  []*segment // in order: the first is read, the last written
}

type segment struct {
	path string
	f    *os.File
	read int64 // offset of the first item not yet stored
	end  int64 // offset after the last complete item
	// peeked are the items from read on that peek decoded, and ends the
	// offset after each.
	peeked []*heldItem
	ends   []int64
}

// spoolMagic starts every spool file; the header line is spoolMagic, the
// read offset in 16 hexadecimal digits and a newline.
const spoolMagic = "mcplife-spool 1 "

const spoolHeaderLen = len(spoolMagic) + 16 + 1

// spoolExt ends the name of every spool file.
const spoolExt = ".spool"

// openSpool opens the spool in dir, taking over the files no other
// journal holds, oldest first. dir is created when first needed.
func openSpool(dir string, limit int64) (*spool, error) {
	sp := &spool{dir: dir, limit: limit}
	if !canLock {
		return sp, nil // files of other journals cannot be told from orphans
	}
	names, err := filepath.Glob(filepath.Join(dir, "*"+spoolExt))
	if err != nil {
		return nil, fmt.Errorf("journal: spool directory %s: %w", dir, err)
	}
	slices.Sort(names)
	for _, name := range names {
		seg, err := adoptSegment(name)
		if err != nil {
			sp.close()
			return nil, err
		}
		if seg != nil {
			sp.segs = append(sp.segs, seg)
		}
	}
	return sp, nil
}

// adoptSegment opens a spool file another journal left, or returns nil
// when a live journal holds it or nothing in it is left to store.
func adoptSegment(path string) (*segment, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // stored and removed meanwhile
	}
	if err != nil {
		return nil, fmt.Errorf("journal: spool file %s: %w", path, err)
	}
	if ok, err := lockFile(f); err != nil || !ok {
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("journal: lock spool file %s: %w", path, err)
		}
		return nil, nil
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: spool file %s: %w", path, err)
	}
	if now, err := os.Stat(path); err != nil || !os.SameFile(info, now) {
		f.Close() // another journal stored it and removed it meanwhile
		return nil, nil
	}
	hdr := make([]byte, spoolHeaderLen)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		// Created but not written: nothing in it.
		f.Close()
		os.Remove(path)
		return nil, nil
	}
	read, err := parseHeader(hdr)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: spool file %s: %w", path, err)
	}
	seg := &segment{path: path, f: f, read: read, end: info.Size()}
	if seg.read >= seg.end {
		seg.remove()
		return nil, nil
	}
	return seg, nil
}

func parseHeader(hdr []byte) (int64, error) {
	if len(hdr) != spoolHeaderLen || string(hdr[:len(spoolMagic)]) != spoolMagic || hdr[len(hdr)-1] != '\n' {
		return 0, errors.New("not a spool file of this version")
	}
	off, err := strconv.ParseInt(string(hdr[len(spoolMagic):len(hdr)-1]), 16, 64)
	if err != nil || off < int64(spoolHeaderLen) {
		return 0, errors.New("bad spool header")
	}
	return off, nil
}

func header(read int64) []byte {
	return fmt.Appendf(nil, "%s%016x\n", spoolMagic, read)
}

// pending reports whether the spool holds items.
func (sp *spool) pending() bool { return len(sp.segs) > 0 }

// room returns how many more bytes the spool takes.
func (sp *spool) room() int64 {
	used := int64(0)
	for _, s := range sp.segs {
		used += s.end - s.read
	}
	return sp.limit - used
}

// push writes it after everything spooled. force ignores the bound.
func (sp *spool) push(it *heldItem, force bool) error {
	line, err := json.Marshal(it)
	if err != nil {
		return fmt.Errorf("journal: spool: %w", err)
	}
	line = append(line, '\n')
	if !force && sp.room() < int64(len(line)) {
		return errFull
	}
	if len(sp.segs) == 0 {
		seg, err := sp.create()
		if err != nil {
			return err
		}
		sp.segs = append(sp.segs, seg)
	}
	seg := sp.segs[len(sp.segs)-1]
	if _, err := seg.f.WriteAt(line, seg.end); err != nil {
		return fmt.Errorf("journal: spool file %s: %w", seg.path, err)
	}
	seg.end += int64(len(line))
	return nil
}

// create makes a new spool file, locked, with its header.
func (sp *spool) create() (*segment, error) {
	if err := os.MkdirAll(sp.dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: spool directory %s: %w", sp.dir, err)
	}
	path := filepath.Join(sp.dir, fmt.Sprintf("%020d-%d%s", time.Now().UnixNano(), os.Getpid(), spoolExt))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: spool file: %w", err)
	}
	seg := &segment{path: path, f: f, read: int64(spoolHeaderLen), end: int64(spoolHeaderLen)}
	if _, err := lockFile(f); err != nil {
		seg.remove()
		return nil, fmt.Errorf("journal: lock spool file %s: %w", path, err)
	}
	if _, err := f.WriteAt(header(seg.read), 0); err != nil {
		seg.remove()
		return nil, fmt.Errorf("journal: spool file %s: %w", path, err)
	}
	return seg, nil
}

// peek returns up to n items of the first file, without removing them. A
// line that does not decode is skipped; a last line cut short (its writer
// was killed mid-write) ends the file.
func (sp *spool) peek(n int) ([]*heldItem, error) {
	if len(sp.segs) == 0 {
		return nil, nil
	}
	seg := sp.segs[0]
	pos := seg.read
	if k := len(seg.ends); k > 0 {
		pos = seg.ends[k-1]
	}
	if len(seg.peeked) < n && pos < seg.end {
		r := bufio.NewReaderSize(io.NewSectionReader(seg.f, pos, seg.end-pos), 64<<10)
		for len(seg.peeked) < n && pos < seg.end {
			line, err := r.ReadBytes('\n')
			if err != nil {
				if err == io.EOF {
					seg.end = pos // a cut-off last line
					break
				}
				return nil, fmt.Errorf("journal: spool file %s: %w", seg.path, err)
			}
			pos += int64(len(line))
			var it heldItem
			if json.Unmarshal(line, &it) != nil || it.Session == "" || (it.Gap == nil && len(it.Envs) == 0) {
				// Unreadable: skip it, but move past it.
				if len(seg.ends) == 0 {
					seg.read = pos
				} else {
					seg.ends[len(seg.ends)-1] = pos
				}
				continue
			}
			seg.peeked = append(seg.peeked, &it)
			seg.ends = append(seg.ends, pos)
		}
	}
	if len(seg.peeked) == 0 && seg.read >= seg.end {
		seg.remove()
		sp.segs = sp.segs[1:]
		return sp.peek(n)
	}
	return seg.peeked[:min(n, len(seg.peeked))], nil
}

// pop removes the first n items, which peek returned: the file's header
// moves past them, and a file with nothing left is removed.
func (sp *spool) pop(n int) error {
	seg := sp.segs[0]
	seg.read = seg.ends[n-1]
	clear(seg.peeked[:n])
	seg.peeked, seg.ends = seg.peeked[n:], seg.ends[n:]
	// The header first: a journal that opened the file before it is
	// removed finds nothing left in it.
	if _, err := seg.f.WriteAt(header(seg.read), 0); err != nil {
		return fmt.Errorf("journal: spool file %s: %w", seg.path, err)
	}
	if len(seg.peeked) == 0 && seg.read >= seg.end {
		seg.remove()
		sp.segs = sp.segs[1:]
	}
	return nil
}

// close flushes the spool's files to disk and releases them, leaving what
// they hold for the next journal on the directory.
func (sp *spool) close() error {
	var errs []error
	for _, s := range sp.segs {
		if err := s.f.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("journal: spool file %s: %w", s.path, err))
		}
		s.f.Close()
	}
	sp.segs = nil
	return errors.Join(errs...)
}

// files returns the paths of the spool's files.
func (sp *spool) files() []string {
	var out []string
	for _, s := range sp.segs {
		out = append(out, s.path)
	}
	return out
}

func (s *segment) remove() {
	s.f.Close()
	os.Remove(s.path)
}
