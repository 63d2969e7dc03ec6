package postgres

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/querylang"
)

// Authoritative queries (capability authoritative-query, AQ-1…AQ-5). The
// text is checked and rewritten by query_text.go; then, on one pool
// connection, in two round trips:
//
//  1. BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL the
//     output settings the decoder relies on; read the partition's
//     max_seq — the snapshot of the whole query starts here (AQ-4); and
//     EXPLAIN (VERBOSE, FORMAT JSON) the statement;
//  2. if the plan passes checkPlan, run the statement (text results) and
//     COMMIT.
//
// The plan check is the engine-enforced half of AQ-2: every relation the
// plan scans must be a declared table of the store's schema (the CTE
// bodies, which carry the partition predicate), every function scan one
// of json_each's, and no node may write or lock rows. The READ ONLY
// transaction is the engine-enforced half of AQ-1. Any failure rolls the
// transaction back; a connection that cannot roll back is closed.

var _ driver.AuthoritativeQueryConn = (*Conn)(nil)

func init() { infraDDL = append(infraDDL, sumBoolDDL...) }

// planFunctions are the set-returning functions a plan may scan: those
// json_each is rewritten to.
var planFunctions = map[string]bool{"jsonb_array_elements": true, "jsonb_each": true}

// AuthoritativeQuery runs q against partition's rows only and returns its
// rows with the partition's MaxCommitSeq of the same snapshot (AQ-1…AQ-5).
// Result values are int64 (every integer type; a numeric without a
// fraction), float64 (float4, float8, other numerics), string, []byte
// (bytea; empty is non-nil), bool and nil; a json value produced by
// json_each is decoded as SQLite does (numbers, strings, null; objects
// and arrays as JSON text); any other type comes back as its text.
// Errors: CodeUnknownTable for a declared table not in the ensured schema
// (SCH-8); CodeQueryInvalid for anything AQ-1/AQ-2 rule out (see
// query_text.go and the plan check) or an error the engine reports for
// the statement itself; CodeUnavailable when ctx ends or the server is
// unreachable.
func (c *Conn) AuthoritativeQuery(ctx context.Context, partition string, q driver.Query) (driver.QueryResult, error) {
	if err := c.check(); err != nil {
		return driver.QueryResult{}, err
	}
	declared, cols, err := c.queryTables(q.Tables)
	if err != nil {
		return driver.QueryResult{}, err
	}
	text, args, err := querylang.AdmitQueryArgs(q, querylang.QueryArgRules{RefuseNUL: true})
	if err != nil {
		return driver.QueryResult{}, err
	}
	schema, err := c.storeSchema(ctx)
	if err != nil {
		return driver.QueryResult{}, err
	}
	procs, err := c.functionNames(ctx)
	if err != nil {
		return driver.QueryResult{}, err
	}
	pq, err := rewriteQuery(text.SQL, args, schema, declared, cols, partition, procs)
	if err != nil {
		return driver.QueryResult{}, err
	}
	pc, err := c.pool.Acquire(ctx)
	if err != nil {
		return driver.QueryResult{}, c.mapErr(ctx, err, "postgres: authoritative query: acquire a connection")
	}
	defer pc.Release()
	res, err := c.runQuery(ctx, pc.Conn(), schema, declared, pq, partition, q.Limits.WithDefaults())
	if err != nil {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, rerr := pc.Exec(rctx, "ROLLBACK", pgx.QueryExecModeSimpleProtocol); rerr != nil {
			_ = pc.Conn().Close(rctx)
		}
		cancel()
		return driver.QueryResult{}, err
	}
	return res, nil
}

// queryTables checks the declared tables against the ensured schema and
// returns them sorted and distinct, with their application columns.
func (c *Conn) queryTables(tables []string) ([]string, map[string][]string, error) {
	names, defs, err := querylang.DeclaredTables(tables, c.state.Table)
	if err != nil {
		return nil, nil, err
	}
	cols := map[string][]string{}
	for i, name := range names {
		for _, col := range defs[i].def.Columns {
			cols[name] = append(cols[name], col.Name)
		}
	}
	return names, cols, nil
}

// storeSchema returns the schema the store's tables live in (the
// connection's current_schema), read once.
func (c *Conn) storeSchema(ctx context.Context) (string, error) {
	if s := c.schemaName.Load(); s != nil {
		return *s, nil
	}
	var s *string
	if err := c.queryRow(ctx, c.pool, "SELECT current_schema()", nil, &s); err != nil {
		return "", err
	}
	if s == nil {
		return "", driver.Errorf(driver.CodeUnavailable, "postgres: the connection has no current schema")
	}
	c.schemaName.Store(s)
	return *s, nil
}

