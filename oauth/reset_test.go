package oauth

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// resettingServer answers the first request of each connection, keeps
// the connection open, and resets it (RST) when a second request
// arrives on it: as a server that closed an idle keep-alive connection
// while the client's user was in the browser. conns counts the
// connections accepted.
func resettingServer(t *testing.T, conns *atomic.Int32) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}")
				req, err = http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				c.(*net.TCPConn).SetLinger(0) // the close resets the connection
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestResetReusedConnectionRetried: a POST (a token request) that the
// server resets on a reused keep-alive connection is sent once more, on
// a new connection, with its whole body; without the retry it fails with
// the reset.
func TestResetReusedConnectionRetried(t *testing.T) {
	var conns atomic.Int32
	base := resettingServer(t, &conns)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	post := func(c *http.Client) (*http.Response, error) {
		return c.Post(base+"/token", "application/x-www-form-urlencoded", strings.NewReader("grant_type=authorization_code&code=c"))
	}

	plain := &http.Client{Transport: tr}
	resp, err := post(plain)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body) // read to its end, so the connection is kept for reuse
	resp.Body.Close()
	if r, err := post(plain); err == nil {
		t.Fatalf("the server did not reset the reused connection (%d, %d connections): the test shows nothing", r.StatusCode, conns.Load())
	}

	tr.CloseIdleConnections()
	conns.Store(0)
	c := &http.Client{Transport: &resetRetry{base: tr}}
	for range 2 {
		resp, err := post(c)
		if err != nil {
			t.Fatalf("POST: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != `{"ok":true}` {
			t.Fatalf("answer %d %q", resp.StatusCode, b)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2 (the reset one and the retry's)", n)
	}
}
