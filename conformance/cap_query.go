package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/querylang"
)

// Cases of the authoritative-query capability (docs/contract.md AQ-1…AQ-5).
// The hostile corpus (cap_query_corpus.go, with more attacks in
// cap_query_corpus_extra.go) and the dialect-parity corpus
// (cap_query_parity.go) become one case per entry,
// named "<rule>/corpus/<entry>"; each case seeds a store of its own, runs
// the entry on p1 and checks that nothing was written. The snapshot and
// value cases are in cap_query_values.go.

func init() {
	for _, e := range slices.Concat(aqCorpus(), aqCorpusExtra(), aqParityCorpus()) {
		register(Case{Name: e.rule + "/corpus/" + e.name, Capability: driver.CapAuthoritativeQuery,
			Run: func(t T, h Harness) { aqRunEntry(t, h, e) }})
	}
}

// aqQuerier returns the authoritative-query half of conn or fails the case.
func aqQuerier(t T, conn driver.Conn) driver.AuthoritativeQueryConn {
	t.Helper()
	q, ok := conn.(driver.AuthoritativeQueryConn)
	if !ok {
		t.Fatalf("the Conn does not implement driver.AuthoritativeQueryConn although the case runs for capability %s",
			driver.CapAuthoritativeQuery)
	}
	return q
}

// aqTodo is a todos row with every value chosen.
func aqTodo(id, title string, done bool, project, owner string, updatedAt int64) driver.Row {
	return driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"project": project, "owner": owner},
		Values: driver.Values{"id": id, "title": title, "done": done, "project_id": project, "owner_id": owner, "updated_at": updatedAt}}
}

// aqKind is a kinds row (grp "g"); nil values are NULL.
func aqKind(id string, s, i, f, b, j, x any) driver.Row {
	return driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"grp": "g"},
		Values: driver.Values{"id": id, "grp": "g", "s": s, "i": i, "f": f, "b": b, "j": j, "x": x}}
}

// aqKinds are the kinds rows of p1.
func aqKinds() []driver.Row {
	return []driver.Row{
		aqKind("k1", "héllo 👋 e\u0301", int64(math.MaxInt64), 0.1, true, driver.JSON(`{"b": 1, "a": [1,2]}`), []byte{0, 1, 255}),
		aqKind("k2", nil, nil, nil, nil, nil, nil),
		aqKind("k3", "", int64(math.MinInt64), math.Copysign(0, -1), false, driver.JSON(`[]`), []byte{}),
		aqKind("k4", "\uFFFD", int64(1<<53+1), 5e-324, true, driver.JSON(` {"a":1,"a":2} `), nil),
	}
}

// aqSeed writes the corpus data: p1 and p2 hold look-alike rows (the same
// ids and owners with other values) so any leak between them shows.
func aqSeed(t T, conn driver.Conn) {
	t.Helper()
	tx := begin(t, conn, "p1")
	stage(t, tx, tTodos, aqTodo("t1", "one", false, "alpha", "u1", 10), aqTodo("t2", "two", true, "alpha", "u2", 20),
		aqTodo("t3", "three", false, "beta", "u1", 30))
	stage(t, tx, tUsers, user("u1", "o1", "a@x"), user("u2", "o1", "b@x"), user("u3", "o2", "c@x"))
	stage(t, tx, tKinds, aqKinds()...)
	commit(t, tx)
	tx = begin(t, conn, "p2")
	stage(t, tx, tTodos, aqTodo("t1", "p2-one", true, "alpha", "u1", 100), aqTodo("x9", "p2-secret", false, "alpha", "u9", 900))
	stage(t, tx, tUsers, user("u1", "o1", "p2@x"), user("u9", "o9", "z@x"))
	stage(t, tx, tKinds, aqKind("k1", "p2", int64(7), 7.5, false, driver.JSON(`{}`), []byte{7}))
	commit(t, tx)
}

// aqSnapshot is what the corpus may never change: commit counters and
// every row of both partitions.
type aqSnapshot struct {
	MaxSeq map[string]int64
	Rows   map[string][]driver.Row
}

// aqTake reads an aqSnapshot through core reads. The filters list every
// scope value the seed and the hostile corpus use.
func aqTake(t T, conn driver.Conn) aqSnapshot {
	t.Helper()
	ctx := t.Context()
	s := aqSnapshot{MaxSeq: map[string]int64{}, Rows: map[string][]driver.Row{}}
	scans := []driver.ScanQuery{
		{Table: tTodos, Filter: driver.ScopeFilter{"project": {"alpha", "beta", "evil"}}, Limit: 1000},
		{Table: tUsers, Filter: driver.ScopeFilter{"org": {"o1", "o2", "o9"}}, Limit: 1000},
		{Table: tKinds, Filter: driver.ScopeFilter{"grp": {"g"}}, Limit: 1000},
	}
	for _, p := range []string{"p1", "p2"} {
		seq, err := conn.MaxCommitSeq(ctx, p)
		must(t, "MaxCommitSeq", err)
		s.MaxSeq[p] = seq
		for _, q := range scans {
			rows, err := conn.ScanRows(ctx, p, q)
			must(t, "ScanRows", err)
			s.Rows[p+"/"+q.Table] = rows
		}
	}
	return s
}

