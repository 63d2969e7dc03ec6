package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/testdb"
)

// openStore opens a fresh database with the suite's schema ensured.
func openStore(t testing.TB) *Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := Driver{}.Open(ctx, testdb.NewMySQL(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatalf("EnsureSchema: %v", err)
	}
	return conn.(*Conn)
}

// todoRow returns a todos row with consistent scopes.
func todoRow(id, project, owner string) driver.Row {
	return driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"project": project, "owner": owner},
		Values: driver.Values{"id": id, "title": "title " + id, "done": false, "project_id": project,
			"owner_id": owner, "updated_at": int64(1700000000000)}}
}

// pushRows writes rows to todos in one Tx with one commit and returns its seq.
func pushRows(t testing.TB, c *Conn, partition string, rows ...driver.Row) int64 {
	t.Helper()
	ctx := context.Background()
	tx, err := c.Begin(ctx, partition)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	var changes []driver.Change
	for _, r := range rows {
		if err := tx.UpsertRow(ctx, "todos", r); err != nil {
			t.Fatalf("UpsertRow: %v", err)
		}
		changes = append(changes, driver.Change{Table: "todos", RowID: r.ID, Op: driver.OpUpsert, Scopes: r.Scopes,
			Values: r.Values, RowVersion: r.ServerVersion})
	}
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c", ClientCommitID: fmt.Sprint("cc", rows[0].ID), CreatedAtMs: 1, Changes: changes})
	if err != nil {
		t.Fatalf("AppendCommit: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return seq
}

// planRow is one row of EXPLAIN.
type planRow struct {
	table, typ, key, extra string
	possible               string // possible_keys
}

func (p planRow) String() string {
	return fmt.Sprintf("{table=%s type=%s key=%s extra=%q}", p.table, p.typ, p.key, p.extra)
}

// explain returns the plan of q with args.
func explain(t testing.TB, c *Conn, q string, args ...any) []planRow {
	t.Helper()
	rows, err := c.db.QueryContext(context.Background(), "EXPLAIN "+q, args...)
	if err != nil {
		t.Fatalf("EXPLAIN: %v\n%s", err, q)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []planRow
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var r planRow
		for i, name := range cols {
			switch strings.ToLower(name) {
			case "table":
				r.table = vals[i].String
			case "type":
				r.typ = vals[i].String
			case "key":
				r.key = vals[i].String
			case "extra":
				r.extra = vals[i].String
			case "possible_keys":
				r.possible = vals[i].String
			}
		}
		out = append(out, r)
	}
	return out
}

func errorAs(err error, target **driver.Error) bool { return errors.As(err, target) }
