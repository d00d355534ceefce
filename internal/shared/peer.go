package shared

import (
	"fmt"
	"io"
	"net"
	"time"
)

// peerListener accepts only connections whose peer runs as uid: another
// user's connection gets a 403 answer and is closed before any request of
// it is read.
type peerListener struct {
	net.Listener
	uid int
	// refused, when set, hears of each refused peer.
	refused func(uid int, err error)
}

// OnRefused sets a function told of each connection refused (its peer's
// uid, or the error that kept the uid from being known) on a listener
// that [Listen] returned; others are ignored. It must be called before
// the listener is served.
func OnRefused(l net.Listener, fn func(uid int, err error)) {
	if pl, ok := l.(*peerListener); ok {
		pl.refused = fn
	}
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid, err := PeerUID(c)
		if err == nil && uid == l.uid {
			return c, nil
		}
		if l.refused != nil {
			l.refused(uid, err)
		}
		go refuse(c, uid, err)
	}
}

// refuse answers a connection of another user with 403 and closes it.
// What the peer sends is discarded unread, until it closes its end (or a
// second passes), so that its request's write does not fail before it
// reads the answer.
func refuse(c net.Conn, uid int, err error) {
	defer c.Close()
	msg := fmt.Sprintf("shared host: peer uid %d is not this shared host's user\n", uid)
	if err != nil {
		msg = "shared host: peer not identified: " + err.Error() + "\n"
	}
	c.SetDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(msg), msg)
	if uc, ok := c.(*net.UnixConn); ok {
		uc.CloseWrite()
	}
	io.Copy(io.Discard, io.LimitReader(c, 1<<20))
}
