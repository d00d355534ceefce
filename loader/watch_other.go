//go:build !linux

package loader

import "log/slog"

// startNotify reports errNoNotify: outside Linux the watcher polls.
func startNotify(*Watcher, []string, func([]string), *slog.Logger) (func() error, error) {
	return nil, errNoNotify
}
