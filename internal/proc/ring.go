package proc

import "sync"

// stderrLimit is how much of a process's stderr is kept (the last bytes).
const stderrLimit = 64 << 10

// Ring keeps the last limit bytes written to it: a process's stderr, and
// the notes of the [JSONLines] filter on its stdout. It is safe for
// concurrent use.
type Ring struct {
	mu    sync.Mutex
	buf   []byte // len(buf) <= limit; the oldest byte is at start when full
	start int
	full  bool
	limit int
	last  byte // the last byte written
}

// NewRing returns a ring that keeps the last limit bytes.
func NewRing(limit int) *Ring { return &Ring{limit: limit} }

// Write appends p, dropping the oldest bytes beyond the limit. It never
// fails.
func (r *Ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.write(p)
	return len(p), nil
}

// Note appends the line msg, on a line of its own: after a newline if
// the bytes before it did not end in one.
func (r *Ring) Note(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) > 0 && r.last != '\n' {
		r.write([]byte{'\n'})
	}
	r.write([]byte(msg + "\n"))
}

// write appends p. Requires r.mu.
func (r *Ring) write(p []byte) {
	if len(p) == 0 {
		return
	}
	r.last = p[len(p)-1]
	if len(p) >= r.limit {
		r.buf = append(r.buf[:0], p[len(p)-r.limit:]...)
		r.start, r.full = 0, true
		return
	}
	if !r.full {
		room := r.limit - len(r.buf)
		if len(p) <= room {
			r.buf = append(r.buf, p...)
			if len(r.buf) == r.limit {
				r.full = true
			}
			return
		}
		r.buf = append(r.buf, p[:room]...)
		p = p[room:]
		r.full = true
	}
	for len(p) > 0 {
		c := copy(r.buf[r.start:], p)
		p = p[c:]
		r.start = (r.start + c) % r.limit
	}
}

// Bytes returns a copy of the kept bytes, oldest first.
func (r *Ring) Bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]byte(nil), r.buf...)
	}
	out := make([]byte, 0, len(r.buf))
	out = append(out, r.buf[r.start:]...)
	return append(out, r.buf[:r.start]...)
}
