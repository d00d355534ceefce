package rawio

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// wait bounds how long a test waits for a goroutine's result; a blocked
// call that should have returned long before fails the test instead of
// hanging it.
const wait = 10 * time.Second

// pipe returns both ends of an os.Pipe, closed when the test ends.
func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// socketPair returns the two ends of a Unix stream socket connection,
// closed when the test ends.
func socketPair(t *testing.T) (client, server *net.UnixConn) {
	t.Helper()
	// A Unix socket's path is short (about 100 bytes): t.TempDir's may
	// not fit.
	dir, err := os.MkdirTemp("", "rawio")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	c, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var s net.Conn
	select {
	case s = <-accepted:
	case <-time.After(wait):
		t.Fatal("no connection accepted")
	}
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { s.Close() })
	return c.(*net.UnixConn), s.(*net.UnixConn)
}

// checkRaw fails the test when the raw path was not taken where it is
// available.
func checkRaw(t *testing.T, r io.Reader, w io.Writer) {
	t.Helper()
	if !available {
		return
	}
	if _, ok := r.(*reader); r != nil && !ok {
		t.Errorf("Reader returned %T, not the raw reader", r)
	}
	if _, ok := w.(*writer); w != nil && !ok {
		t.Errorf("Writer returned %T, not the raw writer", w)
	}
}

type result struct {
	n   int
	err error
}

func TestPipeRoundTripThenEOF(t *testing.T) {
	pr, pw := pipe(t)
	r, w := Reader(pr, pr), Writer(pw, pw)
	checkRaw(t, r, w)

	if n, err := w.Write([]byte("hello\n")); n != 6 || err != nil {
		t.Fatalf("Write = %d, %v; want 6, nil", n, err)
	}
	if n, err := w.Write(nil); n != 0 || err != nil {
		t.Fatalf("empty Write = %d, %v; want 0, nil", n, err)
	}
	if n, err := r.Read(nil); n != 0 || err != nil {
		t.Fatalf("empty Read = %d, %v; want 0, nil", n, err)
	}
	buf := make([]byte, 64)
	n, err := r.Read(buf)
	if err != nil || string(buf[:n]) != "hello\n" {
		t.Fatalf("Read = %q, %v; want %q, nil", buf[:n], err, "hello\n")
	}

	if _, err := w.Write([]byte("last")); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	got, err := io.ReadAll(r)
	if err != nil || string(got) != "last" {
		t.Fatalf("ReadAll after the writer closed = %q, %v; want %q, nil", got, err, "last")
	}
	if n, err := r.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("Read at the end = %d, %v; want 0, io.EOF", n, err)
	}
}

func TestSocketRoundTripThenEOF(t *testing.T) {
	c, s := socketPair(t)
	cw := Writer(c, c)
	sr, sw := Reader(s, s), Writer(s, s)
	checkRaw(t, sr, sw)
	cr := Reader(c, c)

	if _, err := cw.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, err := io.ReadFull(sr, buf[:4]); err != nil || string(buf[:n]) != "ping" {
		t.Fatalf("server read %q, %v; want %q", buf[:n], err, "ping")
	}
	if _, err := sw.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if n, err := io.ReadFull(cr, buf[:4]); err != nil || string(buf[:n]) != "pong" {
		t.Fatalf("client read %q, %v; want %q", buf[:n], err, "pong")
	}

	if _, err := cw.Write([]byte("bye")); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(sr)
	if err != nil || string(got) != "bye" {
		t.Fatalf("ReadAll after the peer's CloseWrite = %q, %v; want %q, nil", got, err, "bye")
	}
	if n, err := sr.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("Read at the end = %d, %v; want 0, io.EOF", n, err)
	}
}

