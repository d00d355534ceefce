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

// rowWriter inserts events rows through the driver's own statements,
// prepared on the writer connection, rather than through database/sql,
// which converts the arguments of every call into a slice it allocates
// anew (for a 256-row statement 2,816 values, most of an append's
// garbage). Its argument slice is kept from one insert to the next: only
// the writer uses it.
type rowWriter struct {
	one, small, large driver.Stmt // 1, smallGroup and largeGroup rows
	args              []driver.NamedValue
}

// prepareRows prepares w's statements on conn, the writer connection.
func (w *rowWriter) prepare(ctx context.Context, conn *sql.Conn) error {
	return conn.Raw(func(dc any) error {
		pc, ok := dc.(driver.ConnPrepareContext)
		if !ok {
			return fmt.Errorf("driver connection %T cannot prepare with a context", dc)
		}
		for _, p := range []struct {
			st   *driver.Stmt
			rows int
		}{{&w.one, 1}, {&w.small, smallGroup}, {&w.large, largeGroup}} {
			st, err := pc.PrepareContext(ctx, insertEvents(p.rows))
			if err != nil {
				return fmt.Errorf("prepare the insert of %d rows: %w", p.rows, mapErr(err))
			}
			if _, ok := st.(driver.StmtQueryContext); !ok {
				st.Close()
				return fmt.Errorf("driver statement %T cannot query with a context", st)
			}
			*p.st = st
		}
		return nil
	})
}

// close closes w's statements, on conn while it is open.
func (w *rowWriter) close(conn *sql.Conn) error {
	var errs []error
	closeAll := func(any) error {
		for _, st := range []*driver.Stmt{&w.one, &w.small, &w.large} {
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

// statementRows returns how many of n rows still to insert the next
// statement takes: rows go in groups of largeGroup and smallGroup, the
// rest one by one.
func statementRows(n int) int {
	switch {
	case n >= largeGroup:
		return largeGroup
	case n >= smallGroup:
		return smallGroup
	}
	return 1
}

// insert inserts es, each with its chain value from chain, into events in
// as few statements as it can (see statementRows). Every statement runs as a query, whose
// driver path binds all arguments and steps in a single cgo call rather
// than one per value (see bench/README.md for what that saves). A string
// equal to the one in the same column of the row before is bound from
// the same interface value, so a batch's repeated stream, type, session
// and host are not boxed again for every row. Requires the writer.
func (db *DB) insert(ctx context.Context, es []events.Envelope, chain *rowChain) error {
	w := &db.rows
	n := rowColumns * min(len(es), largeGroup) // the most values a statement binds
	if len(w.args) < n {
		w.args = make([]driver.NamedValue, n)
		for i := range w.args {
			w.args[i].Ordinal = i + 1
		}
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
	defer func() { // hold on to no event's data
		for i := range w.args[:n] {
			w.args[i].Value = nil
		}
	}()
	return db.wconn.Raw(func(any) error {
		for done := 0; done < len(es); {
			rows := statementRows(len(es) - done)
			st := w.one
			switch rows {
			case largeGroup:
				st = w.large
			case smallGroup:
				st = w.small
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
				row[10].Value = chain.hashes[done+i]
			}
			if err := queryRows(ctx, st, args); err != nil {
				return fmt.Errorf("insert seq %d-%d: %w", es[done].Seq, es[done+rows-1].Seq, mapErr(err))
			}
			done += rows
		}
		return nil
	})
}

// queryRows runs st with args as a query and drives it to its end, so the
// insert has run whatever the driver's stepping strategy.
func queryRows(ctx context.Context, st driver.Stmt, args []driver.NamedValue) error {
	rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return err
	}
	dest := make([]driver.Value, len(rows.Columns()))
	for {
		if err := rows.Next(dest); err != nil {
			if err == io.EOF {
				break
			}
			rows.Close()
			return err
		}
	}
	return rows.Close()
}