// queryWorkMem is the work_mem of an authoritative query's transaction
// (AQ-6): PostgreSQL's default, whatever the server's setting, so a sort
// or hash of one query spills to disk beyond it instead of growing.
const queryWorkMem = "4MB"

// queryTempFileFactor × MaxResultBytes bounds the temporary files of an
// authoritative query (temp_file_limit, set only when the role may set it:
// a superuser, or one granted SET on it).
const queryTempFileFactor = 16

// queryJIT is the jit setting of an authoritative query's transaction
// (AQ-6): off, because LLVM compiles a plan's expressions, once its
// estimated cost passes jit_above_cost (a cross join of VALUES lists
// inflates it), without checking for interrupts — a 17 KB query of
// 1,000 terms compiled for 43 s under a 2 s statement_timeout, and ran in
// 0.4 s without JIT.
const queryJIT = "off"

// queryGrace is how long past Timeout the driver waits for the server's
// statement_timeout before it ends the statement itself (a server that
// cannot be reached, a network stall).
const queryGrace = time.Second

// functionNames returns the lower-case names of the server's functions
// (pg_proc), read once: a name written after "." that is one of them is
// field notation, t.f meaning f(t), unless a declared table has such a
// column (rewriteQuery).
func (c *Conn) functionNames(ctx context.Context) (map[string]bool, error) {
	if m := c.procNames.Load(); m != nil {
		return *m, nil
	}
	rows, err := c.pool.Query(ctx, "SELECT DISTINCT lower(proname) FROM pg_catalog.pg_proc")
	if err != nil {
		return nil, c.mapErr(ctx, err, "postgres: authoritative query: list functions")
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, c.mapErr(ctx, err, "postgres: authoritative query: list functions")
	}
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	c.procNames.Store(&m)
	return m, nil
}

// runQuery is steps 1–2 of the file comment on conn, under limits (AQ-6):
// statement_timeout at limits.Timeout, work_mem, jit off and (when
// allowed) temp_file_limit set locally in the read-only transaction;
// every round trip (the plan check, the statement) runs on a context
// ending queryGrace after the timeout, the statement read with the
// connection refusing any message longer than the result bound,
// and its rows metered as they stream. A bound hit ends the statement at
// once (the context is cancelled rather than the rest read and dropped);
// the caller then rolls back or closes the connection.
func (c *Conn) runQuery(ctx context.Context, conn *pgx.Conn, schema string, declared []string, pq pgQuery, partition string,
	limits driver.QueryLimits) (driver.QueryResult, error) {
	const what = "postgres: authoritative query"
	var res driver.QueryResult
	var plan []byte
	// One deadline for every round trip: the EXPLAIN below plans the
	// statement, and a planner that does not check for interrupts must
	// not hold the call past it either.
	qctx, cancel := context.WithTimeout(ctx, limits.Timeout+queryGrace)
	defer cancel()
	b := &pgx.Batch{}
	b.Queue("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
	b.Queue("SET LOCAL extra_float_digits = 3")
	b.Queue("SET LOCAL bytea_output = 'hex'")
	b.Queue("SET LOCAL standard_conforming_strings = on")
	b.Queue("SELECT set_config('statement_timeout', $1, true), set_config('work_mem', $2, true), set_config('jit', $3, true)",
		strconv.FormatInt(limits.TimeoutMillis(), 10), queryWorkMem, queryJIT)
	b.Queue(`SELECT set_config('temp_file_limit', $1, true) WHERE current_setting('is_superuser') = 'on'`,
		strconv.FormatInt(limits.MaxResultBytes*queryTempFileFactor/1024, 10))
	b.Queue(`SELECT coalesce((SELECT max_seq FROM _sync_partitions WHERE partition = $1), 0)`, partition).
		QueryRow(func(r pgx.Row) error { return r.Scan(&res.MaxCommitSeq) })
	b.Queue("EXPLAIN (VERBOSE, FORMAT JSON) "+pq.sql, pq.args...).
		QueryRow(func(r pgx.Row) error { return r.Scan(&plan) })
	if err := conn.SendBatch(qctx, b).Close(); err != nil {
		return res, rowsErr(ctx, qctx, limits, err)
	}
	used, err := checkPlan(plan, schema, declared)
	if err != nil {
		return res, err
	}
	for _, t := range declared {
		if !used[t] {
			return res, queryInvalid("query declares table %s but does not read it (AQ-2)", t)
		}
	}
	// The result's columns, so the server can check every string and
	// bytea value against MaxValueBytes before sending it (valueCheckSQL).
	desc, err := conn.PgConn().Prepare(qctx, "", pq.sql, nil)
	if err != nil {
		return res, rowsErr(ctx, qctx, limits, err)
	}
	oids := make([]uint32, len(desc.Fields))
	for i, f := range desc.Fields {
		oids[i] = f.DataTypeOID
	}
	stmt := valueCheckSQL(pq.sql, oids, len(pq.args)+1)
	args := append([]any{pgx.QueryResultFormats{pgx.TextFormatCode}}, pq.args...)
	if stmt != pq.sql {
		args = append(args, limits.MaxValueBytes)
	}
	fe := conn.PgConn().Frontend()
	fe.SetMaxBodyLen(int(min(limits.MaxResultBytes+64<<10, 0x3fffffff-1)))
	defer fe.SetMaxBodyLen(0x3fffffff - 1) // pgproto3's default
	rows, err := conn.Query(qctx, stmt, args...)
	if err != nil {
		return res, rowsErr(ctx, qctx, limits, err)
	}
	stop := func(err error) (driver.QueryResult, error) {
		cancel() // end the statement now: Close would read the rest
		rows.Close()
		return res, err
	}
	meter := limits.Meter(what)
	fields := desc.Fields // the host's names and table columns, not the wrapper's (as many)
	res.Columns = make([]string, len(fields))
	for i, f := range fields {
		res.Columns[i] = f.Name
	}
	for rows.Next() {
		if err := meter.Row(); err != nil {
			return stop(err)
		}
		raw := rows.RawValues()
		row := make([]any, len(raw))
		for i, v := range raw {
			if int64(len(v)) > limits.MaxValueBytes+2 && fields[i].DataTypeOID != pgtype.ByteaOID ||
				int64(len(v)) > 2*limits.MaxValueBytes+2 {
				// Longer than any value within the bound decodes to (bytea: \x and two digits a byte).
				return stop(driver.NewQueryLimitError(driver.BoundValueBytes, limits.MaxValueBytes, nil, what))
			}
			if row[i], err = decodeText(fields[i].DataTypeOID, v); err != nil {
				return stop(err)
			}
			if bv, ok := row[i].(bool); ok && fields[i].TableOID == 0 {
				// Not a column of a table: SQLite's predicates are integers 1/0;
				// only a column declared BOOLEAN reads as bool (AQ-5).
				row[i] = int64(0)
				if bv {
					row[i] = int64(1)
				}
			}
			if err := meter.ValueOf(row[i]); err != nil {
				return stop(err)
			}
		}
		res.Rows = append(res.Rows, row)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return res, rowsErr(ctx, qctx, limits, err)
	}
	if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
		return res, c.mapErr(ctx, err, "postgres: authoritative query")
	}
	return res, nil
}

