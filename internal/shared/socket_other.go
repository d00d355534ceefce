//go:build !unix

package shared

import (
	"net"
	"os"
)

// Listen fails: without Unix sockets and peer credentials there is no
// sharing on this platform.
func Listen(path string) (net.Listener, error) { return nil, ErrUnsupported }

func ownerOf(os.FileInfo) (int, bool) { return 0, false }