// testLargeWrite writes 1 MiB, far more than a pipe's or a socket's
// buffer, in one Write while another goroutine reads it in small pieces:
// the writer must go on after its partial writes and EAGAINs.
func testLargeWrite(t *testing.T, r io.Reader, w io.Writer) {
	t.Helper()
	data := make([]byte, 1<<20)
	rand.New(rand.NewSource(1)).Read(data)

	got := make(chan []byte, 1)
	go func() {
		var b bytes.Buffer
		buf := make([]byte, 1000) // not a divisor of the buffer sizes
		for b.Len() < len(data) {
			n, err := r.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		got <- b.Bytes()
	}()
	n, err := w.Write(data)
	if n != len(data) || err != nil {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(data))
	}
	select {
	case b := <-got:
		if !bytes.Equal(b, data) {
			t.Fatalf("read %d bytes, not the %d written (first difference at %d)", len(b), len(data), firstDiff(b, data))
		}
	case <-time.After(wait):
		t.Fatal("reader did not get all the data")
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestPipeLargeWrite(t *testing.T) {
	pr, pw := pipe(t)
	testLargeWrite(t, Reader(pr, pr), Writer(pw, pw))
}

func TestSocketLargeWrite(t *testing.T) {
	c, s := socketPair(t)
	testLargeWrite(t, Reader(s, s), Writer(c, c))
}

type deadliner interface {
	syscall.Conn
	io.Reader
	SetReadDeadline(time.Time) error
}

func testReadDeadline(t *testing.T, d deadliner) {
	t.Helper()
	r := Reader(d, d)
	if err := d.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() {
		n, err := r.Read(make([]byte, 8))
		done <- result{n, err}
	}()
	select {
	case res := <-done:
		if res.n != 0 || !errors.Is(res.err, os.ErrDeadlineExceeded) {
			t.Fatalf("Read past the deadline = %d, %v; want 0, os.ErrDeadlineExceeded", res.n, res.err)
		}
	case <-time.After(wait):
		t.Fatal("Read did not return at its deadline")
	}
}

func TestPipeReadDeadline(t *testing.T) {
	pr, _ := pipe(t)
	testReadDeadline(t, pr)
}

func TestSocketReadDeadline(t *testing.T) {
	_, s := socketPair(t)
	testReadDeadline(t, s)
}

// testReadClose reads through r until a first byte arrives, then blocks
// in a second read; closing must end it with an error.
func testReadClose(t *testing.T, r io.Reader, w io.Writer, closeIt func() error) error {
	t.Helper()
	first := make(chan struct{})
	done := make(chan result, 1)
	go func() {
		buf := make([]byte, 8)
		if _, err := r.Read(buf); err != nil {
			done <- result{0, err}
			return
		}
		close(first)
		n, err := r.Read(buf)
		done <- result{n, err}
	}()
	if _, err := w.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first:
	case res := <-done:
		t.Fatalf("first Read failed: %v", res.err)
	case <-time.After(wait):
		t.Fatal("first Read did not return")
	}
	if err := closeIt(); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.err == nil || res.err == io.EOF {
			t.Fatalf("Read during Close = %d, %v; want an error other than io.EOF", res.n, res.err)
		}
		return res.err
	case <-time.After(wait):
		t.Fatal("Read did not return when the descriptor was closed")
	}
	return nil
}

func TestPipeReadClose(t *testing.T) {
	pr, pw := pipe(t)
	// The write end stays open: the read can only end by the close.
	testReadClose(t, Reader(pr, pr), pw, pr.Close)
}

func TestSocketReadClose(t *testing.T) {
	c, s := socketPair(t)
	err := testReadClose(t, Reader(s, s), c, s.Close)
	if !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read during Close = %v; want net.ErrClosed", err)
	}
}