// rowsErr classifies an error of running or reading the host's
// statement on qctx (see queryErr): a message over the connection's body
// limit is the bytes bound.
func rowsErr(ctx, qctx context.Context, limits driver.QueryLimits, err error) error {
	var tooLong *pgproto3.ExceededMaxBodyLenErr
	if errors.As(err, &tooLong) {
		return driver.NewQueryLimitError(driver.BoundBytes, limits.MaxResultBytes, nil, "postgres: authoritative query")
	}
	return queryErr(ctx, errors.Is(qctx.Err(), context.DeadlineExceeded), limits, err)
}

// planNode is the part of an EXPLAIN (FORMAT JSON) node checkPlan reads.
type planNode struct {
	NodeType string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Schema   string     `json:"Schema"`
	Function string     `json:"Function Name"`
	Plans    []planNode `json:"Plans"`
}

// checkPlan walks a plan and returns the declared tables it scans; a scan
// of any other relation, a function scan outside planFunctions, a write
// (ModifyTable) or a row lock (LockRows) → CodeQueryInvalid (AQ-1, AQ-2).
func checkPlan(text []byte, schema string, declared []string) (map[string]bool, error) {
	var top []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(text, &top); err != nil || len(top) != 1 {
		return nil, driver.Errorf(driver.CodeInternal, "postgres: authoritative query: unreadable plan")
	}
	ok := map[string]bool{}
	for _, t := range declared {
		ok[t] = true
	}
	used := map[string]bool{}
	var walk func(n planNode) error
	walk = func(n planNode) error {
		switch {
		case n.NodeType == "ModifyTable" || n.NodeType == "LockRows":
			return queryInvalid("query writes or locks rows (AQ-1)")
		case n.Relation != "":
			if n.Schema != schema || !ok[n.Relation] {
				return queryInvalid("query reads a relation other than its declared tables (AQ-2)")
			}
			used[n.Relation] = true
		case n.Function != "" && !planFunctions[n.Function]:
			return queryInvalid("query calls a set-returning function it may not (AQ-1)")
		}
		for _, ch := range n.Plans {
			if err := walk(ch); err != nil {
				return err
			}
		}
		return nil
	}
	return used, walk(top[0].Plan)
}

