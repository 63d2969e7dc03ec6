package sqlite

import (
	"context"
	sqldriver "database/sql/driver"
	"fmt"
	"strings"
	gosync "sync"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// qryRun runs an authoritative query on c.
func qryRun(c *Conn, partition, sql string, tables []string, args ...any) (driver.QueryResult, error) {
	return c.AuthoritativeQuery(context.Background(), partition, driver.Query{SQL: sql, Args: args, Tables: tables})
}

// qryIDs runs sql (one text column) and returns the values, failing t on error.
func qryIDs(t *testing.T, c *Conn, partition, sql string, tables ...string) []string {
	t.Helper()
	res, err := qryRun(c, partition, sql, tables)
	if err != nil {
		t.Fatalf("AuthoritativeQuery(%q): %v", sql, err)
	}
	var out []string
	for _, r := range res.Rows {
		out = append(out, fmt.Sprint(r[0]))
	}
	return out
}

// TestQueryPolicyAlone runs hostile statements past the text check,
// straight into the engine with the partition policy installed: every
// relation other than a declared table's partition view, and every
// non-SELECT action, must be refused by the engine itself (AQ-1, AQ-2).
// The one thing the policy cannot judge alone — a CTE whose body names
// main."T" — is the text check's (CheckQueryText refuses schema names);
// the corpus case AQ-2/corpus/cte-shadowing-the-table-reading-main covers
// the pair.
func TestQueryPolicyAlone(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	pushRows(t, c, "p1", todoRow("a", "p", "o"))
	pushRows(t, c, "p2", todoRow("b", "p", "o"))
	for _, sql := range []string{
		`SELECT id FROM main.todos`,
		`SELECT count(*) FROM main.todos`,
		`SELECT 1 FROM main.todos LIMIT 1`,
		`SELECT count(*) FROM _sync_commits`,
		`SELECT id FROM todos WHERE EXISTS (SELECT 1 FROM _sync_partitions)`,
		`SELECT count(*) FROM sqlite_master`,
		`SELECT name FROM sqlite_schema`,
		`SELECT count(*) FROM temp.sqlite_master`,
		`SELECT v FROM temp._sync_q`,
		`SELECT v FROM temp._sync_qlayout`,
		`SELECT count(*) FROM _sync_qlayout`,
		`SELECT * FROM pragma_table_info('todos')`,
		`SELECT count(*) FROM pragma_table_info('todos')`,
		`SELECT count(*) FROM dbstat`,
		`SELECT id FROM users`,
		`SELECT sqlite_version() AS v FROM todos`,
		`SELECT random() AS r FROM todos`,
		`SELECT load_extension('x') FROM todos`,
		`DELETE FROM todos`,
		`INSERT INTO todos (id) VALUES ('x')`,
		`UPDATE main.todos SET title = 'x'`,
		`CREATE TABLE x (a)`,
		`DROP VIEW temp.todos`,
		`ATTACH DATABASE ':memory:' AS x`,
		`PRAGMA query_only = 0`,
		`COMMIT`,
	} {
		db, err := c.aq.get()
		if err != nil {
			t.Fatal(err)
		}
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.runQuery(ctx, conn, "p1", []string{"todos"}, sql, nil, driver.QueryLimits{}.WithDefaults())
		if got := driver.CodeOf(err); got != driver.CodeQueryInvalid {
			t.Errorf("runQuery(%q): error %v, want %s", sql, err, driver.CodeQueryInvalid)
		}
		_ = conn.Raw(func(any) error { return sqldriver.ErrBadConn })
		_ = conn.Close()
	}
	if got := qryIDs(t, c, "p1", `SELECT id FROM todos`, "todos"); len(got) != 1 || got[0] != "a" {
		t.Errorf("after the hostile statements, p1's todos = %v, want [a]", got)
	}
}

// TestQueryViewPlan pins the plan of a query through a partition view:
// the partition predicate is served by the table's primary key (or a
// scope index), never a scan of every partition's rows.
func TestQueryViewPlan(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	for i := 0; i < 40; i++ {
		pushRows(t, c, fmt.Sprintf("p%d", i%4), todoRow(fmt.Sprintf("r%02d", i), "p", "o"))
	}
	if _, err := c.w.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	if _, err := qryRun(c, "p1", `SELECT id FROM todos`, []string{"todos"}); err != nil {
		t.Fatal(err) // builds the views on a pool connection
	}
	db, _ := c.aq.get()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, sql := range []string{`SELECT id, title FROM todos ORDER BY id`, `SELECT count(*) FROM todos WHERE owner_id = 'o'`} {
		rows, err := conn.QueryContext(ctx, "EXPLAIN QUERY PLAN "+sql)
		if err != nil {
			t.Fatal(err)
		}
		var plan string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan += detail + "\n"
		}
		rows.Close()
		if want := "(_sync_partition=?"; !strings.Contains(plan, want) || strings.Contains(plan, "SCAN todos") {
			t.Errorf("plan of %q through the view does not search by partition:\n%s", sql, plan)
		}
		t.Logf("%s:\n%s", sql, plan)
	}
}