func TestSocketWriteDeadline(t *testing.T) {
	c, _ := socketPair(t) // the server end never reads
	w := Writer(c, c)
	if err := c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 16<<20) // more than the socket buffers hold
	done := make(chan result, 1)
	go func() {
		n, err := w.Write(data)
		done <- result{n, err}
	}()
	select {
	case res := <-done:
		if !errors.Is(res.err, os.ErrDeadlineExceeded) {
			t.Fatalf("Write past the deadline = %d, %v; want os.ErrDeadlineExceeded", res.n, res.err)
		}
		if res.n <= 0 || res.n >= len(data) {
			t.Fatalf("Write past the deadline wrote %d bytes; want some, not all, of %d", res.n, len(data))
		}
	case <-time.After(wait):
		t.Fatal("Write did not return at its deadline")
	}
}

func TestPipeWriteBrokenPipe(t *testing.T) {
	pr, pw := pipe(t)
	w := Writer(pw, pw)
	pr.Close()
	n, err := w.Write([]byte("lost"))
	if n != 0 || !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Write with the read end closed = %d, %v; want 0, EPIPE", n, err)
	}
}

func TestSocketWritePeerClosed(t *testing.T) {
	c, s := socketPair(t)
	w := Writer(c, c)
	s.Close()
	// A Unix socket whose peer closed fails the first write.
	_, err := w.Write([]byte("lost"))
	if !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("Write with the peer closed = %v; want EPIPE or ECONNRESET", err)
	}
}

func TestConnReadsBufferFirst(t *testing.T) {
	c, s := socketPair(t)
	if _, err := c.Write([]byte("HEAD\nbody1")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(s)
	head, err := br.ReadString('\n')
	if err != nil || head != "HEAD\n" {
		t.Fatalf("head = %q, %v", head, err)
	}
	if br.Buffered() != len("body1") {
		t.Fatalf("bufio.Reader holds %d bytes after the head; the test needs %d", br.Buffered(), len("body1"))
	}
	// A read that misses the buffer would wait for data already taken:
	// fail it instead of hanging.
	s.SetReadDeadline(time.Now().Add(wait))
	c.SetReadDeadline(time.Now().Add(wait))
	r, w := Conn(s, br)
	if ab, ok := r.(*afterBuffer); !ok {
		t.Fatalf("Conn's reader is %T, not one through the buffer", r)
	} else {
		checkRaw(t, ab.raw, w)
	}

	buf := make([]byte, 64)
	n, err := r.Read(buf)
	if err != nil || string(buf[:n]) != "body1" {
		t.Fatalf("first Read = %q, %v; want the buffered %q", buf[:n], err, "body1")
	}
	if _, err := c.Write([]byte("body2")); err != nil {
		t.Fatal(err)
	}
	c.CloseWrite()
	rest, err := io.ReadAll(r)
	if err != nil || string(rest) != "body2" {
		t.Fatalf("rest = %q, %v; want %q", rest, err, "body2")
	}

	if _, err := w.Write([]byte("reply")); err != nil {
		t.Fatal(err)
	}
	s.CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "reply" {
		t.Fatalf("peer read %q, %v; want %q", got, err, "reply")
	}
}

func TestConnWithoutDescriptor(t *testing.T) {
	a, b := net.Pipe() // no descriptor: not a syscall.Conn
	defer a.Close()
	defer b.Close()
	br := bufio.NewReader(a)
	r, w := Conn(a, br)
	if r != io.Reader(br) {
		t.Errorf("Conn's reader is %T, not the bufio.Reader", r)
	}
	if w != io.Writer(a) {
		t.Errorf("Conn's writer is %T, not the connection", w)
	}
}

// noRawConn is a syscall.Conn that gives no RawConn.
type noRawConn struct{}

func (noRawConn) SyscallConn() (syscall.RawConn, error) {
	return nil, errors.New("no raw conn")
}

func TestFallback(t *testing.T) {
	var rb, wb bytes.Buffer
	if r := Reader(noRawConn{}, &rb); r != io.Reader(&rb) {
		t.Errorf("Reader = %T; want the given reader", r)
	}
	if w := Writer(noRawConn{}, &wb); w != io.Writer(&wb) {
		t.Errorf("Writer = %T; want the given writer", w)
	}
}
