package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/go-sql-driver/mysql"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/querylang"
	"github.com/syncstore/syncstore/internal/sqlrows"
)

// Authoritative queries (capability authoritative-query, AQ-1…AQ-5). The
// text is checked and rewritten by query_text.go; then, on a connection
// of a pool of its own, in one transaction:
//
//  1. START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY (the pool's
//     isolation is REPEATABLE READ, so one read view serves the whole
//     transaction): nothing can be written (AQ-1);
//  2. one statement reads the partition's max_seq in that view (AQ-4) and
//     the names of the databases the server shows; a qualifier of the
//     query naming one of them → CodeQueryInvalid (AQ-2);
//  3. the rewritten statement runs (binary protocol: floats bit-exact)
//     and is read to the end; COMMIT.
//
// The pool's connections have no default database, so an unqualified
// name that is not one of the query's CTEs is an engine error — never an
// infrastructure table, an undeclared application table or a catalog —
// and the session runs with sql_mode ANSI_QUOTES, PIPES_AS_CONCAT and
// NO_BACKSLASH_ESCAPES (the SQLite lexical rules the rewrite relies on),
// a statement time limit, and div_precision_increment 30 (avg and / keep
// a double's precision). Any failure closes the connection.

var _ driver.AuthoritativeQueryConn = (*Conn)(nil)

// queryStatementTimeout is the query pool's session default for the
// statement time limit (max_statement_time on MariaDB, max_execution_time
// on MySQL); runQuery sets each query's own Timeout (AQ-6) before it runs.
const queryStatementTimeout = 60 * time.Second

// queryConns bounds the open connections of the query pool.
const queryConns = 8

// querySQLMode is the sql_mode of the query pool.
const querySQLMode = coreSQLMode + ",ANSI_QUOTES,PIPES_AS_CONCAT,NO_BACKSLASH_ESCAPES"

// queryPool is the lazily opened pool of query connections of a Conn.
type queryPool struct {
	sqlrows.LazyDB
}

// get returns the pool, opening it the first time.
func (p *queryPool) get(c *Conn) (*sql.DB, error) {
	return p.Get(func() (*sql.DB, error) { return openQueryDB(c) }, errClosed)
}

// openQueryDB opens the query pool of c: its own connections, with the
// session settings of the file comment.
func openQueryDB(c *Conn) (*sql.DB, error) {
	cfg := c.cfg.Clone()
	cfg.DBName = "" // no default database: see the file comment
	params := map[string]string{}
	for k, v := range cfg.Params {
		params[k] = v
	}
	params["sql_mode"] = "'" + querySQLMode + "'"
	params["div_precision_increment"] = "30"
	// A recursive CTE runs to its end as on SQLite, bounded by the
	// statement time limit only: MariaDB's max_recursive_iterations
	// (1000 by default) would cut it short silently — a wrong answer
	// (AQ-5) — and MySQL's cte_max_recursion_depth fails it.
	if c.maria {
		params["max_recursive_iterations"] = "4294967295"
		params["tx_isolation"] = "'REPEATABLE-READ'"
		params["max_statement_time"] = strconv.Itoa(int(queryStatementTimeout / time.Second))
	} else {
		params["cte_max_recursion_depth"] = "4294967295"
		params["transaction_isolation"] = "'REPEATABLE-READ'"
		params["max_execution_time"] = strconv.Itoa(int(queryStatementTimeout / time.Millisecond))
	}
	cfg.Params = params
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, driver.Errorf(driver.CodeInvalidArgument, "mysql: malformed DSN")
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(queryConns)
	db.SetMaxIdleConns(queryConns)
	db.SetConnMaxIdleTime(time.Minute)
	return db, nil
}

// AuthoritativeQuery runs q against partition's rows only and returns its
// rows with the partition's MaxCommitSeq of the same snapshot (AQ-1…AQ-5).
// Result values are int64 (integer types; a DECIMAL without a fraction,
// e.g. SUM of integers), float64 (DOUBLE, FLOAT, other DECIMALs), string
// (text types, JSON), []byte (binary types; empty is non-nil), bool
// (TINYINT: boolean columns) and nil. -0.0 of a float column survives a
// bare reference to the column in the top-level select list or a `*`
// (see docs/mysql.md). Errors: CodeUnknownTable for a declared table not
// in the ensured schema (SCH-8); CodeQueryInvalid for anything AQ-1/AQ-2
// rule out (query_text.go) or an error the engine reports for the
// statement itself; CodeQueryLimit (bound time) when the statement time
// limit is reached or a replace()/instr() call is priced past
// guardCostBudget (query_guard.go, AQ-6); CodeUnavailable when ctx ends
// or the server is unreachable.
func (c *Conn) AuthoritativeQuery(ctx context.Context, partition string, q driver.Query) (driver.QueryResult, error) {
	if err := c.check(); err != nil {
		return driver.QueryResult{}, err
	}
	declared, err := c.queryTables(q.Tables)
	if err != nil {
		return driver.QueryResult{}, err
	}
	text, args, err := querylang.AdmitQueryArgs(q, mysqlArgRules)
	if err != nil {
		return driver.QueryResult{}, err
	}
	mq, err := rewriteQuery(text.SQL, args, c.cfg.DBName, c.coll, declared, partition)
	if err != nil {
		return driver.QueryResult{}, err
	}
	db, err := c.aq.get(c)
	if err != nil {
		return driver.QueryResult{}, err
	}
	acquire := func(err error) error {
		return c.mapErr(ctx, err, "mysql: authoritative query: acquire a connection")
	}
	return sqlrows.OnConn(ctx, db, acquire, func(conn *sql.Conn) (driver.QueryResult, error) {
		return c.runQuery(ctx, conn, mq, partition, q.Limits.WithDefaults())
	})
}

