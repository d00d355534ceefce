package loader

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// maxConfigFileSize is the largest config file the loader reads: 4 MiB.
// A hand-written MCP config is a few kilobytes; anything near the limit is
// not one, and reading it would only cost memory.
const maxConfigFileSize = 4 << 20

// maxClaudeStateSize is the limit for ~/.claude.json, 256 MiB. Claude Code
// keeps its per-project state and prompt history in that file beside the
// servers, and users' copies reach tens of megabytes; it lives in the
// user's home, where a project cannot plant it.
const maxClaudeStateSize = 256 << 20

// readConfigFile returns the contents of the regular file at path,
// following symlinks. Anything else (a named pipe, a device, a socket, a
// directory) and a file larger than limit bytes are refused without being
// read, so a config path can neither block discovery nor feed it without
// end. The type is checked on the path and again on the opened file, which
// is what counts if the path was swapped in between; opening itself cannot
// block (see openConfigFile). Errors are *fs.PathError for the file system's
// own, or say why the file was refused.
func readConfigFile(path string, limit int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := checkConfigFile(fi, limit); err != nil {
		return nil, err
	}
	f, err := openConfigFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := checkConfigFile(fi, limit); err != nil {
		return nil, err
	}
	// Sized once from the file: growing the buffer as it fills would
	// allocate about twice a large ~/.claude.json.
	buf := bytes.NewBuffer(make([]byte, 0, fi.Size()+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(f, limit+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > limit { // grew while being read
		return nil, tooLarge(limit)
	}
	return buf.Bytes(), nil
}

// checkConfigFile refuses a file that is not regular or is over limit.
func checkConfigFile(fi fs.FileInfo, limit int64) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", fileKind(fi.Mode()))
	}
	if fi.Size() > limit {
		return tooLarge(limit)
	}
	return nil
}

func tooLarge(limit int64) error {
	return fmt.Errorf("larger than %d MiB, the limit for a config file", limit>>20)
}

// fileKind names the type of a file that is not regular.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeDir != 0:
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	}
	return "irregular file"
}
