package conformance

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/syncstore/syncstore/driver"
)

// The suite's schema. Cases use only core operations for their setup.
//
//	todos:  id (pk), title, done, project_id (scope project), owner_id
//	        (scope owner), updated_at; index by_owner(owner_id)
//	kinds:  one nullable column of every type plus grp (scope grp); used
//	        for value fidelity
//	users:  id (pk), org (scope org), email with UNIQUE index by_email
const (
	tTodos = "todos"
	tKinds = "kinds"
	tUsers = "users"
)

// TestSchema returns the schema the suite ensures on every store it uses
// (version 1). Exported so driver tests and benchmarks can share it.
func TestSchema() driver.Schema {
	return driver.Schema{Version: 1, Tables: []driver.Table{
		{
			Name: tTodos,
			Columns: []driver.Column{
				{Name: "id", Type: driver.TypeString},
				{Name: "title", Type: driver.TypeString},
				{Name: "done", Type: driver.TypeBoolean},
				{Name: "project_id", Type: driver.TypeString},
				{Name: "owner_id", Type: driver.TypeString},
				{Name: "updated_at", Type: driver.TypeInteger},
			},
			PrimaryKey: "id",
			Scopes:     []driver.Scope{{Variable: "project", Column: "project_id"}, {Variable: "owner", Column: "owner_id"}},
			Indexes:    []driver.Index{{Name: "by_owner", Columns: []string{"owner_id"}}},
		},
		{
			Name: tKinds,
			Columns: []driver.Column{
				{Name: "id", Type: driver.TypeString},
				{Name: "grp", Type: driver.TypeString},
				{Name: "s", Type: driver.TypeString, Nullable: true},
				{Name: "i", Type: driver.TypeInteger, Nullable: true},
				{Name: "f", Type: driver.TypeFloat, Nullable: true},
				{Name: "b", Type: driver.TypeBoolean, Nullable: true},
				{Name: "j", Type: driver.TypeJSON, Nullable: true},
				{Name: "x", Type: driver.TypeBytes, Nullable: true},
			},
			PrimaryKey: "id",
			Scopes:     []driver.Scope{{Variable: "grp", Column: "grp"}},
		},
		{
			Name: tUsers,
			Columns: []driver.Column{
				{Name: "id", Type: driver.TypeString},
				{Name: "org", Type: driver.TypeString},
				{Name: "email", Type: driver.TypeString},
			},
			PrimaryKey: "id",
			Scopes:     []driver.Scope{{Variable: "org", Column: "org"}},
			Indexes:    []driver.Index{{Name: "by_email", Columns: []string{"email"}, Unique: true}},
		},
	}}
}

// openStore returns a fresh store with TestSchema ensured.
func openStore(t T, h Harness) driver.Conn {
	t.Helper()
	conn := h.Open(t)
	if err := conn.EnsureSchema(t.Context(), TestSchema()); err != nil {
		t.Fatalf("setup: EnsureSchema: %v", err)
	}
	return conn
}

// todo returns a todos row with consistent scopes (V-4).
func todo(id, project, owner string) driver.Row {
	return driver.Row{
		ID:            id,
		ServerVersion: 1,
		Scopes:        driver.Scopes{"project": project, "owner": owner},
		Values: driver.Values{
			"id": id, "title": "title " + id, "done": false,
			"project_id": project, "owner_id": owner, "updated_at": int64(1700000000000),
		},
	}
}

// user returns a users row.
func user(id, org, email string) driver.Row {
	return driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"org": org},
		Values: driver.Values{"id": id, "org": org, "email": email}}
}

// upsertChange returns the log change that records an upsert of row.
func upsertChange(table string, row driver.Row) driver.Change {
	return driver.Change{Table: table, RowID: row.ID, Op: driver.OpUpsert, Scopes: row.Scopes,
		Values: row.Values, RowVersion: row.ServerVersion}
}

// deleteChange returns the log change that records a delete of row.
func deleteChange(table string, row driver.Row) driver.Change {
	return driver.Change{Table: table, RowID: row.ID, Op: driver.OpDelete, Scopes: row.Scopes}
}

// begin starts a Tx or fails the case.
func begin(t T, conn driver.Conn, partition string) driver.Tx {
	t.Helper()
	tx, err := conn.Begin(t.Context(), partition)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	return tx
}

// push writes rows of table in one Tx with one commit recording their
// upserts, commits, and returns the commit's seq.
func push(t T, conn driver.Conn, partition, table string, rows ...driver.Row) int64 {
	t.Helper()
	tx := begin(t, conn, partition)
	seq := stage(t, tx, table, rows...)
	commit(t, tx)
	return seq
}

// stage upserts rows inside tx and appends one commit recording them.
func stage(t T, tx driver.Tx, table string, rows ...driver.Row) int64 {
	t.Helper()
	ctx := t.Context()
	changes := make([]driver.Change, 0, len(rows))
	for _, r := range rows {
		if err := tx.UpsertRow(ctx, table, r); err != nil {
			_ = tx.Rollback(context.Background())
			t.Fatalf("UpsertRow(%s, %q): %v", table, r.ID, err)
		}
		changes = append(changes, upsertChange(table, r))
	}
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: fmt.Sprintf("cc-%d", nextID()),
		ActorID: "a1", CreatedAtMs: 1700000000000, Changes: changes})
	if err != nil {
		_ = tx.Rollback(context.Background())
		t.Fatalf("AppendCommit: %v", err)
	}
	return seq
}

// commit commits tx or fails the case.
func commit(t T, tx driver.Tx) {
	t.Helper()
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

// ids returns the ids of rows in order.
func ids(rows []driver.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

// seqs returns the seqs of commits in order.
func seqs(cs []driver.Commit) []int64 {
	out := make([]int64, len(cs))
	for i, c := range cs {
		out[i] = c.Seq
	}
	return out
}

// cmpOpts are the comparison options of every diff: nil and empty slices
// and maps are equal (a driver may return either), everything else exact.
var cmpOpts = []cmp.Option{cmpopts.EquateEmpty()}

// diff returns "" when want and got are equal, else a go-cmp diff labelled
// (-want +got).
func diff(want, got any) string {
	if d := cmp.Diff(want, got, cmpOpts...); d != "" {
		return "(-want +got):\n" + d
	}
	return ""
}

// expectEqual fails the case (without stopping it) when got != want.
func expectEqual(t T, what string, want, got any) {
	t.Helper()
	if d := diff(want, got); d != "" {
		t.Errorf("%s mismatch %s", what, d)
	}
}

// expectCode fails the case when err does not carry code.
func expectCode(t T, what string, err error, code driver.Code) {
	t.Helper()
	if got := driver.CodeOf(err); got != code {
		t.Errorf("%s: got error %v (code %q), want code %q", what, err, got, code)
	}
}

// must fails the case when err is not nil.
func must(t T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

var idCounter atomic.Int64

// nextID returns a process-unique number for ids that must not repeat.
func nextID() int64 { return idCounter.Add(1) }