// aqCheckUnchanged fails the case when anything of before changed, when
// the schema no longer matches TestSchema, or when the query path stopped
// working (a hostile query must not leave the engine in a broken state).
func aqCheckUnchanged(t T, conn driver.Conn, before aqSnapshot) {
	t.Helper()
	expectEqual(t, "AQ-1: the store after the query (nothing may be written)", before, aqTake(t, conn))
	if err := conn.EnsureSchema(t.Context(), TestSchema()); err != nil {
		t.Errorf("AQ-1: EnsureSchema(TestSchema) after the query: %v (the schema must be unchanged)", err)
	}
	res, err := aqQuerier(t, conn).AuthoritativeQuery(t.Context(), "p1", driver.Query{SQL: `SELECT count(*) AS n FROM todos`,
		Tables: []string{tTodos}})
	if err != nil {
		t.Errorf("AQ-1: a plain query after the hostile one: %v", err)
		return
	}
	expectEqual(t, "AQ-1: a plain query after the hostile one", [][]any{{int64(3)}}, res.Rows)
}

// aqRunEntry seeds a store, runs e on p1 and checks its outcome.
func aqRunEntry(t T, h Harness, e aqEntry) {
	conn := openStore(t, h)
	aqSeed(t, conn)
	before := aqTake(t, conn)
	tables := e.tables
	if tables == nil {
		tables = tT
	}
	res, err := aqQuerier(t, conn).AuthoritativeQuery(t.Context(), "p1", driver.Query{SQL: e.sql, Args: e.args, Tables: tables})
	what := fmt.Sprintf("%s: %q (args %v, tables %v)", e.rule, e.sql, e.args, tables)
	switch {
	case e.want == aqInvalid && aqStaticRefusal(e.sql, e.args) != nil:
		// The shared static rules (AQ-6) price a text before any engine
		// checks it is valid: refused either way, as their error.
		expectCode(t, what+" must be refused by AQ-6's static rules", err, driver.CodeQueryLimit)
	case e.want == aqInvalid:
		expectCode(t, what+" must be refused", err, driver.CodeQueryInvalid)
	case e.want == aqEither && err != nil:
		expectCode(t, what+" may be refused, but only as query_invalid", err, driver.CodeQueryInvalid)
	case err != nil:
		t.Errorf("%s: %v", what, err)
	default:
		aqExpectResult(t, what, e.cols, e.rows, res)
		if res.MaxCommitSeq != before.MaxSeq["p1"] {
			t.Errorf("%s: MaxCommitSeq %d, want p1's %d (AQ-4)", what, res.MaxCommitSeq, before.MaxSeq["p1"])
		}
	}
	aqCheckUnchanged(t, conn, before)
}

// aqStaticRefusal is the error the shared static rules of AQ-6 (growth,
// search patterns, row work under the default limits) give sql, nil if
// they admit it.
func aqStaticRefusal(sql string, args []any) error {
	if _, err := querylang.AdmitQuery(driver.Query{SQL: sql, Args: args}); errors.Is(err, driver.ErrQueryLimit) {
		return err
	}
	return nil
}

// aqExpectResult compares a result with the expected columns (when cols
// is not nil) and rows, value by value and type by type (aqSame).
func aqExpectResult(t T, what string, cols []string, rows [][]any, res driver.QueryResult) {
	t.Helper()
	if cols != nil {
		expectEqual(t, what+" columns", cols, res.Columns)
	}
	for i, row := range res.Rows {
		if len(row) != len(res.Columns) {
			t.Errorf("%s: row %d has %d values for %d columns", what, i, len(row), len(res.Columns))
			return
		}
	}
	if len(rows) != len(res.Rows) {
		t.Errorf("%s: %d rows, want %d\n got %v\nwant %v", what, len(res.Rows), len(rows), aqShow(res.Rows), aqShow(rows))
		return
	}
	for i := range rows {
		if !aqSameRow(rows[i], res.Rows[i]) {
			t.Errorf("%s: row %d is %s, want %s", what, i, aqShow(res.Rows[i:i+1]), aqShow(rows[i:i+1]))
		}
	}
}

// aqSameRow reports whether two result rows are equal value by value.
func aqSameRow(want, got []any) bool {
	if len(want) != len(got) {
		return false
	}
	for i := range want {
		if !aqSame(want[i], got[i]) {
			return false
		}
	}
	return true
}

// aqSame compares result values strictly (AQ-4): the same Go type
// (int64 | float64 | string | []byte | bool | nil) and value; floats bit
// for bit; an empty []byte is not NULL.
func aqSame(want, got any) bool {
	switch w := want.(type) {
	case nil:
		return got == nil
	case []byte:
		g, ok := got.([]byte)
		return ok && bytes.Equal(w, g)
	case float64:
		g, ok := got.(float64)
		return ok && math.Float64bits(w) == math.Float64bits(g)
	case int64, string, bool:
		return want == got
	}
	return false
}

// aqShow prints rows with the Go type of each value.
func aqShow(rows [][]any) string {
	s := "["
	for i, row := range rows {
		if i > 0 {
			s += " "
		}
		s += "("
		for j, v := range row {
			if j > 0 {
				s += ", "
			}
			s += fmt.Sprintf("%T(%#v)", v, v)
		}
		s += ")"
	}
	return s + "]"
}

// aqRun runs q on p through conn, failing the case on error.
func aqRun(t T, conn driver.Conn, p string, q driver.Query) driver.QueryResult {
	t.Helper()
	res, err := aqQuerier(t, conn).AuthoritativeQuery(t.Context(), p, q)
	if err != nil {
		t.Fatalf("AuthoritativeQuery(%q): %v", q.SQL, err)
	}
	return res
}

// aqQueryCtx is context.Background, for goroutines that outlive nothing.
var aqQueryCtx = context.Background
