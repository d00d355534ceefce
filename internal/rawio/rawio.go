// Package rawio reads and writes non-blocking descriptors (pipes, Unix
// sockets) without the runtime's system-call bookkeeping.
//
// A read or write through package os or net enters the scheduler's
// system-call state, and the first one after the process was idle wakes
// the runtime's monitor thread (a futex wake, then 20 µs polls for a
// while). On a relay that forwards one message and goes idle again, that
// is every message: on two cores it was a tenth of the shared host's CPU
// and a wake-up on the path of each call. A non-blocking descriptor never
// blocks in read(2) or write(2), so this package makes those calls raw,
// through the descriptor's [syscall.RawConn], which still waits in the
// runtime's poller when the descriptor is not ready and keeps deadlines
// and Close working.
package rawio

import (
	"bufio"
	"io"
	"net"
	"os"
	"syscall"
)

// Reader returns a reader of c's descriptor; where raw calls are not
// available (not Linux, or c gives no RawConn), r, which reads the same
// descriptor, is returned.
func Reader(c syscall.Conn, r io.Reader) io.Reader {
	rc, err := c.SyscallConn()
	if err != nil || !available {
		return r
	}
	return &reader{rc: rc}
}

// Writer is [Reader] for writing.
func Writer(c syscall.Conn, w io.Writer) io.Writer {
	rc, err := c.SyscallConn()
	if err != nil || !available {
		return w
	}
	return &writer{rc: rc}
}

type reader struct{ rc syscall.RawConn }

func (r *reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := r.rc.Read(func(fd uintptr) bool {
		n, errno = read(fd, p)
		return errno != syscall.EAGAIN
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, os.NewSyscallError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

type writer struct{ rc syscall.RawConn }

func (w *writer) Write(p []byte) (int, error) {
	done := 0
	var errno syscall.Errno
	err := w.rc.Write(func(fd uintptr) bool {
		for done < len(p) {
			var n int
			n, errno = write(fd, p[done:])
			switch errno {
			case 0:
				done += n
			case syscall.EAGAIN:
				errno = 0
				return false // wait until it can take more
			default:
				return true
			}
		}
		return true
	})
	if err == nil && errno != 0 {
		err = os.NewSyscallError("write", errno)
	}
	return done, err
}

// Conn returns the reader and the writer of conn, whose reads go through
// br first while it holds bytes (read with the request that opened the
// connection).
func Conn(conn net.Conn, br *bufio.Reader) (io.Reader, io.Writer) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return br, conn
	}
	return &afterBuffer{br: br, raw: Reader(sc, conn)}, Writer(sc, conn)
}

type afterBuffer struct {
	br  *bufio.Reader
	raw io.Reader
}

func (r *afterBuffer) Read(p []byte) (int, error) {
	if r.br.Buffered() > 0 {
		return r.br.Read(p)
	}
	return r.raw.Read(p)
}
