//go:build !linux

package proc

import (
	"context"
	"errors"
	"fmt"
)

// Elsewhere than on Linux there is no child subreaper: a process whose
// parent exits is reparented to init, and nothing is left to reap here.

// BecomeSubreaper does nothing and returns an error wrapping
// [errors.ErrUnsupported]: only Linux has child subreapers.
func BecomeSubreaper() error {
	return fmt.Errorf("child subreaper: %w", errors.ErrUnsupported)
}

// ReapAdopted does nothing: no child is ever adopted.
func ReapAdopted() []int { return nil }

// ReapAdoptedOnSIGCHLD waits for ctx to be done.
func ReapAdoptedOnSIGCHLD(ctx context.Context, reaped func(pids []int)) { <-ctx.Done() }
