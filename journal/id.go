package journal

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// NewSessionID returns a new session id, for use as a session's stream:
// the UTC time to the second (so ids sort by start) and 8 random hex
// digits, e.g. "20260102T150405-1a2b3c4d". Safe for concurrent use.
func NewSessionID() string {
	var b [4]byte
	rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}
