package d1http

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/drivers/sqlite"
)

// Tests of authoritative queries beyond the conformance suite: the schema
// twin on its own (past the text layer), row order through the typing
// wrapper, exact values, value lists past D1's 100 parameters, a table
// D1 holds outside the schema, and AQ-5 against drivers/sqlite. Each runs
// on the double and, when SYNCSTORE_TEST_D1_MINIFLARE is set, on the
// miniflare lane (D1's real engine).

// queryLanes returns the base DSNs to run on: the double, and the
// miniflare lane when its variable is set.
func queryLanes(t *testing.T) map[string]string {
	t.Helper()
	_, base := newDouble(t)
	lanes := map[string]string{"double": base}
	if os.Getenv(MiniflareEnv) != "" {
		lanes["miniflare"] = miniflareBase(t)
	}
	return lanes
}

// openQueryStore provisions a database on the lane of base, opens it and
// ensures conformance.TestSchema.
func openQueryStore(t *testing.T, base string) *Conn {
	t.Helper()
	ctx := context.Background()
	dsn, drop, err := Driver{}.Provision(ctx, base)
	if err != nil {
		t.Fatalf("provision: %v", err)
	}
	t.Cleanup(func() { _ = drop(context.Background()) })
	conn, err := Driver{}.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatalf("EnsureSchema: %v", err)
	}
	return conn.(*Conn)
}

// seedQueryRows writes n todos (updated_at descending with the id) and
// the kinds rows of the values test into p1, and a look-alike into p2.
func seedQueryRows(t *testing.T, conn driver.Conn, n int) {
	t.Helper()
	ctx := context.Background()
	for _, p := range []string{"p1", "p2"} {
		tx, err := conn.Begin(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		var changes []driver.Change
		for i := range n {
			id := fmt.Sprintf("t%03d", i)
			row := driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"project": "alpha", "owner": "u" + fmt.Sprint(i%3)},
				Values: driver.Values{"id": id, "title": p + "-" + id, "done": i%2 == 0, "project_id": "alpha",
					"owner_id": "u" + fmt.Sprint(i%3), "updated_at": int64(1000 - i)}}
			if err := tx.UpsertRow(ctx, "todos", row); err != nil {
				t.Fatal(err)
			}
			changes = append(changes, driver.Change{Table: "todos", RowID: id, Op: driver.OpUpsert, Scopes: row.Scopes,
				Values: row.Values, RowVersion: 1})
		}
		for _, k := range queryKinds() {
			if err := tx.UpsertRow(ctx, "kinds", k); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c", ClientCommitID: p, CreatedAtMs: 1, Changes: changes}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func queryKind(id string, s, i, f, b, j, x any) driver.Row {
	return driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"grp": "g"},
		Values: driver.Values{"id": id, "grp": "g", "s": s, "i": i, "f": f, "b": b, "j": j, "x": x}}
}

func queryKinds() []driver.Row {
	return []driver.Row{
		queryKind("k1", "a\u0301👋", int64(math.MaxInt64), math.MaxFloat64, true, driver.JSON(`{"a": [1, 2.50]}`), []byte{0, 1, 255}),
		queryKind("k2", nil, nil, nil, nil, nil, nil),
		queryKind("k3", "", int64(math.MinInt64), math.Copysign(0, -1), false, driver.JSON(`[]`), []byte{}),
		queryKind("k4", "x", int64(1<<53+1), 5e-324, true, driver.JSON(`1e400`), nil),
		queryKind("k5", "y", int64(-(1<<53 + 1)), -0.1, false, driver.JSON(`"s"`), []byte{0}),
	}
}

func runQuery(t *testing.T, conn driver.Conn, p string, q driver.Query) driver.QueryResult {
	t.Helper()
	res, err := conn.(driver.AuthoritativeQueryConn).AuthoritativeQuery(context.Background(), p, q)
	if err != nil {
		t.Fatalf("%q: %v", q.SQL, err)
	}
	return res
}

