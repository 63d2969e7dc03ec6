package postgres

import (
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
)

// TestOpenInMixedCaseSchema: a store whose schema (the search path's
// first) needs quoting — upper case and a space — opens, migrates,
// pushes and answers an authoritative query with sum(boolean) (the
// aggregate sumBoolDDL creates in that schema).
func TestOpenInMixedCaseSchema(t *testing.T) {
	dsn := testdbDSN(t)
	if !strings.HasPrefix(dsn, "postgres://") {
		t.Skip("the test DSN is not a URL")
	}
	admin := adminConn(t, dsn)
	if _, err := admin.Exec(t.Context(), `CREATE SCHEMA "Tenant A"`); err != nil {
		t.Fatal(err)
	}
	c := openDSN(t, withParam(dsn, "search_path=%22Tenant%20A%22"))
	if seq, err := pushTodos(t.Context(), c, "p", 0, 3); err != nil || seq != 1 {
		t.Fatalf("push: %d, %v", seq, err)
	}
	var tables int
	if err := admin.QueryRow(t.Context(), `SELECT count(*) FROM pg_tables WHERE schemaname = 'Tenant A' AND tablename IN ('_sync_commits', 'todos')`).Scan(&tables); err != nil || tables != 2 {
		t.Fatalf("tables in \"Tenant A\": %d, %v; want 2", tables, err)
	}
	res, err := c.AuthoritativeQuery(t.Context(), "p", driver.Query{SQL: "SELECT sum(done IS NULL) AS n, count(*) AS c FROM todos", Tables: []string{"todos"}})
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	if len(res.Rows) != 1 || res.Rows[0][1] != int64(3) {
		t.Fatalf("query rows %v; want one row with count 3", res.Rows)
	}
}
