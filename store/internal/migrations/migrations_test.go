package migrations

import (
	"fmt"
	"testing"
	"testing/fstest"
)

func TestLoadOrdersAndReads(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0002_streams.sql": {Data: []byte("CREATE TABLE streams (x);")},
		"m/0001_events.sql":  {Data: []byte("CREATE TABLE events (x);")},
		"m/README":           {Data: []byte("not a migration")},
		"0003_outside.sql":   {Data: []byte("not in m")},
	}
	ms, err := Load("test", fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	want := []Migration{
		{Version: 1, Name: "0001_events.sql", SQL: "CREATE TABLE events (x);"},
		{Version: 2, Name: "0002_streams.sql", SQL: "CREATE TABLE streams (x);"},
	}
	if fmt.Sprint(ms) != fmt.Sprint(want) {
		t.Fatalf("Load = %v, want %v", ms, want)
	}
}

func TestLoadEmpty(t *testing.T) {
	ms, err := Load("test", fstest.MapFS{}, "m")
	if err != nil || len(ms) != 0 {
		t.Fatalf("Load of no files = %v, %v; want none", ms, err)
	}
}

func TestLoadRefusesBadNumbering(t *testing.T) {
	for _, c := range []struct {
		name  string
		files []string
		want  string
	}{
		{"gap", []string{"0001_a.sql", "0003_c.sql"}, "sqlite: migration 0003_c.sql: version 3, want 2"},
		{"not from one", []string{"0002_b.sql"}, "sqlite: migration 0002_b.sql: version 2, want 1"},
		{"twice", []string{"0001_a.sql", "0001_b.sql"}, "sqlite: migration 0001_b.sql: version 1, want 2"},
		{"no number", []string{"0001_a.sql", "b.sql"}, "sqlite: migration b.sql: name must start with a number and '_'"},
		{"no underscore", []string{"0001.sql"}, "sqlite: migration 0001.sql: name must start with a number and '_'"},
		// Names sort as text: unpadded numbers come out of order.
		{"unpadded", []string{"1_a.sql", "2_b.sql", "10_j.sql"}, "sqlite: migration 10_j.sql: version 10, want 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for _, f := range c.files {
				fsys["m/"+f] = &fstest.MapFile{Data: []byte("SELECT 1;")}
			}
			ms, err := Load("sqlite", fsys, "m")
			if err == nil || err.Error() != c.want {
				t.Fatalf("Load = %v, %v; want error %q", ms, err, c.want)
			}
		})
	}
}