// parityQueries are run on every lane and on drivers/sqlite; the results
// must be identical, Go types included (AQ-5).
var parityQueries = []driver.Query{
	{SQL: `SELECT id, updated_at FROM todos ORDER BY updated_at`, Tables: []string{"todos"}},
	{SQL: `SELECT id FROM todos ORDER BY title DESC LIMIT 7 OFFSET 3`, Tables: []string{"todos"}},
	{SQL: `SELECT id, done FROM todos WHERE done ORDER BY id DESC`, Tables: []string{"todos"}},
	{SQL: `SELECT id FROM todos WHERE owner_id = 'u1' UNION SELECT id FROM kinds ORDER BY 1 DESC`, Tables: []string{"todos", "kinds"}},
	{SQL: `SELECT owner_id, count(*) AS n, min(done) AS d, max(updated_at) AS m FROM todos GROUP BY owner_id ORDER BY n DESC, owner_id`,
		Tables: []string{"todos"}},
	{SQL: `SELECT id, row_number() OVER (ORDER BY updated_at) AS rn FROM todos ORDER BY rn DESC LIMIT 5`, Tables: []string{"todos"}},
	{SQL: `SELECT * FROM kinds ORDER BY id`, Tables: []string{"kinds"}},
	{SQL: `WITH k AS (SELECT id, b, i FROM kinds) SELECT x.b, x.i, (SELECT b FROM kinds WHERE id = 'k1') AS sb, x.b + 0 AS e FROM k AS x ORDER BY x.id`,
		Tables: []string{"kinds"}},
	{SQL: `SELECT f, -f AS nf, f * 1e308 AS big, -f * 1e308 AS small, typeof(f) AS tf, hex(x) AS hx, length(x) AS lx, j, json_type(j) AS jt FROM kinds ORDER BY id`,
		Tables: []string{"kinds"}},
	{SQL: `SELECT ?1 AS i, ?2 AS f, ?3 AS s, ?4 AS x, ?5 AS z, ?6 AS b, ?7 AS nz, ?8 AS e, id FROM kinds WHERE id = 'k1'`,
		Args: []any{int64(math.MinInt64), 5e-324, "é'", []byte{0, 9}, nil, true, math.Copysign(0, -1), []byte{}}, Tables: []string{"kinds"}},
	{SQL: `SELECT id, i FROM kinds WHERE i = ? OR i = ?`, Args: []any{int64(1<<53 + 1), int64(math.MinInt64)}, Tables: []string{"kinds"}},
	{SQL: `SELECT id FROM kinds WHERE f = ? OR f = ?`, Args: []any{5e-324, math.MaxFloat64}, Tables: []string{"kinds"}},
	{SQL: `SELECT id AS a, id AS a, 1 AS "x y" FROM todos ORDER BY id LIMIT 2`, Tables: []string{"todos"}},
	{SQL: `SELECT t.id, j.value, j.key, j.type FROM todos t, json_each('[1, 2.5, "x", null, true, {"a": 1}]') AS j WHERE t.id = 't000' ORDER BY j.key`,
		Tables: []string{"todos"}},
	{SQL: `SELECT count(*) AS n FROM todos WHERE id IN (SELECT value FROM json_each(?))`, Args: []any{`["t001", "t002", "nope"]`},
		Tables: []string{"todos"}},
}

