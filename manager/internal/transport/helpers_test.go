package transport

import (
	"context"
	"testing"
	"time"
)

// testCtx returns a context bounded by the test's deadline (or a minute).
func testCtx(t *testing.T) context.Context {
	d := time.Now().Add(time.Minute)
	if dl, ok := t.Deadline(); ok && dl.Before(d) {
		d = dl
	}
	ctx, cancel := context.WithDeadline(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
