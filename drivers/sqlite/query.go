package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	gosync "sync"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/querylang"
	"github.com/syncstore/syncstore/internal/sqliteengine"
	"github.com/syncstore/syncstore/internal/sqlitesql"
	"github.com/syncstore/syncstore/internal/sqlrows"
	"github.com/syncstore/syncstore/internal/storelayout"
)

// Authoritative queries (capability authoritative-query, AQ-1…AQ-5).
//
// A query runs on a connection of a pool of its own (never a reader: the
// temp views below would shadow the tables the readers' statements name),
// in one read transaction:
//
//  1. no authorizer; query_only off; the temp state tables exist;
//  2. BEGIN; one statement reads the partition's max_seq and the stored
//     layout — the snapshot of the whole query starts here (AQ-4);
//  3. the temp views are rebuilt if the stored layout changed since this
//     connection built them; the partition is stored for the views;
//  4. query_only on; the partition policy (queryPolicy) is installed as the
//     connection's authorizer — installing it expires every statement
//     prepared before, so nothing escapes it — and the host's statement
//     runs and is read to the end;
//  5. the authorizer is removed and the transaction ends (it wrote only
//     the connection's temp schema).
//
// Any failure after step 1 closes the connection (database/sql drops a
// connection whose Raw callback returns driver.ErrBadConn), so a pooled
// connection is never left inside a transaction or with a policy.

var _ driver.AuthoritativeQueryConn = (*Conn)(nil)

// queryConns bounds the query pool.
const queryConns = 4

// queryPool is the lazily opened pool of query connections of a Conn.
type queryPool struct {
	dsn string
	sqlrows.LazyDB
	mu      gosync.Mutex // guards modules
	modules []string     // the engine's virtual table modules, read once
}

// newQueryPool returns the pool for readerDSN (the readers' DSN: query_only
// from the start, busy_timeout; temp objects kept in memory).
func newQueryPool(readerDSN string) *queryPool {
	return &queryPool{dsn: readerDSN + "&_pragma=temp_store(MEMORY)"}
}

// get opens the pool on first use. Its connections come from
// sqliteengine.OpenDB: instr is the linear one there (AQ-6; SQLite's own
// costs len(X)·len(Y) in one call, out of the interrupt's reach).
func (p *queryPool) get() (*sql.DB, error) {
	return p.Get(func() (*sql.DB, error) {
		db := sqliteengine.OpenDB(p.dsn)
		db.SetMaxOpenConns(queryConns)
		db.SetMaxIdleConns(queryConns)
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
		return db, nil
	}, errClosed)
}

// moduleNames returns the engine's virtual table modules, read on conn
// the first time.
func (p *queryPool) moduleNames(ctx context.Context, conn *sql.Conn) ([]string, error) {
	p.mu.Lock()
	mods := p.modules
	p.mu.Unlock()
	if mods != nil {
		return mods, nil
	}
	rows, err := conn.QueryContext(ctx, sqlitesql.QueryListModules)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	mods = []string{}
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return nil, err
		}
		mods = append(mods, m)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.modules = mods
	p.mu.Unlock()
	return mods, nil
}

// close closes the pool; later get calls fail. Safe on a nil pool.
func (p *queryPool) close() error {
	if p == nil {
		return nil
	}
	return p.Close()
}

