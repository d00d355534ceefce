// Package pgtest gives tests a PostgreSQL database to run against, each
// test its own schema in it, much as net/http/httptest gives them a
// server.
//
// The server is the one named by the environment variable
// MCPLIFE_TEST_POSTGRES, by default [DefaultConnString] (the machine's own
// server, database test, trust authentication). When it cannot be reached,
// a test is skipped with the reason, or, when the environment variable CI
// is "true", fails: CI must not pass by skipping.
//
// A test of code that uses the PostgreSQL store:
//
//	func TestFleet(t *testing.T) {
//		cs, schema := pgtest.Schema(t) // dropped when the test ends
//		db, err := postgres.Open(t.Context(), cs, &postgres.Options{Schema: schema})
//		if err != nil {
//			t.Fatal(err)
//		}
//		defer db.Close()
//		...
//	}
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvConnString names the environment variable that overrides
// [DefaultConnString].
const EnvConnString = "MCPLIFE_TEST_POSTGRES"

// DefaultConnString is the test database: the local server's database
// test, as user root, without TLS.
const DefaultConnString = "postgres://root@127.0.0.1:5432/test?sslmode=disable"

// SchemaPrefix starts the name of every schema [Schema] hands out, so
// that one a killed test run left behind is recognisable.
const SchemaPrefix = "mcplife_test_"

// reachable holds the outcome of the first connection attempt: later
// tests in the same process skip (or fail) at once instead of waiting for
// a timeout each.
var reachable = struct {
	once sync.Once
	err  error
}{}

// ConnString returns the connection string of the test database. It skips
// t, or fails it when CI is "true", if the server cannot be reached.
func ConnString(t testing.TB) string {
	t.Helper()
	cs := os.Getenv(EnvConnString)
	if cs == "" {
		cs = DefaultConnString
	}
	reachable.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, cs)
		if err != nil {
			reachable.err = err
			return
		}
		reachable.err = conn.Ping(ctx)
		conn.Close(ctx)
	})
	if err := reachable.err; err != nil {
		msg := fmt.Sprintf("PostgreSQL test server unreachable (set %s to use another): %v", EnvConnString, err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return cs
}

// Schema returns the connection string of the test database and the name
// of a fresh schema in it: one that does not exist yet (so a store opened
// on it creates it, as on a new database). When t ends, the schema is
// dropped with everything in it; close what uses it first (cleanups
// registered after this call run before the drop). It skips or fails t as
// [ConnString] does.
func Schema(t testing.TB) (connString, schema string) {
	t.Helper()
	cs := ConnString(t)
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema = SchemaPrefix + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		if err := Drop(cs, schema); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return cs, schema
}

// Database returns the connection string of a fresh database on the test
// server, made for t and dropped, with everything in it, when t ends (close
// what uses it first). A store opened on it with the default schema is a
// store of its own, as on another server. It skips or fails t as
// [ConnString] does.
func Database(t testing.TB) string {
	t.Helper()
	cs := ConnString(t)
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	name := SchemaPrefix + hex.EncodeToString(b[:])
	u, err := url.Parse(cs)
	if err != nil || u.Scheme == "" {
		t.Fatalf("pgtest: Database needs a URL in %s", EnvConnString)
	}
	admin := func(q string) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, cs)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, q)
		return err
	}
	ident := pgx.Identifier{name}.Sanitize()
	if err := admin(`CREATE DATABASE ` + ident); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := admin(`DROP DATABASE IF EXISTS ` + ident + ` WITH (FORCE)`); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// Drop drops schema, and everything in it, from the database connString
// names, if it exists.
func Drop(connString, schema string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return fmt.Errorf("drop schema %s: %w", schema, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		return fmt.Errorf("drop schema %s: %w", schema, err)
	}
	return nil
}
