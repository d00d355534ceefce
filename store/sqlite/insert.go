package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mcplife/mcplife/events"
)

// Row counts of the multi-row inserts. 256 rows bind 2,816 parameters,
// well below SQLite's default limit of 32,766.
const (
	largeGroup = 256
	smallGroup = 16
)

// rowColumns is the number of values an events row binds.
const rowColumns = 11

// insertEvents returns an INSERT statement for n rows of events, each
// with its chain value.
func insertEvents(n int) string {
	row := "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	return `INSERT INTO events (` + eventColumns + `, hash) VALUES ` + row + strings.Repeat(", "+row, n-1)
}

// writerStmts are the statements of the append path, prepared on the
// writer connection's driver connection and run there directly rather
// than through database/sql, which converts the arguments of every call
// into a slice it allocates anew (for a 256-row insert 2,816 values, most
// of an append's garbage) and runs an Exec by binding each argument in a
// cgo call of its own. Each runs as a query, whose driver path binds all
// arguments and steps in a single cgo call (see bench/README.md for what
// that saves). The argument slice is kept from one statement to the
// next: only the writer uses them.
type writerStmts struct {
	insertOne, insertSmall, insertLarge driver.Stmt // 1, smallGroup and largeGroup rows
	positions                           driver.Stmt // a stream's version and the last seq
	upsertStream                        driver.Stmt // with the chain head

	args []driver.NamedValue
	dest [2]driver.Value
}

func (w *writerStmts) all() []*driver.Stmt {
	return []*driver.Stmt{&w.insertOne, &w.insertSmall, &w.insertLarge, &w.positions, &w.upsertStream}
}

// prepare prepares w's statements on conn, the writer connection.
func (w *writerStmts) prepare(ctx context.Context, conn *sql.Conn) error {
	qs := map[*driver.Stmt]string{
		&w.insertOne:   insertEvents(1),
		&w.insertSmall: insertEvents(smallGroup),
		&w.insertLarge: insertEvents(largeGroup),
		&w.positions:   `SELECT (SELECT version FROM streams WHERE stream = ?), (SELECT COALESCE(MAX(seq), 0) FROM events)`,
		&w.upsertStream: `INSERT INTO streams (stream, version, first_seq, last_seq, created, updated, last_hash)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
			ON CONFLICT (stream) DO UPDATE SET version = ?2, last_seq = ?4, updated = ?6, last_hash = ?7`,
	}
	return conn.Raw(func(dc any) error {
		pc, ok := dc.(driver.ConnPrepareContext)
		if !ok {
			return fmt.Errorf("driver connection %T cannot prepare with a context", dc)
		}
		for dst, q := range qs {
			st, err := pc.PrepareContext(ctx, q)
			if err != nil {
				return fmt.Errorf("prepare %q: %w", q, mapErr(err))
			}
			if _, ok := st.(driver.StmtQueryContext); !ok {
				st.Close()
				return fmt.Errorf("driver statement %T cannot query with a context", st)
			}
			*dst = st
		}
		return nil
	})
}

// close closes w's statements, on conn while it is open.
func (w *writerStmts) close(conn *sql.Conn) error {
	var errs []error
	closeAll := func(any) error {
		for _, st := range w.all() {
			if *st != nil {
				errs = append(errs, (*st).Close())
				*st = nil
			}
		}
		return nil
	}
	if conn == nil || conn.Raw(closeAll) != nil {
		closeAll(nil)
	}
	return errors.Join(errs...)
}

// bind returns w's argument slice holding vals.
func (w *writerStmts) bind(vals ...any) []driver.NamedValue {
	if len(w.args) < len(vals) {
		w.grow(len(vals))
	}
	args := w.args[:len(vals)]
	for i, v := range vals {
		args[i].Value = v
	}
	return args
}

func (w *writerStmts) grow(n int) {
	w.args = make([]driver.NamedValue, n)
	for i := range w.args {
		w.args[i].Ordinal = i + 1
	}
}

// unbind drops the first n values, so that w holds on to no event's data.
func (w *writerStmts) unbind(n int) {
	for i := range w.args[:n] {
		w.args[i].Value = nil
	}
}

