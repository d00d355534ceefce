//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd || windows)

package oauth

import "context"

// lockFile takes no lock on platforms without flock(2) or LockFileEx
// (Solaris, AIX, Plan 9, WebAssembly): a [FileStore] there serialises
// only the writers of its own process. Each save still replaces the file
// whole and atomically, so a reader never sees a partial file, but two
// processes saving at once may lose one's change.
func lockFile(context.Context, string) (unlock func(), err error) { return func() {}, nil }

// syncDir does nothing on these platforms.
func syncDir(string) error { return nil }
