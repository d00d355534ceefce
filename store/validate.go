package store

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/mcplife/mcplife/events"
)

// Times outside int64 Unix nanoseconds cannot be stored.
var (
	minTime = time.Unix(0, math.MinInt64).UTC()
	maxTime = time.Unix(0, math.MaxInt64).UTC()
)

// CheckAppend returns an error, prefixed with backend, when an Append of
// envs to stream with the expected version must be refused before anything
// is stored: an empty stream name, an expected version below AnyVersion,
// or an event time that is zero or outside what int64 nanoseconds hold
// (1678–2262). Every backend applies the same rules.
func CheckAppend(backend, stream string, expected int64, envs []events.Envelope) error {
	if stream == "" {
		return errors.New(backend + ": append: empty stream name")
	}
	if expected < AnyVersion {
		return fmt.Errorf("%s: append %q: invalid expected version %d", backend, stream, expected)
	}
	for i, e := range envs {
		if e.Time.IsZero() || e.Time.Before(minTime) || e.Time.After(maxTime) {
			return fmt.Errorf("%s: append %q: event %d (%s): time %v is zero or outside 1678-2262", backend, stream, i, e.Type, e.Time)
		}
	}
	return nil
}
