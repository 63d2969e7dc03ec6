package d1http

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/internal/querylang"
)

// Authoritative queries (capability authoritative-query, AQ-1…AQ-5). D1's
// HTTP API has no authorizer, no roles, no read-only mode and no temp
// schema, so a query goes through three layers before its rows come back:
//
//  1. the text: querylang's CheckQueryText, then RewriteD1Query, which
//     refuses infrastructure, catalog and D1-internal names, statements
//     other than SELECT (also after WITH, also RETURNING), strings used as
//     table names and calls outside the allow-list, and prepends one CTE
//     per declared table restricted to the partition (d1_query.go);
//  2. the schema twin (query_twin.go): the rewritten statement is prepared
//     in a local, empty SQLite copy of the schema under an authorizer that
//     allows reads of the declared tables only, through their CTEs; it
//     also gives the result's column names and declared types;
//  3. ONE read request to D1: the partition's max_seq, then the statement
//     wrapped by D1QueryWrap so every value comes back typed and exact
//     through JSON. A D1 batch is one transaction, so the seq and the rows
//     are of the same snapshot (AQ-4).
//
// Bind values travel in one JSON parameter and the partition in another:
// every statement binds 2 parameters, whatever the number of values
// (D1 allows 100).

var _ driver.AuthoritativeQueryConn = (*Conn)(nil)

// d1MaxStatementBytes is D1's limit on one statement's text.
const d1MaxStatementBytes = 100_000

// AuthoritativeQuery runs q against partition's rows only and returns its
// rows with the partition's MaxCommitSeq of the same snapshot (AQ-1…AQ-5).
// Values are int64, float64 (bit for bit), string, []byte (an empty blob
// is non-nil), bool (a column declared BOOLEAN: a boolean column, read
// directly or through sub-queries and CTEs, as drivers/sqlite decides) and
// nil. Errors: CodeUnknownTable for a declared table not in the ensured
// schema (SCH-8); CodeQueryInvalid for anything AQ-1/AQ-2 rule out (see
// the file comment), a bind value count that does not match, a statement
// D1 rejects, or a rewritten statement beyond D1's 100,000 bytes;
// CodeUnavailable when ctx ends or D1 cannot be reached.
func (c *Conn) AuthoritativeQuery(ctx context.Context, partition string, q driver.Query) (driver.QueryResult, error) {
	const what = "d1http: authoritative query"
	if err := c.check(); err != nil {
		return driver.QueryResult{}, err
	}
	declared, tables, err := c.queryTables(q.Tables)
	if err != nil {
		return driver.QueryResult{}, err
	}
	text, err := querylang.AdmitQuery(q)
	if err != nil {
		return driver.QueryResult{}, err
	}
	rq, err := d1sql.RewriteD1Query(text.SQL, q.Args, tables)
	if err != nil {
		return driver.QueryResult{}, err
	}
	tw, err := twinFor(ctx, c.state.Load())
	if err != nil {
		return driver.QueryResult{}, err
	}
	limits := q.Limits.WithDefaults()
	desc, err := tw.describe(ctx, rq, declared, limits)
	if err != nil {
		return driver.QueryResult{}, err
	}
	wrapped := d1sql.D1QueryWrap(rq.SQL, len(desc.columns), limits.MaxRows)
	if len(wrapped) > d1MaxStatementBytes {
		return driver.QueryResult{}, driver.Errorf(driver.CodeQueryInvalid,
			"query is %d bytes once rewritten; D1 takes at most %d per statement (AQ-1)", len(wrapped), d1MaxStatementBytes)
	}
	res, err := c.cl.readQuery(ctx, what, limits, st(d1sql.D1QueryMaxSeq, partition), st(wrapped, rq.Args, partition))
	if err != nil {
		var ae *attemptErr
		if errors.As(err, &ae) && ae.out == outRefused && ae.status != http.StatusUnauthorized && ae.status != http.StatusForbidden {
			return driver.QueryResult{}, refusedQuery(ae, limits)
		}
		if errors.As(err, &ae) {
			return driver.QueryResult{}, classify(ctx, ae, what)
		}
		return driver.QueryResult{}, err
	}
	meter := limits.Meter(what)
	out := driver.QueryResult{Columns: desc.columns}
	seqRows := res[0].Results.Rows
	if len(seqRows) != 1 || len(seqRows[0]) != 1 {
		return driver.QueryResult{}, driver.Errorf(driver.CodeInternal, "%s: no max commit seq", what)
	}
	if out.MaxCommitSeq, err = rawInt(seqRows[0][0]); err != nil {
		return driver.QueryResult{}, driver.Errorf(driver.CodeInternal, "%s: max commit seq is not an integer", what)
	}
	rows := res[1].Results.Rows
	if len(rows) > 0 {
		out.Rows = make([][]any, len(rows))
	}
	for i, raw := range rows {
		if len(raw) != len(desc.columns) {
			return driver.QueryResult{}, driver.Errorf(driver.CodeInternal, "%s: D1 returned %d columns, the statement has %d",
				what, len(raw), len(desc.columns))
		}
		if err := meter.Row(); err != nil {
			return driver.QueryResult{}, err
		}
		row := make([]any, len(raw))
		for j, v := range raw {
			if row[j], err = d1sql.D1QueryValue(v, desc.boolean[j]); err != nil {
				return driver.QueryResult{}, err
			}
			if err := meter.ValueOf(row[j]); err != nil {
				return driver.QueryResult{}, err
			}
		}
		out.Rows[i] = row
	}
	return out, nil
}

// refusedQuery classifies a query D1 refused (AQ-6): its engine's
// message naming a bound — a value over SQLITE_LIMIT_LENGTH (D1: 2 MB),
// its time limit, memory — → CodeQueryLimit; anything else is the
// statement's own making → CodeQueryInvalid. The message itself is never
// kept: D1 quotes data in some (bad JSON path: 'one'), V-10.
func refusedQuery(ae *attemptErr, limits driver.QueryLimits) error {
	const what = "d1http: authoritative query"
	cause := errors.New("D1 error " + strconv.Itoa(ae.code))
	msg := strings.ToLower(ae.msg)
	switch {
	case strings.Contains(msg, "sqlite_toobig") || strings.Contains(msg, "too big"):
		return driver.NewQueryLimitError(driver.BoundValueBytes, limits.MaxValueBytes, cause, what)
	case strings.Contains(msg, "time limit") || strings.Contains(msg, "timeout") || strings.Contains(msg, "interrupt"):
		return driver.NewQueryLimitError(driver.BoundTime, limits.TimeoutMillis(), cause, what)
	case strings.Contains(msg, "sqlite_nomem") || strings.Contains(msg, "out of memory"):
		return driver.NewQueryLimitError(driver.BoundMemory, 0, cause, what)
	}
	return driver.Wrap(driver.CodeQueryInvalid, cause, "query is not a valid query of its declared tables (AQ-1, AQ-2)")
}

// queryTables checks the declared tables against the ensured schema
// (CodeUnknownTable, SCH-8) and returns them sorted and distinct, with
// their application columns.
func (c *Conn) queryTables(names []string) ([]string, []d1sql.D1QueryTable, error) {
	declared, defs, err := querylang.DeclaredTables(names, c.state.Table)
	if err != nil {
		return nil, nil, err
	}
	tables := make([]d1sql.D1QueryTable, len(declared))
	for i, n := range declared {
		cols := make([]string, len(defs[i].Def.Columns))
		for j, col := range defs[i].Def.Columns {
			cols[j] = col.Name
		}
		tables[i] = d1sql.D1QueryTable{Name: n, Columns: cols}
	}
	return declared, tables, nil
}
