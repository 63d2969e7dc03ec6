package sync

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/syncstore/syncstore/driver"
)

// Typed access to the authoritative-query capability (docs/contract.md
// AQ-1…AQ-5). What the SQL may say — one SELECT, reading only its
// declared tables — is judged by the driver against its engine; what can
// be checked without an engine is checked here first.

// MaxQueryBytes bounds the text of an authoritative query.
const MaxQueryBytes = 100_000

// AuthoritativeQuery is a capability call (AQ), made beside the engine: a
// host's own query of one partition.
//
// AuthoritativeQuery runs q, a host-registered SELECT (or WITH … SELECT)
// in the portable SQLite-family dialect with `?`/`?N` parameters, against
// the rows of partition only, and returns its rows — values int64 |
// float64 | string | []byte | bool | nil — with the partition's
// MaxCommitSeq of the same snapshot (AQ-1…AQ-5). Bind values are data,
// never SQL (AQ-3).
//
// Checks, in order: V-1 partition; q.Tables non-empty, each a table of
// the ensured schema (CodeUnknownTable, SCH-8); q.SQL non-empty valid
// UTF-8 without NUL, at most MaxQueryBytes; each bind value an int64, a
// finite float64, a string of valid UTF-8 without NUL, a []byte, a bool,
// nil, or a JSON document (bound as its text) — any other input →
// CodeQueryInvalid (AQ-1). The driver refuses, with CodeQueryInvalid, a
// second statement, a statement of another kind, a read of any relation
// but the declared tables (infrastructure tables and system catalogs
// included), a declared table the SQL does not read, and a bind value
// count that does not match the parameters; nothing is ever written.
// q.Limits outside QueryLimits' ranges → CodeInvalidLimit (V-5).
// A query that hits one of q.Limits (zero fields: the defaults — 10,000
// rows, 16 MiB of result, 1 MiB per value, 5 s on the engine), binds a
// string or blob longer than MaxValueBytes ("value_bytes"), or whose text
// nests deeper than 100 parentheses or lets a value grow more than
// 1,024-fold ("rewrite", checked before any engine sees it) →
// CodeQueryLimit, a *QueryLimitError naming the bound; not retryable
// (AQ-6).
// Queries run under the Store's QueryConcurrency (AQ-7): a query waits for
// a slot of its partition and of the Store, and that wait, with the
// driver's wait for a connection, counts against its Timeout — a query
// that gets no slot within it is CodeQueryLimit (bound time) and never
// reaches the engine.
// Without the capability → CodeUnsupported (ERR-2).
func (s *Store) AuthoritativeQuery(ctx context.Context, partition string, q Query) (_ QueryResult, err error) {
	defer s.observe(&ctx, "Store.AuthoritativeQuery", partition).done(&err)
	if err := checkCtx(ctx, "AuthoritativeQuery"); err != nil {
		return *new(QueryResult), err
	}
	const op = "AuthoritativeQuery"
	aq, ok := s.reader(ctx).(driver.AuthoritativeQueryConn)
	if !ok {
		return QueryResult{}, s.unsupported(op, CapAuthoritativeQuery)
	}
	if err := idPartition.check(op, partition); err != nil {
		return QueryResult{}, err
	}
	if err := s.schema.Load().checkQuery(op, q); err != nil {
		return QueryResult{}, err
	}
	return s.runQuery(ctx, aq, partition, q)
}

// checkQuery checks what AuthoritativeQuery checks after the partition.
func (cs *compiledSchema) checkQuery(op string, q Query) error {
	invalid := func(format string, args ...any) error {
		e := driver.Errorf(CodeQueryInvalid, format, args...)
		e.Message = op + ": " + e.Message
		e.Rule = joinRules(e.Rule, "AQ-1")
		return e
	}
	if len(q.Tables) == 0 {
		return invalid("the query declares no table")
	}
	for _, t := range q.Tables {
		if _, err := cs.table(op, t); err != nil {
			return err
		}
	}
	if err := q.Limits.Check(); err != nil {
		e := err.(*Error)
		e.Message = op + ": " + e.Message
		return e
	}
	switch {
	case q.SQL == "":
		return invalid("the query text is empty")
	case len(q.SQL) > MaxQueryBytes:
		return invalid("the query text is %d bytes, over the %d-byte limit", len(q.SQL), MaxQueryBytes)
	case badText(q.SQL) != "":
		return invalid("the query text %s", badText(q.SQL))
	}
	for i, a := range q.Args {
		if why := queryArgProblem(a); why != "" {
			return invalid("bind value %d %s", i+1, why)
		}
	}
	return nil
}

// queryArgProblem says why a is not a bind value ("" when it is), never
// quoting the value (V-10).
func queryArgProblem(a any) string {
	switch x := a.(type) {
	case nil, int64, bool:
		return ""
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "is not a finite float"
		}
		return ""
	case string:
		return badText(x)
	case []byte:
		return ""
	case JSON:
		if !utf8.ValidString(string(x)) || !json.Valid([]byte(x)) {
			return "is not a valid JSON document"
		}
		return ""
	}
	return fmt.Sprintf("is a %T; want int64, float64, string, []byte, bool, nil or JSON", a)
}
