package main

import (
	"errors"
	"io"
	"sync/atomic"
	"syscall"
)

// pipeWriter is stdout, noticing when its reader has gone away (a pipe
// into head that exited): from the first write that fails with EPIPE on,
// every write fails at once, so a command stops producing output, and
// Run ends quietly with exit 0 instead of reporting "broken pipe".
type pipeWriter struct {
	w      io.Writer
	broken atomic.Bool
}

func (p *pipeWriter) Write(b []byte) (int, error) {
	if p.broken.Load() {
		return 0, syscall.EPIPE
	}
	n, err := p.w.Write(b)
	if err != nil && errors.Is(err, syscall.EPIPE) {
		p.broken.Store(true)
	}
	return n, err
}

// closed reports whether a write found the reader gone.
func (p *pipeWriter) closed() bool { return p.broken.Load() }
