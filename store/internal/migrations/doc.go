// Package migrations reads the numbered schema files the durable stores
// embed: one file per version, named NNNN_name.sql, whose versions run 1,
// 2, 3, … without gaps. Each store applies them itself (SQLite under
// PRAGMA user_version, PostgreSQL in its migrations table); this package
// only lists them in order and checks their numbering.
//
// Example:
//
//	//go:embed migrations/*.sql
//	var migrationFS embed.FS
//
//	ms, err := migrations.Load("sqlite", migrationFS, "migrations")
//	if err != nil { ... }
//	for _, m := range ms { ... apply m.SQL, record m.Version ... }
package migrations
