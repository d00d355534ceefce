//go:build !linux && !darwin

package shared

import "net"

// PeerUID fails: the peer of a local socket cannot be identified here, so
// sharing is off ([ErrUnsupported]).
func PeerUID(c net.Conn) (int, error) { return -1, ErrUnsupported }

func peerCheckSupported() (bool, error) { return false, ErrUnsupported }
