package migrations

import (
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// Migration is one schema file.
type Migration struct {
	Version int    // from the file name: 3 for 0003_snapshots.sql
	Name    string // the file's base name, for messages and records
	SQL     string // the file's contents
}

// Load returns the .sql files in dir of fsys in version order, checking
// that each name starts with a number and '_' and that the numbers run 1,
// 2, 3, … without gaps. Files sort by name, so numbers are zero-padded to
// one width. storeName starts the messages of its errors, as in "sqlite:
// migration 0003_x.sql: version 3, want 2"; errors from fsys are returned
// as they are.
func Load(storeName string, fsys fs.FS, dir string) ([]Migration, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, name := range names { // fs.Glob returns sorted names
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("%s: migration %s: name must start with a number and '_'", storeName, base)
		}
		if v != len(ms)+1 {
			return nil, fmt.Errorf("%s: migration %s: version %d, want %d", storeName, base, v, len(ms)+1)
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: base, SQL: string(b)})
	}
	return ms, nil
}