// TestQueryParityWithSQLite runs parityQueries on drivers/sqlite and on
// every d1http lane over the same rows: same columns, rows, order and Go
// types (AQ-5), and the same max commit seq.
func TestQueryParityWithSQLite(t *testing.T) {
	ctx := context.Background()
	ref, err := sqlite.Driver{}.Open(ctx, filepath.Join(t.TempDir(), "ref.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	if err := ref.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	seedQueryRows(t, ref, 40)
	want := make([]driver.QueryResult, len(parityQueries))
	for i, q := range parityQueries {
		want[i] = runQuery(t, ref, "p1", q)
	}
	for lane, base := range queryLanes(t) {
		t.Run(lane, func(t *testing.T) {
			conn := openQueryStore(t, base)
			seedQueryRows(t, conn, 40)
			for i, q := range parityQueries {
				got := runQuery(t, conn, "p1", q)
				if !sameResult(want[i], got) {
					t.Errorf("%q:\n got %s %s seq %d\nwant %s %s seq %d", q.SQL, got.Columns, showRows(got.Rows), got.MaxCommitSeq,
						want[i].Columns, showRows(want[i].Rows), want[i].MaxCommitSeq)
				}
			}
		})
	}
}

// sameResult compares two results strictly: Go types, floats bit for bit,
// an empty []byte is not nil.
func sameResult(a, b driver.QueryResult) bool {
	if !reflect.DeepEqual(a.Columns, b.Columns) || a.MaxCommitSeq != b.MaxCommitSeq || len(a.Rows) != len(b.Rows) {
		return false
	}
	for i := range a.Rows {
		if len(a.Rows[i]) != len(b.Rows[i]) {
			return false
		}
		for j, x := range a.Rows[i] {
			y := b.Rows[i][j]
			if fx, ok := x.(float64); ok {
				if fy, ok := y.(float64); !ok || math.Float64bits(fx) != math.Float64bits(fy) {
					return false
				}
				continue
			}
			if bx, ok := x.([]byte); ok {
				if by, ok := y.([]byte); !ok || by == nil || string(bx) != string(by) {
					return false
				}
				continue
			}
			if x != y {
				return false
			}
		}
	}
	return true
}

func showRows(rows [][]any) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString("(")
		for j, v := range r {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%T(%#v)", v, v)
		}
		b.WriteString(") ")
	}
	return b.String()
}

// TestQueryOrderAndWidth: the typing wrapper keeps the host's row order
// (250 rows, descending by a non-key column), a value list of 1,000 bind
// values works (D1 binds 100 at most: they travel in one parameter), and
// p2's look-alikes never show.
func TestQueryOrderAndWidth(t *testing.T) {
	for lane, base := range queryLanes(t) {
		t.Run(lane, func(t *testing.T) {
			conn := openQueryStore(t, base)
			seedQueryRows(t, conn, 250)
			res := runQuery(t, conn, "p1", driver.Query{SQL: `SELECT id, title FROM todos ORDER BY updated_at ASC`, Tables: []string{"todos"}})
			if len(res.Rows) != 250 {
				t.Fatalf("%d rows, want 250", len(res.Rows))
			}
			for i, r := range res.Rows {
				if want := fmt.Sprintf("t%03d", 249-i); r[0] != want || r[1] != "p1-"+want {
					t.Fatalf("row %d is %v, want %s of p1", i, r, want)
				}
			}
			args := make([]any, 1000)
			ph := make([]string, 1000)
			for i := range args {
				args[i], ph[i] = fmt.Sprintf("t%03d", i), "?"
			}
			res = runQuery(t, conn, "p1", driver.Query{SQL: `SELECT count(*) AS n FROM todos WHERE id IN (` + strings.Join(ph, ", ") + `)`,
				Args: args, Tables: []string{"todos"}})
			if len(res.Rows) != 1 || res.Rows[0][0] != int64(250) {
				t.Fatalf("IN with 1000 bind values: %s, want 250", showRows(res.Rows))
			}
		})
	}
}

// TestQueryRefusedOnD1: what only D1 holds — a table outside the schema —
// and writes after WITH are refused; nothing changes.
func TestQueryRefusedOnD1(t *testing.T) {
	for lane, base := range queryLanes(t) {
		t.Run(lane, func(t *testing.T) {
			conn := openQueryStore(t, base)
			seedQueryRows(t, conn, 3)
			ctx := context.Background()
			if _, err := conn.write(ctx, "test: a foreign table", st(`CREATE TABLE evil (id TEXT)`), st(`INSERT INTO evil VALUES ('leak')`)); err != nil {
				t.Fatal(err)
			}
			for _, q := range []driver.Query{
				{SQL: `SELECT id FROM evil`, Tables: []string{"todos"}},
				{SQL: `SELECT t.id FROM todos t, evil`, Tables: []string{"todos"}},
				{SQL: `SELECT t.id FROM todos t, 'evil' e`, Tables: []string{"todos"}},
				{SQL: `SELECT t.id FROM todos t, 'users' u`, Tables: []string{"todos"}},
				{SQL: `SELECT name FROM todos, sqlite_master`, Tables: []string{"todos"}},
				{SQL: `SELECT * FROM todos, _cf_KV`, Tables: []string{"todos"}},
				{SQL: `WITH x AS (SELECT 1) UPDATE todos SET title = 'evil'`, Tables: []string{"todos"}},
				{SQL: `WITH x AS (SELECT 1) INSERT INTO evil SELECT * FROM x RETURNING id`, Tables: []string{"todos"}},
				{SQL: `WITH x AS (SELECT 1) REPLACE INTO todos (id) VALUES ('x')`, Tables: []string{"todos"}},
				{SQL: `SELECT x FROM (SELECT 1 AS x) AS s`, Tables: []string{"todos"}}, // declared, never read
				// D1 lacks or refuses these: refused on every lane alike.
				{SQL: `SELECT if(done, 1, 2) AS v FROM todos`, Tables: []string{"todos"}},
				{SQL: `SELECT unistr(title) AS v FROM todos`, Tables: []string{"todos"}},
				{SQL: `SELECT ceiling(updated_at) AS v FROM todos`, Tables: []string{"todos"}},
				{SQL: `SELECT log10(updated_at) AS v FROM todos`, Tables: []string{"todos"}},
				{SQL: `SELECT json_pretty('[1]') AS v FROM todos`, Tables: []string{"todos"}},
				{SQL: `SELECT json_error_position('[') AS v FROM todos`, Tables: []string{"todos"}},
				{SQL: `SELECT no_such_function(1) AS v FROM todos`, Tables: []string{"todos"}},
			} {
				_, err := conn.AuthoritativeQuery(ctx, "p1", q)
				if driver.CodeOf(err) != driver.CodeQueryInvalid {
					t.Errorf("%q: err %v, want %s", q.SQL, err, driver.CodeQueryInvalid)
				}
			}
			res := runQuery(t, conn, "p1", driver.Query{SQL: `SELECT count(*) AS n, max(title) AS m FROM todos`, Tables: []string{"todos"}})
			if want := [][]any{{int64(3), "p1-t002"}}; !reflect.DeepEqual(res.Rows, want) {
				t.Errorf("after the refusals: %s, want %v", showRows(res.Rows), want)
			}
		})
	}
}

// TestQueryTwinAlone runs hostile statements straight into the schema
// twin, past the text layer (RewriteD1Query): its authorizer refuses, on
// its own, every relation but the declared tables, every write and every
// function outside the allow-list. (A schema-qualified main."T" of a
// declared T is the one thing it cannot tell from the partition CTEs: the
// text layer refuses main., as for drivers/sqlite.)
func TestQueryTwinAlone(t *testing.T) {
	_, base := newDouble(t)
	conn := openQueryStore(t, base)
	tw, err := twinFor(context.Background(), conn.state.Load())
	if err != nil {
		t.Fatal(err)
	}
	cte := `WITH "todos" AS NOT MATERIALIZED (SELECT "id", "title", "done" FROM main."todos" WHERE "_sync_partition" = ?2) `
	for _, sql := range []string{
		cte + `SELECT name FROM sqlite_master, todos`,
		cte + `SELECT * FROM todos, sqlite_schema`,
		cte + `SELECT * FROM todos, pragma_table_info('todos')`,
		cte + `SELECT * FROM todos, users`,
		cte + `SELECT * FROM todos, 'users'`,
		cte + `SELECT * FROM todos, _sync_meta`,
		cte + `SELECT * FROM todos, _cf_KV`,
		cte + `SELECT * FROM todos, dbstat`,
		cte + `SELECT random() FROM todos`,
		cte + `SELECT sqlite_version() FROM todos`,
		cte + `SELECT load_extension('x') FROM todos`,
		cte + `DELETE FROM todos`,
		cte + `INSERT INTO users (id, org, email) SELECT id, id, id FROM todos`,
		cte + `SELECT _sync_partition FROM todos`,
		`SELECT 1 AS x`, // declares todos, reads nothing
		// Computes without any table row for longer than twinRunLimit.
		cte + `, n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n`,
	} {
		_, err := tw.describe(context.Background(), d1sql.D1Query{SQL: sql, Args: "[]"}, []string{"todos"}, driver.QueryLimits{}.WithDefaults())
		// Only the runaway query hits the time bound (AQ-6); the rest are invalid.
		want := driver.CodeQueryInvalid
		if strings.Contains(sql, "FROM n") {
			want = driver.CodeQueryLimit
		}
		if driver.CodeOf(err) != want {
			t.Errorf("%q: err %v, want %s", sql, err, want)
		}
	}
	_, err = tw.describe(context.Background(), d1sql.D1Query{SQL: cte + `SELECT nope FROM todos`, Args: "[]"}, []string{"todos"}, driver.QueryLimits{}.WithDefaults())
	if driver.CodeOf(err) != driver.CodeQueryInvalid || !strings.Contains(err.Error(), "no such column") {
		t.Errorf("unknown column: err %v, want %s carrying the engine's reason", err, driver.CodeQueryInvalid)
	}
	res, err := tw.describe(context.Background(), d1sql.D1Query{SQL: cte + `SELECT t.done AS d, t.done + 0 AS e, * FROM todos t`, Args: "[]"},
		[]string{"todos"}, driver.QueryLimits{}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"d", "e", "id", "title", "done"}; !reflect.DeepEqual(res.columns, want) {
		t.Errorf("columns %v, want %v", res.columns, want)
	}
	if want := []bool{true, false, false, false, true}; !reflect.DeepEqual(res.boolean, want) {
		t.Errorf("boolean %v, want %v", res.boolean, want)
	}
}
