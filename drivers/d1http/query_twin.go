package d1http

import (
	"context"
	"database/sql"
	"errors"
	"sort"
	"strings"
	gosync "sync"
	"time"

	"modernc.org/sqlite"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/internal/sqliteengine"
)

// The schema twin of authoritative queries: an in-memory SQLite database
// (modernc, the engine of drivers/sqlite) holding the store's application
// tables — same DDL, no rows — in which the rewritten statement is
// prepared, under an authorizer, before D1 ever sees it. The statement
// never reads a row there. It answers what D1's HTTP API cannot:
//
//   - engine-side name resolution (AQ-2): SQLite itself resolves every
//     relation of the statement and asks the authorizer about each read;
//     the only relations it allows are the declared tables' main."T" (the
//     bodies of the partition CTEs: the host cannot write main.) and
//     json_each/json_tree. A relation that exists on D1 but not in the
//     twin (D1's _cf_* tables, a table of another application) is "no such
//     table" here: refused. A declared table the statement never reads is
//     refused too;
//   - functions outside the allow-list, writes, pragmas: denied;
//   - the result's column names and declared types (D1 returns neither
//     the types nor, through the typing wrapper, the names): a column
//     declared BOOLEAN yields bool, exactly as drivers/sqlite decides
//     (AQ-5), and the column count sizes D1QueryWrap.
//
// One twin per schema layout, shared by every Conn of the process (at
// most twinCacheSize layouts kept); its one connection is used by one
// query at a time.

// twinCacheSize bounds the twins kept (least recently used dropped).
const twinCacheSize = 8

// twinRunLimit bounds the twin's first step of a statement (or the
// query's Timeout, when shorter). Over empty tables it is immediate,
// unless the statement computes without reading any table (a recursive
// CTE counting to a billion): such a statement hits its time bound here
// (CodeQueryLimit, AQ-6), before D1 runs it, rather than holding the
// twin, which every query of the layout shares.
const twinRunLimit = 2 * time.Second

var twins struct {
	mu    gosync.Mutex
	byKey map[string]*twin
	order []string // least recently used first
}

// twin is the schema twin of one layout.
type twin struct {
	mu       gosync.Mutex
	db       *sql.DB
	conn     *sql.Conn
	reserved map[string]bool // lower-cased application table names
	broken   bool
}

// twinFor returns the twin of st's layout, creating it on first use.
func twinFor(ctx context.Context, st *schemaState) (*twin, error) {
	twins.mu.Lock()
	defer twins.mu.Unlock()
	if tw, ok := twins.byKey[st.Layout]; ok && !tw.broken {
		for i, k := range twins.order {
			if k == st.Layout {
				twins.order = append(append(twins.order[:i:i], twins.order[i+1:]...), k)
				break
			}
		}
		return tw, nil
	}
	tw, err := newTwin(ctx, st)
	if err != nil {
		return nil, err
	}
	if twins.byKey == nil {
		twins.byKey = map[string]*twin{}
	}
	if old, ok := twins.byKey[st.Layout]; ok {
		old.close()
		for i, k := range twins.order {
			if k == st.Layout {
				twins.order = append(twins.order[:i:i], twins.order[i+1:]...)
				break
			}
		}
	}
	for len(twins.order) >= twinCacheSize {
		twins.byKey[twins.order[0]].close()
		delete(twins.byKey, twins.order[0])
		twins.order = twins.order[1:]
	}
	twins.byKey[st.Layout] = tw
	twins.order = append(twins.order, st.Layout)
	return tw, nil
}

func newTwin(ctx context.Context, st *schemaState) (*twin, error) {
	fail := func(err error) (*twin, error) {
		return nil, driver.Wrap(driver.CodeInternal, err, "d1http: authoritative query: build the schema twin")
	}
	// sqliteengine.OpenDB: the twin's instr is the linear one (AQ-6), so a
	// statement that calls it on bind values alone cannot hold the twin
	// past twinRunLimit inside one call.
	db := sqliteengine.OpenDB("file:d1twin?mode=memory&cache=private")
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return fail(err)
	}
	tw := &twin{db: db, conn: conn, reserved: map[string]bool{}}
	names := make([]string, 0, len(st.Tables))
	for n := range st.Tables {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		tw.reserved[strings.ToLower(n)] = true
		if _, err := conn.ExecContext(ctx, st.Tables[n].CreateSQL()[0]); err != nil {
			tw.close()
			return fail(err)
		}
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA query_only = 1"); err != nil {
		tw.close()
		return fail(err)
	}
	// Every statement of the twin has subqueries (the partition CTEs):
	// without the flattener, preparing one is linear in its text, where
	// flattening nested derived tables that name a column twice copies
	// expressions exponentially, in prepare, out of the interrupt's reach
	// (AQ-6, sqliteengine.SetFlattener). The twin only resolves names and
	// types, which flattening does not change.
	if err := sqliteengine.SetFlattener(conn, false); err != nil {
		tw.close()
		return fail(err)
	}
	return tw, nil
}

func (tw *twin) close() {
	_ = tw.conn.Close()
	_ = tw.db.Close()
}

// twinResult is what the twin learnt of a statement.
type twinResult struct {
	columns []string
	boolean []bool // the column is declared BOOLEAN
}

