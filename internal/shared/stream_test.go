package shared

import (
	"bufio"
	"errors"
	"io"
	"net"
	"path/filepath"
	"testing"
)

// streamPair returns a stream of the host's end of a unix connection and
// the shared host's end.
func streamPair(t *testing.T) (*stream, net.Conn) {
	t.Helper()
	l, err := net.Listen("unix", filepath.Join(t.TempDir(), "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	conn, err := net.Dial("unix", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	peer, ok := <-accepted
	if !ok {
		t.Fatal("no connection accepted")
	}
	t.Cleanup(func() { peer.Close() })
	s := newStream(conn, bufio.NewReader(conn), make(chan struct{}))
	return s, peer
}

// TestStreamCutByTheSharedHostEndsAsItsClose cuts a stream from the
// shared host's end with a message of the host unread, as the end of its
// process does: the host's read and write fail with the end of the stream,
// as when the shared host closed it cleanly, not with a reset, so the
// error recorded does not depend on how the cut is seen.
func TestStreamCutByTheSharedHostEndsAsItsClose(t *testing.T) {
	s, peer := streamPair(t)
	if _, err := io.WriteString(s, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	peer.Close() // the message unread
	if n, err := s.Read(make([]byte, 64)); n != 0 || err != io.EOF {
		t.Fatalf("read after the cut: %d %v, want the end of the stream", n, err)
	}
	var err error
	for range 2 { // the first write may still be taken by the kernel
		if _, err = io.WriteString(s, "{}\n"); err != nil {
			break
		}
	}
	if !errors.Is(err, io.EOF) {
		t.Fatalf("write after the cut: %v, want the end of the stream", err)
	}
}

// TestStreamCloseWaitsForTheAnswerWithoutItsReader closes a stream whose
// session's reader read a message and no longer reads (the go-sdk's
// reader waits for the lock that its Close holds): the close still ends
// at the shared host's answer, not at the bound of its wait, so a detach
// is recorded as such before the control stream ends.
func TestStreamCloseWaitsForTheAnswerWithoutItsReader(t *testing.T) {
	s, peer := streamPair(t)
	// The shared host's end: a notification that the host reads before
	// it closes, then, once the host closed its writing half, another
	// message, the empty line of the release and the close of its end.
	released := make(chan struct{})
	go func() {
		defer peer.Close()
		io.WriteString(peer, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`+"\n")
		io.Copy(io.Discard, peer)
		io.WriteString(peer, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`+"\n")
		io.WriteString(peer, "\n")
		close(released)
	}()
	line, err := bufio.NewReader(s).ReadString('\n')
	if err != nil || line == "" {
		t.Fatalf("first message: %q %v", line, err)
	}
	// Nothing reads the stream any more.
	s.Close()
	select {
	case <-released:
	default:
		t.Fatal("Close returned before the shared host answered")
	}
	select {
	case <-s.eof:
	default:
		t.Fatal("Close returned at the bound of its wait, not at the end of the shared host's answer")
	}
}
