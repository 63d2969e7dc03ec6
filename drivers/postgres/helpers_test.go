package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/testdb"
)

// openTest opens a Conn on a fresh database with the suite's schema.
func openTest(t *testing.T) (*Conn, string) {
	t.Helper()
	dsn := testdb.NewPostgres(t)
	return openDSN(t, dsn), dsn
}

// openDSN opens a Conn on dsn with the suite's schema, closed by t.Cleanup.
func openDSN(t *testing.T, dsn string) *Conn {
	t.Helper()
	c, err := Driver{}.Open(t.Context(), dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.EnsureSchema(t.Context(), conformance.TestSchema()); err != nil {
		t.Fatalf("EnsureSchema: %v", err)
	}
	return c.(*Conn)
}

// adminConn is a plain pgx connection to dsn for inspecting the server.
func adminConn(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatalf("admin connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func todoRow(id, project, owner string) driver.Row {
	return driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"project": project, "owner": owner},
		Values: driver.Values{"id": id, "title": "title " + id, "done": false,
			"project_id": project, "owner_id": owner, "updated_at": int64(1700000000000)}}
}

// pushTodos runs one full push in partition: n upserts, a commit, a push
// result and Commit, and returns the seq.
func pushTodos(ctx context.Context, c driver.Conn, partition string, first, n int) (int64, error) {
	tx, err := c.Begin(ctx, partition)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	seq, err := stageTodos(ctx, tx, first, n, fmt.Sprintf("cc%d", first))
	if err != nil {
		return 0, err
	}
	return seq, tx.Commit(ctx)
}

// stageTodos stages pushTodos' writes in tx under client commit id ccid
// and returns the commit's seq.
func stageTodos(ctx context.Context, tx driver.Tx, first, n int, ccid string) (int64, error) {
	var changes []driver.Change
	for i := range n {
		r := todoRow(fmt.Sprintf("r%07d", first+i), fmt.Sprintf("p%d", (first+i)%20), fmt.Sprintf("o%d", (first+i)%50))
		if err := tx.UpsertRow(ctx, "todos", r); err != nil {
			return 0, err
		}
		changes = append(changes, driver.Change{Table: "todos", RowID: r.ID, Op: driver.OpUpsert, Scopes: r.Scopes, Values: r.Values, RowVersion: 1})
	}
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: ccid, ActorID: "a", CreatedAtMs: 1, Changes: changes})
	if err != nil {
		return 0, err
	}
	return seq, tx.PutPushResult(ctx, "c1", ccid, driver.PushResult{Status: driver.PushApplied, CommitSeq: seq, RecordedAtMs: 1, Ops: []driver.OpResult{}})
}

// testdbDSN returns the URL DSN of a fresh database (no query string).
func testdbDSN(t *testing.T) string {
	t.Helper()
	return testdb.NewPostgres(t)
}

// withParam adds a query parameter to a URL DSN.
func withParam(dsn, kv string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&" + kv
	}
	return dsn + "?" + kv
}