// describe prepares q (its first step runs on empty tables) under the
// policy of a query declaring declared, and returns its result columns.
// Errors: CodeQueryLimit "time" when the first step outlives twinRunLimit
// or limits.Timeout; CodeQueryInvalid when the policy denies something, the engine
// rejects the statement, or a declared table is never read; CodeUnavailable
// when ctx ended.
func (tw *twin) describe(ctx context.Context, q d1sql.D1Query, declared []string, limits driver.QueryLimits) (twinResult, error) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	pol := &twinPolicy{declared: map[string]bool{}, reserved: tw.reserved, used: map[string]bool{}}
	for _, t := range declared {
		pol.declared[t] = true
	}
	setAuth := func(fn sqlite.AuthorizerFn) error {
		return tw.conn.Raw(func(dc any) error {
			r, ok := dc.(sqlite.AuthorizerRegisterer)
			if !ok {
				return errors.New("the engine connection has no authorizer")
			}
			return r.RegisterAuthorizer(fn)
		})
	}
	if err := setAuth(pol.authorize); err != nil {
		tw.broken = true
		return twinResult{}, driver.Wrap(driver.CodeInternal, err, "d1http: authoritative query: schema twin")
	}
	runLimit := min(twinRunLimit, limits.Timeout)
	rctx, cancel := context.WithTimeout(ctx, runLimit)
	res, err := tw.run(rctx, q)
	timedOut := errors.Is(rctx.Err(), context.DeadlineExceeded) // read before cancel sets it
	cancel()
	if aerr := setAuth(nil); aerr != nil {
		tw.broken = true
	}
	if err != nil {
		if ctx.Err() != nil {
			return twinResult{}, driver.Wrap(driver.CodeUnavailable, ctx.Err(), "d1http: authoritative query: context ended")
		}
		if pol.denied {
			return twinResult{}, driver.Wrap(driver.CodeQueryInvalid, err,
				"query reads a relation other than its declared tables, writes, or calls a function it may not (AQ-1, AQ-2)")
		}
		if timedOut {
			// It would spin on D1 as long, or longer with rows: the time
			// bound, hit before anything is sent (AQ-6).
			return twinResult{}, driver.NewQueryLimitError(driver.BoundTime, runLimit.Milliseconds(),
				errors.New("the statement computes without table rows past the bound"), "d1http: authoritative query")
		}
		return twinResult{}, driver.Wrap(driver.CodeQueryInvalid, err, "query is not a valid query of its declared tables (AQ-1, AQ-2)")
	}
	var unused []string
	for _, t := range declared {
		if !pol.used[t] {
			unused = append(unused, t)
		}
	}
	if len(unused) > 0 {
		return twinResult{}, driver.Errorf(driver.CodeQueryInvalid, "query declares table %s but does not read it (AQ-2)",
			strings.Join(unused, ", "))
	}
	if len(res.columns) == 0 || len(res.columns) > d1sql.D1QueryMaxColumns {
		return twinResult{}, driver.Errorf(driver.CodeQueryInvalid, "query returns %d columns; want 1…%d (AQ-1)",
			len(res.columns), d1sql.D1QueryMaxColumns)
	}
	return res, nil
}

// run prepares q on the twin and reads its columns; the empty tables
// make its first step cheap.
func (tw *twin) run(ctx context.Context, q d1sql.D1Query) (twinResult, error) {
	rows, err := tw.conn.QueryContext(ctx, q.SQL, q.Args, "")
	if err != nil {
		return twinResult{}, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return twinResult{}, err
	}
	types, err := rows.ColumnTypes()
	if err != nil {
		return twinResult{}, err
	}
	res := twinResult{columns: cols, boolean: make([]bool, len(cols))}
	for i, ct := range types {
		res.boolean[i] = strings.EqualFold(ct.DatabaseTypeName(), "BOOLEAN")
	}
	return res, rows.Close()
}

// twinPolicy is the authorizer of one statement on the twin (AQ-1, AQ-2).
// It allows SELECT and recursive CTEs; reads of main."T" for a declared T
// (only the partition CTEs can spell main.), recording T as used;
// json_each and json_tree unless an application table has that name; a
// column-less reference (count(*)) only to a CTE or to main."T" of a
// declared T (a partition CTE's body); the functions of
// D1QueryFunctions and the -> and ->> operators. It denies everything
// else. The engine calls it from the query's goroutine while the
// statement is prepared, under twin.mu.
type twinPolicy struct {
	declared map[string]bool
	reserved map[string]bool
	used     map[string]bool
	denied   bool
}

func (p *twinPolicy) authorize(action sqlite.AuthorizerActionCode, arg1, arg2, db, _ string) sqlite.AuthorizerReturnCode {
	ok := false
	switch action {
	case sqlite.AuthSelect, sqlite.AuthRecursive:
		ok = true
	case sqlite.AuthFunction:
		f := strings.ToLower(arg2)
		ok = d1sql.D1QueryFunctions[f] || f == "->" || f == "->>"
	case sqlite.AuthRead:
		name := strings.ToLower(arg1)
		switch {
		case (name == "json_each" || name == "json_tree") && !p.reserved[name]:
			ok = db == "" || db == "main"
		case arg2 == "" && (db == "main" || db == "") && p.declared[arg1]:
			// A count(*) over a partition CTE the engine does not
			// flatten names the CTE (a host CTE of that name is a
			// duplicate, refused) and its body's main."T" without a
			// column.
			p.used[arg1] = true
			ok = true
		case arg2 == "":
			// A reference reading no column: only a CTE (no schema, not
			// an application, engine or infrastructure name).
			ok = db == "" && !p.reserved[name] && !d1sql.D1QueryRefusedName(name)
		case db == "main" && p.declared[arg1]:
			p.used[arg1] = true
			ok = true
		}
	}
	if ok {
		return sqlite.AuthorizerOK
	}
	p.denied = true
	return sqlite.AuthorizerDeny
}