// AuthoritativeQuery runs q against partition's rows only and returns its
// rows with the partition's MaxCommitSeq of the same snapshot (AQ-1…AQ-5).
// Errors: CodeUnknownTable for a declared table that is not in the ensured
// schema (SCH-8); CodeQueryInvalid for anything AQ-1/AQ-2 rule out — more
// than one statement, another kind of statement, named parameters, a bind
// value count that does not match the parameters, a read of any relation
// other than a declared table (the engine refuses it), a declared table
// the statement does not read, a function outside the allowed set, or an
// error the engine reports for the statement itself.
func (c *Conn) AuthoritativeQuery(ctx context.Context, partition string, q driver.Query) (driver.QueryResult, error) {
	if err := c.check(); err != nil {
		return driver.QueryResult{}, err
	}
	declared, err := c.queryTables(q.Tables)
	if err != nil {
		return driver.QueryResult{}, err
	}
	text, args, err := querylang.AdmitQueryArgs(q, querylang.QueryArgRules{BoolAsInt: true})
	if err != nil {
		return driver.QueryResult{}, err
	}
	db, err := c.aq.get()
	if err != nil {
		return driver.QueryResult{}, c.mapErr(ctx, err, "sqlite: open the query pool")
	}
	acquire := func(err error) error { return c.mapErr(ctx, err, "sqlite: query connection") }
	return sqlrows.OnConn(ctx, db, acquire, func(conn *sql.Conn) (driver.QueryResult, error) {
		res, err := c.runQuery(ctx, conn, partition, declared, text.SQL, args, q.Limits.WithDefaults())
		if err != nil {
			return driver.QueryResult{}, err
		}
		return res, nil
	})
}

// queryTables checks the declared tables against the ensured schema and
// returns them sorted and distinct.
func (c *Conn) queryTables(tables []string) ([]string, error) {
	names, _, err := querylang.DeclaredTables(tables, c.state.Table)
	return names, err
}

// runQuery is steps 1–5 of the package comment on one connection, under
// limits (AQ-6): the host's statement runs with SQLITE_LIMIT_LENGTH at
// limits.MaxValueBytes (a longer string or blob, built or read, fails
// with SQLITE_TOOBIG), on a context ending at limits.Timeout (the driver
// interrupts the engine), and its rows are metered as they are read.
func (c *Conn) runQuery(ctx context.Context, conn *sql.Conn, partition string, declared []string, stmt string, args []any,
	limits driver.QueryLimits) (driver.QueryResult, error) {
	const what = "sqlite: authoritative query"
	setAuth := func(fn sqlite.AuthorizerFn) error {
		return conn.Raw(func(dc any) error {
			r, ok := dc.(sqlite.AuthorizerRegisterer)
			if !ok {
				return errors.New("the engine connection has no authorizer")
			}
			return r.RegisterAuthorizer(fn)
		})
	}
	exec := func(q string, a ...any) error {
		_, err := conn.ExecContext(ctx, q, a...)
		return err
	}
	// 1–2
	if err := setAuth(nil); err != nil {
		return driver.QueryResult{}, c.mapErr(ctx, err, what)
	}
	for _, q := range append(append([]string{sqlitesql.QueryWritable}, sqlitesql.QueryStateDDL...), sqlitesql.QueryBegin) {
		if err := exec(q); err != nil {
			return driver.QueryResult{}, c.mapErr(ctx, err, what)
		}
	}
	var res driver.QueryResult
	var stored, built sql.NullString
	if err := conn.QueryRowContext(ctx, sqlitesql.QuerySnapshot, partition, sqlitesql.MetaSchemaLayout).Scan(&res.MaxCommitSeq, &stored, &built); err != nil {
		return driver.QueryResult{}, c.mapErr(ctx, err, what)
	}
	if !stored.Valid {
		return driver.QueryResult{}, driver.Errorf(driver.CodeUnknownTable, "no schema is ensured in the store (SCH-8)")
	}
	layout, err := storelayout.DecodeLayout(stored.String)
	if err != nil {
		return driver.QueryResult{}, err
	}
	// 3
	if !built.Valid || built.String != stored.String {
		if err := c.buildQueryViews(ctx, conn, layout, stored.String); err != nil {
			return driver.QueryResult{}, c.mapErr(ctx, err, what+": build the partition views")
		}
	}
	if err := exec(sqlitesql.QuerySetPartition, partition); err != nil {
		return driver.QueryResult{}, c.mapErr(ctx, err, what)
	}
	modules, err := c.aq.moduleNames(ctx, conn)
	if err != nil {
		return driver.QueryResult{}, c.mapErr(ctx, err, what)
	}
	// 4
	if err := exec(sqlitesql.QueryReadOnly); err != nil {
		return driver.QueryResult{}, c.mapErr(ctx, err, what)
	}
	var appTables []string
	for _, t := range layout.Tables {
		appTables = append(appTables, t.Name)
	}
	policy := newQueryPolicy(declared, appTables, modules)
	if err := setAuth(policy.authorize); err != nil {
		return driver.QueryResult{}, c.mapErr(ctx, err, what)
	}
	oldLength, err := sqlite.Limit(conn, sqlite3.SQLITE_LIMIT_LENGTH, int(min(limits.MaxValueBytes, math.MaxInt32)))
	if err != nil {
		return driver.QueryResult{}, c.mapErr(ctx, err, what)
	}
	// A statement with subqueries runs without the flattener, whose
	// copies of expressions are exponential in the nesting and cannot be
	// interrupted (sqliteengine.SetFlattener); a failure drops the
	// connection, so the setting never outlives the query.
	noFlatten := sqliteengine.NeedsNoFlattening(stmt)
	if noFlatten {
		if err := sqliteengine.SetFlattener(conn, false); err != nil {
			return driver.QueryResult{}, c.mapErr(ctx, err, what)
		}
	}
	qctx, cancel := context.WithTimeout(ctx, limits.Timeout)
	cols, rows, err := readQueryRows(qctx, conn, stmt, args, limits.Meter(what))
	expired := errors.Is(qctx.Err(), context.DeadlineExceeded)
	cancel()
	if err != nil {
		return driver.QueryResult{}, queryErr(ctx, expired, limits, policy, err)
	}
	// 5
	if noFlatten {
		if err := sqliteengine.SetFlattener(conn, true); err != nil {
			return driver.QueryResult{}, c.mapErr(ctx, err, what)
		}
	}
	if _, err := sqlite.Limit(conn, sqlite3.SQLITE_LIMIT_LENGTH, oldLength); err != nil {
		return driver.QueryResult{}, c.mapErr(ctx, err, what)
	}
	if err := setAuth(nil); err != nil {
		return driver.QueryResult{}, c.mapErr(ctx, err, what)
	}
	if err := exec(sqlitesql.QueryCommit); err != nil {
		return driver.QueryResult{}, c.mapErr(ctx, err, what)
	}
	if unused := policy.unused(); len(unused) > 0 {
		sort.Strings(unused)
		return driver.QueryResult{}, driver.Errorf(driver.CodeQueryInvalid,
			"query declares table %s but does not read it (AQ-2)", strings.Join(unused, ", "))
	}
	res.Columns, res.Rows = cols, rows
	return res, nil
}