// decodeText converts one text-format result value of type oid (nil raw
// = NULL) to a query result value (see AuthoritativeQuery).
func decodeText(oid uint32, raw []byte) (any, error) {
	if raw == nil {
		return nil, nil
	}
	s := string(raw)
	bad := func() (any, error) {
		return nil, driver.Errorf(driver.CodeInternal, "postgres: authoritative query: unreadable value of type %d", oid)
	}
	switch oid {
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID:
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return bad()
		}
		return v, nil
	case pgtype.Float4OID, pgtype.Float8OID:
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return bad()
		}
		return v, nil
	case pgtype.NumericOID:
		if v, err := strconv.ParseInt(s, 10, 64); err == nil {
			return v, nil
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return bad()
		}
		return v, nil
	case pgtype.BoolOID:
		return s == "t", nil
	case pgtype.ByteaOID:
		if !strings.HasPrefix(s, `\x`) {
			return bad()
		}
		b, err := hex.DecodeString(s[2:])
		if err != nil {
			return bad()
		}
		if b == nil {
			b = []byte{}
		}
		return b, nil
	case pgtype.JSONOID, pgtype.JSONBOID:
		return decodeJSONScalar(raw)
	}
	return s, nil
}

// decodeJSONScalar decodes a json value as SQLite's json_each reports
// it: an integer → int64, another number → float64, a string → string,
// true/false → int64 1/0, null → nil, an object or array → its text.
func decodeJSONScalar(raw []byte) (any, error) {
	d := json.NewDecoder(strings.NewReader(string(raw)))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return string(raw), nil
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case bool:
		if x {
			return int64(1), nil
		}
		return int64(0), nil
	case string:
		return x, nil
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
		f, err := x.Float64()
		if err != nil {
			return string(raw), nil
		}
		return f, nil
	}
	return string(raw), nil
}

// queryErr classifies an error of the host's statement (ctx is the
// caller's; expired says the driver's own deadline for the statement
// passed): a bound hit → CodeQueryLimit (AQ-6) — statement_timeout
// (57014) or that deadline → "time", class 53 (out of memory, disk full,
// temp_file_limit) and class XX (an internal error such as an allocation
// over 1 GB) → "memory", 54000 (a value over PostgreSQL's own size
// limits) → "value_bytes"; an ended context or a lost connection →
// CodeUnavailable; an error of the statement's own making (syntax,
// unknown relation, column or function, types, data, read-only
// violation, other limits) → CodeQueryInvalid; else mapErr. Only the
// SQLSTATE is kept: the server's text may quote a value (V-10).
func queryErr(ctx context.Context, expired bool, limits driver.QueryLimits, err error) error {
	const what = "postgres: authoritative query"
	var de *driver.Error
	if errors.As(err, &de) {
		return err
	}
	if ctx.Err() != nil {
		return mapErr(ctx, err, what)
	}
	var pe *pgconn.PgError
	if expired && !errors.As(err, &pe) {
		return driver.NewQueryLimitError(driver.BoundTime, limits.TimeoutMillis(), err, what)
	}
	if errors.As(err, &pe) && len(pe.Code) == 5 {
		state := errors.New("SQLSTATE " + pe.Code)
		switch {
		case pe.Code == "57014":
			return driver.NewQueryLimitError(driver.BoundTime, limits.TimeoutMillis(), state, what)
		case pe.Code == "54000":
			return driver.NewQueryLimitError(driver.BoundValueBytes, limits.MaxValueBytes, state, what)
		case pe.Code[:2] == "53" || pe.Code[:2] == "XX":
			return driver.NewQueryLimitError(driver.BoundMemory, 0, state, what)
		}
		switch pe.Code[:2] {
		case "42", "22", "21", "0A", "2F", "54", "3F":
			return driver.Wrap(driver.CodeQueryInvalid, errors.New("SQLSTATE "+pe.Code),
				"query is not a valid query of its declared tables (AQ-1, AQ-2)")
		}
		if pe.Code == "25006" {
			return driver.Wrap(driver.CodeQueryInvalid, errors.New("SQLSTATE "+pe.Code), "query writes (AQ-1)")
		}
	}
	return mapErr(ctx, err, "postgres: authoritative query")
}

// QuerySlots implements driver.QuerySlotsConn: authoritative queries run
// on the Conn's one pool, beside pushes and pulls, so sync.Store runs at
// most half of pool_max_conns of them at once (at least 1), and the
// other half stays for everything else (AQ-7).
func (c *Conn) QuerySlots() int { return max(1, int(c.pool.Config().MaxConns)/2) }