// queryTables checks the declared tables against the ensured schema and
// returns them sorted by name and distinct.
func (c *Conn) queryTables(tables []string) ([]queryTable, error) {
	names, defs, err := querylang.DeclaredTables(tables, c.state.Table)
	if err != nil {
		return nil, err
	}
	out := make([]queryTable, len(names))
	for i, name := range names {
		t := queryTable{name: name, cols: defs[i].def.Columns, floats: map[string]string{}}
		for _, col := range defs[i].def.Columns {
			if col.Type == driver.TypeFloat {
				t.floats[strings.ToLower(col.Name)] = col.Name
			}
		}
		out[i] = t
	}
	return out, nil
}

// mysqlArgRules: MySQL has no boolean type (TINYINT 1/0, as SQLite), and
// a NUL byte in a bind value is refused as in the stored rows (V-3).
var mysqlArgRules = querylang.QueryArgRules{BoolAsInt: true, RefuseNUL: true}

// systemSchemas are refused as qualifiers even if the server hides them.
var systemSchemas = wordSet(`information_schema mysql performance_schema sys main temp`)

// queryGrace is how long past Timeout the driver waits for the server's
// statement time limit before it ends the statement itself.
const queryGrace = time.Second

// runQuery is steps 1–3 of the file comment on conn, under limits (AQ-6):
// the session's statement time limit (max_statement_time on MariaDB,
// max_execution_time on MySQL) is limits.Timeout; the host's statement is
// read on a context ending queryGrace after it, with its rows metered as
// they stream. When a bound is hit, or the context ends, while the
// statement runs, the statement is ended at once — the connection is
// dropped rather than the rest read — and KILL QUERY stops its server
// thread.
func (c *Conn) runQuery(ctx context.Context, conn *sql.Conn, mq myQuery, partition string, limits driver.QueryLimits) (driver.QueryResult, error) {
	const what = "mysql: authoritative query"
	var res driver.QueryResult
	setLimit := "SET SESSION max_execution_time = " + strconv.FormatInt(limits.TimeoutMillis(), 10)
	if c.maria {
		setLimit = "SET SESSION max_statement_time = " + strconv.FormatFloat(float64(limits.TimeoutMillis())/1000, 'f', 3, 64)
	}
	setLimit += ", " + guardFlag + " = 0"
	if _, err := conn.ExecContext(ctx, setLimit); err != nil {
		return res, c.mapErr(ctx, err, what)
	}
	if _, err := conn.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"); err != nil {
		return res, c.mapErr(ctx, err, what)
	}
	var schemas sql.NullString
	var thread int64
	err := conn.QueryRowContext(ctx, "SELECT COALESCE((SELECT max_seq FROM "+quoteIdent(c.cfg.DBName)+
		".`_sync_partitions` WHERE p = ?), 0), (SELECT JSON_ARRAYAGG(schema_name) FROM information_schema.schemata), CONNECTION_ID()",
		partition).Scan(&res.MaxCommitSeq, &schemas, &thread)
	if err != nil {
		return res, c.mapErr(ctx, err, what)
	}
	var names []string
	if schemas.Valid {
		if err := json.Unmarshal([]byte(schemas.String), &names); err != nil {
			return res, driver.Errorf(driver.CodeInternal, "%s: unreadable list of databases", what)
		}
	}
	// Both sides folded in Go: the server's LOWER() folds fewer letters
	// than strings.ToLower (it keeps ẞ), so a database named with one would
	// otherwise pass the check.
	known := map[string]bool{foldName(c.cfg.DBName): true}
	for _, n := range names {
		known[foldName(n)] = true
	}
	for _, qual := range mq.qualifiers {
		if known[foldName(qual)] || systemSchemas[qual] {
			return res, queryInvalid("query qualifies a name with a database: tables are read by their names alone (AQ-2)")
		}
	}
	qctx, cancel := context.WithTimeout(ctx, limits.Timeout+queryGrace)
	defer cancel()
	cols, rows, err := readRows(qctx, cancel, conn, mq.sql, mq.args, limits.Meter(what))
	if err != nil && mq.plain != "" && errNumber(err) == erBadField && strings.Contains(err.Error(), nzColumnPrefix) {
		// A bare name of the select list was not a declared table's column.
		cols, rows, err = readRows(qctx, cancel, conn, mq.plain, mq.args, limits.Meter(what))
	}
	if err != nil {
		if qctx.Err() != nil {
			c.killQuery(thread)
		}
		if mq.guards > 0 && errNumber(err) == erSubqueryNoOneRow && ctx.Err() == nil {
			// A guard's or a scalar sub-query's: guardFlag tells.
			var flag sql.NullInt64
			if ferr := conn.QueryRowContext(ctx, "SELECT "+guardFlag).Scan(&flag); ferr != nil {
				return res, c.mapErr(ctx, ferr, what)
			}
			if flag.Int64 == 1 {
				return res, driver.NewQueryLimitError(driver.BoundTime, limits.TimeoutMillis(),
					errors.New("a replace() or instr() call priced past the driver's cost budget"), what)
			}
		}
		return res, queryErr(ctx, errors.Is(qctx.Err(), context.DeadlineExceeded), limits, err)
	}
	res.Columns, res.Rows = cols, rows
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return res, c.mapErr(ctx, err, what)
	}
	return res, nil
}

