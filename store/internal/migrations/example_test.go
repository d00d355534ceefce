package migrations_test

import (
	"fmt"
	"testing/fstest"

	"github.com/mcplife/mcplife/store/internal/migrations"
)

func ExampleLoad() {
	// A store embeds its files with //go:embed migrations/*.sql.
	fsys := fstest.MapFS{
		"migrations/0001_events.sql":    {Data: []byte("CREATE TABLE events (seq integer PRIMARY KEY);")},
		"migrations/0002_snapshots.sql": {Data: []byte("CREATE TABLE snapshots (name text PRIMARY KEY);")},
	}
	ms, err := migrations.Load("example", fsys, "migrations")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range ms {
		fmt.Println(m.Version, m.Name)
	}
	// Output:
	// 1 0001_events.sql
	// 2 0002_snapshots.sql
}
