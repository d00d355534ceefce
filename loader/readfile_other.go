//go:build !unix

package loader

import "os"

// openConfigFile opens path for reading. Opening a file does not wait for
// a writer outside Unix; the caller checks the type before and after.
func openConfigFile(path string) (*os.File, error) { return os.Open(path) }