// foldName returns name with every letter replaced by the smallest letter
// of its Unicode case-folding orbit (k, K and the Kelvin sign alike): two
// names equal under any case mapping an engine may apply fold equally.
func foldName(name string) string {
	return strings.Map(func(r rune) rune {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		return m
	}, name)
}

// erBadField is ER_BAD_FIELD_ERROR: an unknown column.
const erBadField = 1054

// killQuery stops the statement of server thread id (KILL QUERY), on the
// main pool and a short detached context: the query connection was
// dropped, but the server may keep running its statement until it next
// writes to it. Best effort: the statement time limit stops it anyway.
func (c *Conn) killQuery(id int64) {
	if id <= 0 {
		return
	}
	kctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = c.db.ExecContext(kctx, "KILL QUERY "+strconv.FormatInt(id, 10))
}

// readRows runs stmt on ctx and decodes its rows (see AuthoritativeQuery),
// folding the hidden -0.0 columns into the columns they describe; each
// row and value is counted by m before it is kept (AQ-6). At a bound it
// calls cancel before closing the rows, so the statement is dropped with
// the connection instead of read to its end.
func readRows(ctx context.Context, cancel context.CancelFunc, conn *sql.Conn, stmt string, args []any, m *driver.QueryMeter) (_ []string, _ [][]any, err error) {
	rows, err := conn.QueryContext(ctx, stmt, args...)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		var me *mysql.MySQLError
		if err != nil && !errors.As(err, &me) {
			// A server error ended the statement and leaves the
			// connection usable (runQuery may read guardFlag on it).
			cancel()
		}
		rows.Close()
	}()
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, nil, err
	}
	// target[i] is the visible column a hidden column i describes (-1: none);
	// visible[i] is the output position of a visible column i (-1: hidden).
	target := make([]int, len(types))
	visible := make([]int, len(types))
	var cols []string
	for i, ct := range types {
		name := ct.Name()
		target[i], visible[i] = -1, -1
		switch {
		case strings.HasPrefix(name, nzCompanionPrefix):
			if n, err := strconv.Atoi(name[len(nzCompanionPrefix):]); err == nil {
				target[i] = n
			}
		case strings.HasPrefix(name, nzColumnPrefix):
			target[i] = len(cols) - 1
		default:
			visible[i] = len(cols)
			cols = append(cols, name)
		}
	}
	var out [][]any
	vals := make([]any, len(types))
	ptrs := make([]any, len(types))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := m.Row(); err != nil {
			return nil, nil, err
		}
		for i := range vals {
			vals[i] = nil
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		row := make([]any, len(cols))
		for i, v := range vals {
			if visible[i] < 0 {
				continue
			}
			if row[visible[i]], err = decodeQueryValue(types[i].DatabaseTypeName(), v); err != nil {
				return nil, nil, err
			}
			if err := m.ValueOf(row[visible[i]]); err != nil {
				return nil, nil, err
			}
		}
		for i, v := range vals {
			if visible[i] >= 0 || target[i] < 0 || target[i] >= len(row) {
				continue
			}
			if flag, ok := v.(int64); ok && flag != 0 {
				if f, ok := row[target[i]].(float64); ok && f == 0 {
					row[target[i]] = math.Copysign(0, -1)
				}
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	return cols, out, nil
}

// decodeQueryValue converts one value scanned through the binary
// protocol, of the engine type ty, to a query result value.
func decodeQueryValue(ty string, v any) (any, error) {
	bad := func() (any, error) {
		return nil, driver.Errorf(driver.CodeInternal, "mysql: authoritative query: unreadable value of type %s", ty)
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case int64:
		if ty == "TINYINT" {
			return x != 0, nil // boolean columns are TINYINT; nothing else is
		}
		return x, nil
	case uint64:
		return int64(x), nil // bit operations are unsigned in MySQL; SQLite's are signed
	case float64:
		return x, nil
	case float32:
		return float64(x), nil
	case []byte:
		switch ty {
		case "DECIMAL":
			if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
				return i, nil
			}
			f, err := strconv.ParseFloat(string(x), 64)
			if err != nil {
				return bad()
			}
			return f, nil
		case "BINARY", "VARBINARY", "BLOB", "TINYBLOB", "MEDIUMBLOB", "LONGBLOB", "BIT", "GEOMETRY":
			b := make([]byte, len(x))
			copy(b, x)
			return b, nil
		case "TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "YEAR":
			i, err := strconv.ParseInt(string(x), 10, 64)
			if err != nil {
				return bad()
			}
			if ty == "TINYINT" {
				return i != 0, nil
			}
			return i, nil
		case "UNSIGNED BIGINT", "UNSIGNED INT", "UNSIGNED TINYINT", "UNSIGNED SMALLINT", "UNSIGNED MEDIUMINT":
			u, err := strconv.ParseUint(string(x), 10, 64)
			if err != nil {
				return bad()
			}
			return int64(u), nil
		case "DOUBLE", "FLOAT":
			f, err := strconv.ParseFloat(string(x), 64)
			if err != nil {
				return bad()
			}
			return f, nil
		}
		return string(x), nil
	case string:
		return x, nil
	}
	return bad()
}

// queryErr classifies an error of the host's statement (ctx is the
// caller's; expired says the driver's own deadline for the statement
// passed): the statement time limit, an interruption or that deadline
// while ctx lives → CodeQueryLimit "time"; the server out of memory or
// its temporary table full → CodeQueryLimit "memory"; a built value too
// long for its column (1406) → CodeQueryLimit "value_bytes" (AQ-6); an ended
// context or a lost connection → CodeUnavailable; any other server
// error (syntax, unknown table, column or function, no database
// selected, a duplicate CTE name, a bad value…) is of the statement's
// own making → CodeQueryInvalid. Only the error number is kept: the
// server's message may quote a value (V-10).
func queryErr(ctx context.Context, expired bool, limits driver.QueryLimits, err error) error {
	const what = "mysql: authoritative query"
	var de *driver.Error
	if errors.As(err, &de) {
		return err
	}
	if ctx.Err() != nil {
		return mapErr(ctx, err, what)
	}
	n := errNumber(err)
	cause := errors.New("server error " + strconv.Itoa(int(n)))
	switch n {
	case 0:
		if expired {
			return driver.NewQueryLimitError(driver.BoundTime, limits.TimeoutMillis(), nil, what)
		}
	case erLockWaitTimeout, erLockDeadlock, erLockAborted:
	case erQueryInterrupt, erStatementTimeout, erMySQLExecutionTimeout:
		return driver.NewQueryLimitError(driver.BoundTime, limits.TimeoutMillis(), cause, what)
	case erOutOfMemory, erOutOfSortMemory, erRecordFileFull:
		return driver.NewQueryLimitError(driver.BoundMemory, 0, cause, what)
	case erDataTooLong:
		// A built value longer than its column: a recursive CTE's string
		// outgrowing the type its first member gave it.
		return driver.NewQueryLimitError(driver.BoundValueBytes, limits.WithDefaults().MaxValueBytes, cause, what)
	default:
		return driver.Wrap(driver.CodeQueryInvalid, errors.New("server error "+strconv.Itoa(int(n))),
			"query is not a valid query of its declared tables (AQ-1, AQ-2)")
	}
	return mapErr(ctx, err, "mysql: authoritative query")
}

// Time-limit errors: MariaDB's max_statement_time, MySQL's
// max_execution_time; resource errors of a statement.
const (
	erOutOfMemory           = 1037 // ER_OUTOFMEMORY
	erOutOfSortMemory       = 1038 // ER_OUT_OF_SORTMEMORY
	erRecordFileFull        = 1114 // ER_RECORD_FILE_FULL: a temporary table reached its size limit
	erStatementTimeout      = 1969
	erMySQLExecutionTimeout = 3024
)