// exec runs st, which returns no rows, with vals. Requires the writer.
func (db *DB) exec(ctx context.Context, st driver.Stmt, vals ...any) error {
	w := &db.wstmts
	defer w.unbind(len(vals))
	return db.wconn.Raw(func(any) error { return queryRows(ctx, st, w.bind(vals...), nil) })
}

// positions returns stream's version (0 when it has none) and the last
// seq. Requires the writer.
func (db *DB) positions(ctx context.Context, stream string) (version, last int64, err error) {
	w := &db.wstmts
	defer w.unbind(1)
	err = db.wconn.Raw(func(any) error { return queryRows(ctx, w.positions, w.bind(stream), w.dest[:]) })
	version, _ = w.dest[0].(int64) // NULL for a new stream
	last, _ = w.dest[1].(int64)
	w.dest = [2]driver.Value{}
	return version, last, err
}

// statementRows returns how many of n rows still to insert the next
// statement takes: rows go in groups of largeGroup and smallGroup, the
// rest one by one, and the rest first, so that the first statements of a
// large append, which the goroutine computing its chain values has had
// the least time to get ahead of, are the ones that need the fewest (see
// rowChain).
func statementRows(n int) int {
	switch {
	case n%smallGroup != 0:
		return 1
	case n%largeGroup != 0:
		return smallGroup
	}
	return largeGroup
}

// insert inserts es, each with its chain value from chain, into events in
// as few statements as it can (see statementRows). A string equal to the
// one in the same column of the row before is bound from the same
// interface value, so a batch's repeated stream, type, session and host
// are not boxed again for every row. Requires the writer.
func (db *DB) insert(ctx context.Context, es []events.Envelope, chain *rowChain) error {
	w := &db.wstmts
	n := rowColumns * min(len(es), largeGroup) // the most values a statement binds
	if len(w.args) < n {
		w.grow(n)
	}
	// The values bound last, by column.
	var (
		strs  [5]string
		boxed [5]any
	)
	str := func(k int, s string) any {
		if boxed[k] == nil || strs[k] != s {
			strs[k], boxed[k] = s, s
		}
		return boxed[k]
	}
	defer w.unbind(n)
	return db.wconn.Raw(func(any) error {
		for done := 0; done < len(es); {
			rows := statementRows(len(es) - done)
			st := w.insertOne
			switch rows {
			case largeGroup:
				st = w.insertLarge
			case smallGroup:
				st = w.insertSmall
			}
			chain.wait(done + rows)
			args := w.args[:rowColumns*rows]
			for i, e := range es[done : done+rows] {
				data := []byte(e.Data)
				if data == nil {
					data = []byte{} // NOT NULL; an empty blob reads back empty
				}
				row := args[rowColumns*i : rowColumns*(i+1)]
				row[0].Value = int64(e.Seq)
				row[1].Value = str(0, e.Stream)
				row[2].Value = int64(e.Version)
				row[3].Value = str(1, e.Type)
				row[4].Value = int64(e.Schema)
				row[5].Value = e.Time.UnixNano()
				row[6].Value = str(2, e.SessionID)
				row[7].Value = str(3, e.CorrelationID)
				row[8].Value = str(4, e.Host)
				row[9].Value = data
				row[10].Value = chain.value(done + i)
			}
			if err := queryRows(ctx, st, args, nil); err != nil {
				return fmt.Errorf("insert seq %d-%d: %w", es[done].Seq, es[done+rows-1].Seq, mapErr(err))
			}
			done += rows
		}
		return nil
	})
}

// queryRows runs st with args as a query. A statement without columns
// (a write) is driven to its end, so it has run whatever the driver's
// stepping strategy; one with columns has its first row read into dest,
// which must be as long as a row.
func queryRows(ctx context.Context, st driver.Stmt, args []driver.NamedValue, dest []driver.Value) error {
	rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return err
	}
	if n := len(rows.Columns()); n != len(dest) {
		rows.Close()
		return fmt.Errorf("the statement returns %d columns, want %d", n, len(dest))
	}
	err = rows.Next(dest)
	for len(dest) == 0 && err == nil {
		err = rows.Next(dest)
	}
	if err != nil && err != io.EOF {
		rows.Close()
		return err
	}
	return rows.Close()
}
