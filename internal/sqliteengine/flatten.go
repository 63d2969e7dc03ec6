// Package sqliteengine holds the engine settings of modernc.org/sqlite
// that its driver API does not expose, shared by drivers/sqlite and the
// d1http schema twin.
package sqliteengine

import (
	"database/sql"
	"fmt"
	"reflect"
	"strings"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/syncstore/syncstore/internal/querylang"
)

// sqliteQueryFlattener is SQLite's SQLITE_QueryFlattener optimization bit
// (sqliteInt.h), the one SQLITE_TESTCTRL_OPTIMIZATIONS turns off.
const sqliteQueryFlattener = 0x00000001

// SetFlattener turns SQLite's query flattener on or off for conn's
// engine connection (SQLITE_TESTCTRL_OPTIMIZATIONS; every other
// optimization stays on).
//
// Why (AQ-6): flattening a derived table or CTE into its outer query
// copies the subquery's result expression into every place the outer
// query names its column, while the statement is prepared — before
// SQLite runs a single step, so neither the interrupt nor the progress
// handler can stop it, and no limit bounds the expression's size. A few
// hundred bytes of `SELECT x||x AS x FROM (SELECT x||x AS x FROM (…))`
// nested 30 deep make a 2^30-node expression: gigabytes of memory and
// minutes in prepare. Without the flattener each level is a co-routine
// that computes its value once per row, so the work is linear in the
// text and SQLITE_LIMIT_LENGTH stops the doubling value at MaxValueBytes.
func SetFlattener(conn *sql.Conn, on bool) error {
	return conn.Raw(func(dc any) error {
		db, err := handle(dc)
		if err != nil {
			return err
		}
		mask := uint32(0)
		if !on {
			mask = sqliteQueryFlattener
		}
		tls := libc.NewTLS()
		defer tls.Close()
		va := libc.NewVaList(db, mask)
		if va == 0 {
			return fmt.Errorf("sqliteengine: out of memory")
		}
		defer libc.Xfree(tls, va)
		sqlite3.Xsqlite3_test_control(tls, sqlite3.SQLITE_TESTCTRL_OPTIMIZATIONS, va)
		return nil
	})
}

// handle returns the sqlite3* of a modernc.org/sqlite driver connection
// (its unexported field db, read through reflect: modernc exposes no
// accessor).
func handle(dc any) (uintptr, error) {
	v := reflect.ValueOf(dc)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return 0, fmt.Errorf("sqliteengine: unexpected driver connection %T", dc)
	}
	f := v.FieldByName("db")
	if !f.IsValid() || f.Kind() != reflect.Uintptr || f.Uint() == 0 {
		return 0, fmt.Errorf("sqliteengine: driver connection %T has no engine handle", dc)
	}
	return uintptr(f.Uint()), nil
}

// NeedsNoFlattening reports whether a host statement may hold a subquery
// the flattener would copy (more than one SELECT): such a statement runs
// with the flattener off (see SetFlattener). A statement with one SELECT
// keeps every plan of the partition views, which carry no expression and
// flatten without copying.
// A text that does not tokenize is treated as needing it.
func NeedsNoFlattening(stmt string) bool {
	toks, err := querylang.Tokenize(stmt)
	if err != nil {
		return true
	}
	n := 0
	for _, t := range toks {
		if t.Kind == querylang.TokWord && strings.EqualFold(stmt[t.Start:t.End], "SELECT") {
			if n++; n > 1 {
				return true
			}
		}
	}
	return false
}