// TestQueryAfterMigration checks that the partition views follow the
// stored layout: a column and a table added by a migration (SCH-6) are
// queryable at once, on a pool connection that built views before.
func TestQueryAfterMigration(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	pushRows(t, c, "p1", todoRow("a", "p", "o"))
	if got := qryIDs(t, c, "p1", `SELECT id FROM todos`, "todos"); len(got) != 1 {
		t.Fatalf("before migration: %v", got)
	}
	s := testSchema()
	s.Version = 2
	s.Tables[0].Columns = append(s.Tables[0].Columns, driver.Column{Name: "note", Type: driver.TypeString, Nullable: true})
	s.Tables = append(s.Tables, driver.Table{Name: "tags", PrimaryKey: "id",
		Columns: []driver.Column{{Name: "id", Type: driver.TypeString}, {Name: "g", Type: driver.TypeString}},
		Scopes:  []driver.Scope{{Variable: "g", Column: "g"}}})
	if err := c.EnsureSchema(ctx, s); err != nil {
		t.Fatal(err)
	}
	res, err := qryRun(c, "p1", `SELECT t.id, t.note, count(g.id) AS n FROM todos t LEFT JOIN tags g ON g.id = t.id GROUP BY t.id`,
		[]string{"todos", "tags"})
	if err != nil {
		t.Fatalf("query after migration: %v", err)
	}
	want := [][]any{{"a", nil, int64(0)}}
	if fmt.Sprint(res.Rows) != fmt.Sprint(want) {
		t.Errorf("rows after migration = %v, want %v", res.Rows, want)
	}
}

// TestQueryConcurrentPartitions runs queries of several partitions at
// once (more goroutines than pool connections): each sees only its own
// partition, whichever pooled connection and partition parameter it gets.
func TestQueryConcurrentPartitions(t *testing.T) {
	c, _ := openTest(t)
	const parts = 6
	for p := 0; p < parts; p++ {
		var rows []driver.Row
		for i := 0; i <= p; i++ {
			rows = append(rows, todoRow(fmt.Sprintf("r%d", i), "p", "o"))
		}
		pushRows(t, c, fmt.Sprintf("p%d", p), rows...)
	}
	var wg gosync.WaitGroup
	errs := make(chan error, parts*10)
	for g := 0; g < parts*2; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				p := (g + i) % parts
				res, err := qryRun(c, fmt.Sprintf("p%d", p), `SELECT count(*) AS n FROM todos`, []string{"todos"})
				if err != nil {
					errs <- err
					return
				}
				if n := res.Rows[0][0]; n != int64(p+1) || res.MaxCommitSeq != 1 {
					errs <- fmt.Errorf("partition p%d: count %v, max seq %d; want %d, 1", p, n, res.MaxCommitSeq, p+1)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestQueryLifecycle: a cancelled context fails with CodeUnavailable and
// leaves the pool and the writer usable (TX-6's spirit); after Close a
// query fails with CodeUnavailable.
func TestQueryLifecycle(t *testing.T) {
	c, _ := openTest(t)
	pushRows(t, c, "p1", todoRow("a", "p", "o"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.AuthoritativeQuery(ctx, "p1", driver.Query{SQL: `SELECT id FROM todos`, Tables: []string{"todos"}})
	if got := driver.CodeOf(err); got != driver.CodeUnavailable {
		t.Errorf("query with a cancelled context: %v, want %s", err, driver.CodeUnavailable)
	}
	pushRows(t, c, "p1", todoRow("b", "p", "o"))
	if got := qryIDs(t, c, "p1", `SELECT id FROM todos ORDER BY id`, "todos"); fmt.Sprint(got) != "[a b]" {
		t.Errorf("after a cancelled query: %v, want [a b]", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = qryRun(c, "p1", `SELECT id FROM todos`, []string{"todos"})
	if got := driver.CodeOf(err); got != driver.CodeClosed {
		t.Errorf("query after Close: %v, want %s (ERR-4)", err, driver.CodeClosed)
	}
}

// TestQueryStateTablesAreTemp checks that the query connection's state
// lives in its temp schema only: the store file gets no object of it.
func TestQueryStateTablesAreTemp(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	if _, err := qryRun(c, "p1", `SELECT id FROM todos`, []string{"todos"}); err != nil {
		t.Fatal(err)
	}
	var n int
	err := c.r.QueryRowContext(ctx, `SELECT count(*) FROM main.sqlite_schema WHERE name IN (?1, ?2) OR type = 'view'`,
		sqlitesql.QueryStateTable, sqlitesql.QueryLayoutTable).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d query objects in the store's main schema, want 0", n)
	}
}