// buildQueryViews replaces the connection's temp views by those of layout
// and records layoutText as the layout they show.
func (c *Conn) buildQueryViews(ctx context.Context, conn *sql.Conn, layout storelayout.Layout, layoutText string) error {
	rows, err := conn.QueryContext(ctx, sqlitesql.QueryListViews)
	if err != nil {
		return err
	}
	var old []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		old = append(old, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var stmts []string
	for _, name := range old {
		stmts = append(stmts, sqlitesql.DropQueryViewSQL(name))
	}
	for _, t := range layout.Tables {
		stmts = append(stmts, sqlitesql.QueryViewSQL(t))
	}
	for _, q := range stmts {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	_, err = conn.ExecContext(ctx, sqlitesql.QuerySetLayout, layoutText)
	return err
}

var bytesType = reflect.TypeOf([]byte(nil))

// readQueryRows runs the host's statement and reads its rows (AQ-4):
// int64, float64, string, []byte (an empty blob stays a non-nil empty
// slice), nil, and bool for a column declared BOOLEAN (a boolean column).
// Every row and value is counted by m before it is kept; the first bound
// hit ends the read (AQ-6). An error of the statement while it runs (not
// while it is prepared) is a *runErr: its text may quote data.
func readQueryRows(ctx context.Context, conn *sql.Conn, stmt string, args []any, m *driver.QueryMeter) ([]string, [][]any, error) {
	prepared, err := conn.PrepareContext(ctx, stmt)
	if err != nil {
		return nil, nil, err
	}
	defer prepared.Close()
	rows, err := prepared.QueryContext(ctx, args...)
	if err != nil {
		return nil, nil, &runErr{err}
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, nil, err
	}
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, nil, err
	}
	boolean := make([]bool, len(cols))
	for i, ct := range types {
		boolean[i] = strings.EqualFold(ct.DatabaseTypeName(), "BOOLEAN")
	}
	var out [][]any
	for rows.Next() {
		if err := m.Row(); err != nil {
			return nil, nil, err
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		var current []*sql.ColumnType // this row's storage classes, read only when a value is nil
		for i, v := range vals {
			switch x := v.(type) {
			case nil:
				if current == nil {
					if current, err = rows.ColumnTypes(); err != nil {
						return nil, nil, err
					}
				}
				// The engine hands an empty blob over as no bytes; its
				// storage class tells it from NULL.
				if current[i].ScanType() == bytesType {
					vals[i] = []byte{}
				}
			case int64:
				if boolean[i] {
					vals[i] = x != 0
				}
			case float64, string, []byte:
			default:
				return nil, nil, driver.Errorf(driver.CodeInternal, "sqlite: query result column %d has an unexpected %T", i+1, v)
			}
			if err := m.ValueOf(vals[i]); err != nil {
				return nil, nil, err
			}
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, &runErr{err}
	}
	return cols, out, nil
}

// runErr is an engine error raised while the host's statement ran. Its
// text may quote a row value (`bad JSON path: 'one'`), so queryErr never
// prints it (V-10).
type runErr struct{ err error }

func (e *runErr) Error() string { return e.err.Error() }
func (e *runErr) Unwrap() error { return e.err }

// queryErr classifies an error of the host's statement (ctx is the
// caller's; expired says the statement's own deadline, limits.Timeout,
// passed): a bound hit (that deadline while ctx lives, SQLITE_TOOBIG,
// SQLITE_NOMEM) → CodeQueryLimit (AQ-6); refused by the policy or
// rejected by the engine as SQL (a syntax error, an unknown table or
// column, a bind range, a runtime error of the statement's own making) →
// CodeQueryInvalid; a context that ended or a busy engine →
// CodeUnavailable; anything else → CodeInternal. The engine's text of an
// error raised while the statement ran is replaced by its result code: it
// may quote a row value (V-10).
func queryErr(ctx context.Context, expired bool, limits driver.QueryLimits, p *queryPolicy, err error) error {
	const what = "sqlite: authoritative query"
	var de *driver.Error
	if errors.As(err, &de) {
		return err
	}
	if ctx.Err() != nil {
		return mapErr(ctx, err, what)
	}
	var se *sqlite.Error
	code := 0
	if errors.As(err, &se) {
		code = se.Code()
	}
	var re *runErr
	if errors.As(err, &re) {
		err = fmt.Errorf("SQLite result code %d", code) // never the engine's text (V-10)
	}
	switch {
	case expired:
		return driver.NewQueryLimitError(driver.BoundTime, limits.TimeoutMillis(), err, what)
	case code&0xff == sqlite3.SQLITE_TOOBIG:
		return driver.NewQueryLimitError(driver.BoundValueBytes, limits.MaxValueBytes, err, what)
	case code&0xff == sqlite3.SQLITE_NOMEM:
		return driver.NewQueryLimitError(driver.BoundMemory, 0, err, what)
	case p.wasDenied():
		return driver.Wrap(driver.CodeQueryInvalid, err,
			"query reads a relation other than its declared tables, writes, or calls a function it may not (AQ-1, AQ-2)")
	}
	switch code & 0xff {
	case sqlite3.SQLITE_ERROR, sqlite3.SQLITE_AUTH, sqlite3.SQLITE_RANGE, sqlite3.SQLITE_MISMATCH,
		sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CONSTRAINT:
		return driver.Wrap(driver.CodeQueryInvalid, err, "query is not a valid query of its declared tables (AQ-1, AQ-2)")
	}
	return mapErr(ctx, err, what)
}
