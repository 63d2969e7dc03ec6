package sqlite

import (
	"strings"
	gosync "sync"

	"github.com/syncstore/syncstore/internal/sqlitesql"
	"modernc.org/sqlite"
)

// queryPolicy is the engine-enforced half of an authoritative query
// (AQ-1, AQ-2): the SQLite authorizer installed on the query connection
// while — and only while — the host's statement is prepared and run. The
// engine asks it about every relation, column and function the statement
// touches, after name resolution, so no spelling (quotes, case, comments,
// aliases) changes what it sees.
//
// The engine reports a column read as (table, column, schema, context),
// where context is the name under which the enclosing FROM item was
// written — a view's name, but also a CTE's or a sub-query's, so the host
// can choose it. The policy therefore never trusts the context alone: it
// relies on CheckQueryText having refused every schema-qualified name, so
// that an application table's name always resolves to its partition view
// in the temp schema, and a read of main."T" can only be the view's body.
//
// It allows:
//   - SELECT (and recursive CTEs);
//   - reading a column of temp."T" for a declared table T (the partition
//     view), recording T as used;
//   - reading a column of main."T" for a declared T inside a FROM item
//     (context ≠ ""): the view's body, recording T as used;
//   - reading the view's partition parameter (temp._sync_q) inside a FROM
//     item: at most the name of the partition being queried;
//   - json_each and json_tree (table-valued functions over the query's
//     own data), unless an application table has that name;
//   - a declared T, or main."T" of a declared T inside a FROM item,
//     referenced without any column (a count(*) over an unflattened view);
//   - a table referenced without any column (count(*)) only when it is a
//     CTE: no application or infrastructure table, engine table
//     (sqlite_*, pragma_*) or virtual table module;
//   - functions of queryFunctions.
//
// Everything else is denied: any other relation (infrastructure tables,
// sqlite_schema, pragma functions, dbstat, undeclared tables), every
// write, DDL, PRAGMA, ATTACH, transaction control, and functions with side
// effects or engine-specific output.
type queryPolicy struct {
	declared map[string]bool // the query's declared tables
	reserved map[string]bool // lower-cased names a column-less read may not target

	mu     gosync.Mutex
	used   map[string]bool
	denied bool
}

// newQueryPolicy returns the policy of a query declaring declared over a
// store whose application tables are appTables; modules are the engine's
// virtual table modules.
func newQueryPolicy(declared, appTables, modules []string) *queryPolicy {
	p := &queryPolicy{declared: map[string]bool{}, reserved: map[string]bool{}, used: map[string]bool{}}
	for _, t := range declared {
		p.declared[t] = true
	}
	for _, names := range [][]string{appTables, modules} {
		for _, n := range names {
			p.reserved[strings.ToLower(n)] = true
		}
	}
	return p
}

// authorize is the sqlite.AuthorizerFn: arg1/arg2 per action, db the
// schema name ("main", "temp", "" when the host wrote none and no column
// is read), ctx the FROM item whose body is being compiled.
func (p *queryPolicy) authorize(action sqlite.AuthorizerActionCode, arg1, arg2, db, ctx string) sqlite.AuthorizerReturnCode {
	ok := false
	switch action {
	case sqlite.AuthSelect, sqlite.AuthRecursive:
		ok = true
	case sqlite.AuthFunction:
		ok = queryFunctions[strings.ToLower(arg2)]
	case sqlite.AuthRead:
		if arg2 == "" {
			ok = p.readTable(arg1, db, ctx)
		} else {
			ok = p.readColumn(arg1, db, ctx)
		}
	}
	if ok {
		return sqlite.AuthorizerOK
	}
	p.mu.Lock()
	p.denied = true
	p.mu.Unlock()
	return sqlite.AuthorizerDeny
}

// readColumn decides a read of a column of table in schema db.
func (p *queryPolicy) readColumn(table, db, ctx string) bool {
	switch {
	case db == "temp" && p.declared[table]:
		p.use(table)
		return true
	case db == "main" && p.declared[table] && ctx != "":
		p.use(table)
		return true
	case db == "temp" && table == sqlitesql.QueryStateTable && ctx != "":
		return true
	case db == "main" && isJSONTable(table) && !p.reserved[table]:
		return true
	}
	return false
}

// readTable decides a reference to table that reads none of its columns.
// A declared T named by the host (db "") is its partition view, and
// main."T" of a declared T inside a FROM item is the view's body, as in
// readColumn: a count(*) over a view the engine does not flatten (a
// statement with subqueries, see runQuery) reads them so.
func (p *queryPolicy) readTable(table, db, ctx string) bool {
	if (db == "main" && ctx != "" || db == "") && p.declared[table] {
		p.use(table)
		return true
	}
	name := strings.ToLower(table)
	if isJSONTable(name) {
		return (db == "" || db == "main") && !p.reserved[name]
	}
	if db != "" || p.reserved[name] {
		return false
	}
	for _, prefix := range []string{"sqlite_", "pragma_", "_sync"} {
		if strings.HasPrefix(name, prefix) {
			return false
		}
	}
	return true // a CTE
}

func isJSONTable(name string) bool { return name == "json_each" || name == "json_tree" }

func (p *queryPolicy) use(table string) {
	p.mu.Lock()
	p.used[table] = true
	p.mu.Unlock()
}

// unused returns the declared tables the statement never read (AQ-2:
// declaring a table the SQL does not use is an error).
func (p *queryPolicy) unused() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for t := range p.declared {
		if !p.used[t] {
			out = append(out, t)
		}
	}
	return out
}

func (p *queryPolicy) wasDenied() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.denied
}

// queryFunctions are the functions a query may call (shared with the
// SQLite family: sqlitesql.QueryFunctions).
var queryFunctions = sqlitesql.QueryFunctions
