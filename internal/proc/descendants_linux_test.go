package proc

import (
	"strings"
	"testing"
)

func TestInstanceMarker(t *testing.T) {
	a, b := newInstanceMarker(), newInstanceMarker()
	if !strings.HasPrefix(a, instanceEnv+"=") || len(a) < len(instanceEnv)+21 || a == b {
		t.Fatalf("markers %q, %q", a, b)
	}
}
