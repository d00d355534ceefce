package shared

import (
	"bufio"
	"io"
	"net"
	"path/filepath"
	"testing"
)

// TestStreamCloseWaitsForTheAnswerWithoutItsReader closes a stream whose
// session's reader read a message and no longer reads (the go-sdk's
// reader waits for the lock that its Close holds): the close still ends
// at the shared host's answer, not at the bound of its wait, so a detach
// is recorded as such before the control stream ends.
func TestStreamCloseWaitsForTheAnswerWithoutItsReader(t *testing.T) {
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
	peer, ok := <-accepted
	if !ok {
		t.Fatal("no connection accepted")
	}
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
	s := &stream{Conn: conn, r: bufio.NewReader(conn), reading: make(chan struct{}, 1), closed: make(chan struct{}), eof: make(chan struct{}), ended: make(chan struct{})}
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
