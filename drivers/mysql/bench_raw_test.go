package mysql

import (
	"context"
	"database/sql"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
)

// BenchmarkRawLoop is the physical ceiling of W1 on MySQL/MariaDB
// (conformance.RunRawLoop: the same 5,000 commits of 10 rows, W1's
// metrics, the result read back through the driver), written into the
// tables the driver creates (EnsureSchema first, untimed), on one
// connection of the driver's own database/sql pool (the same
// go-sql-driver/mysql settings: server-side prepared statements, READ
// COMMITTED, utf8mb4), statements prepared once. The client has no
// pipelining, so every statement is a round trip; the minimum is 8:
//
//	START TRANSACTION
//	  allocate the seq          INSERT … ON DUPLICATE KEY UPDATE max_seq = LAST_INSERT_ID(max_seq + 1):
//	                            the seq comes back in the OK packet (no SELECT), and
//	                            the partition's row stays locked (TX-1)
//	  upsert the 10 rows        1 statement (10 VALUES tuples)
//	  the commit record         1 statement
//	  its 10 changes            1 statement (10 tuples)
//	  their 20 scope entries    1 statement (20 tuples)
//	  the push result           1 statement (insert-or-keep)
//	COMMIT
//
// The driver takes 8 too: its Begin locks the partition and reserves the
// seq with the statement above; the upserts, the log and the result wait
// for Commit (stage.go), so the TX-8 savepoint a rejection rolls back to
// is not needed (9 if it were taken at Begin); TestPushRoundTrips pins
// the count.
// Compare (docs/performance.md, "Raw-loop ratios per engine"):
//
//	go test ./drivers/mysql -run '^$' -bench 'RawLoop|Workloads/W1-push$' -benchtime 1x -count 3
func BenchmarkRawLoop(b *testing.B) {
	conformance.RunRawLoop(b, newMyRawLoop)
}

// BenchmarkRawScaled is the raw loop at 10 × its commits on one store,
// beside RunBenchmarks' W1x10-push (-bench 'RawScaled|Workloads/W1x10-push$').
func BenchmarkRawScaled(b *testing.B) {
	conformance.RunRawLoopScaled(b, newMyRawLoop, 10)
}

// The raw loop's statements.
const (
	myRawSeq = `INSERT INTO _sync_partitions (p, max_seq) VALUES (?, LAST_INSERT_ID(1))
ON DUPLICATE KEY UPDATE max_seq = LAST_INSERT_ID(max_seq + 1)`
	myRawCounts = `SELECT (SELECT count(*) FROM todos WHERE _sync_partition = ?),
	(SELECT count(*) FROM _sync_commits WHERE p = ?),
	(SELECT count(*) FROM _sync_changes WHERE p = ?),
	(SELECT count(*) FROM _sync_change_scopes WHERE p = ?),
	(SELECT count(*) FROM _sync_push_results WHERE p = ?),
	(SELECT coalesce(min(seq), 0) FROM _sync_commits WHERE p = ?),
	(SELECT max_seq FROM _sync_partitions WHERE p = ?)`
)

func newMyRawLoop(b *testing.B) conformance.RawLoop {
	b.Helper()
	ctx := context.Background()
	c := openStore(b) // a fresh database, TestSchema ensured; closed at the end of b
	conn, err := c.db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close() })
	prep := func(q string) *sql.Stmt {
		st, err := conn.PrepareContext(ctx, q)
		if err != nil {
			b.Fatalf("prepare %s: %v", q, err)
		}
		b.Cleanup(func() { _ = st.Close() })
		return st
	}
	n := conformance.BenchRowsPerCommit
	seqSt := prep(myRawSeq)
	rowsSt := prep("INSERT INTO todos (_sync_partition, _sync_version, id, title, done, project_id, owner_id, updated_at) VALUES " +
		placeholders(n, 8) + ` ON DUPLICATE KEY UPDATE _sync_version = VALUES(_sync_version), _sync_negzero = NULL,
title = VALUES(title), done = VALUES(done), project_id = VALUES(project_id), owner_id = VALUES(owner_id), updated_at = VALUES(updated_at)`)
	commitSt := prep(insertCommit)
	changesSt := prep(insertChanges(n))
	scopesSt := prep(insertChangeScopes(2 * n))
	resultSt := prep(insertPushResult)
	var buf []byte
	commit := func(ctx context.Context, cm conformance.BenchCommit) (seq int64, err error) {
		p := conformance.BenchPartition
		if _, err := conn.ExecContext(ctx, "START TRANSACTION"); err != nil {
			return 0, err
		}
		defer func() {
			if err != nil {
				_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
			}
		}()
		res, err := seqSt.ExecContext(ctx, p)
		if err != nil {
			return 0, err
		}
		if seq, err = res.LastInsertId(); err != nil {
			return 0, err
		}
		rowArgs := make([]any, 0, 8*n)
		chArgs := make([]any, 0, 9*n)
		scArgs := make([]any, 0, 12*n)
		for k, row := range cm.Rows {
			v := row.Values
			rowArgs = append(rowArgs, p, row.ServerVersion, row.ID, v["title"], v["done"], v["project_id"], v["owner_id"], v["updated_at"])
			buf = conformance.AppendScopesJSON(buf[:0], row)
			scopes := string(buf)
			buf = conformance.AppendValuesJSON(buf[:0], row)
			chArgs = append(chArgs, p, seq, k, conformance.BenchTable, row.ID, string(driver.OpUpsert), scopes, string(buf), row.ServerVersion)
			scArgs = append(scArgs, p, conformance.BenchTable, "owner", row.Scopes["owner"], seq, k,
				p, conformance.BenchTable, "project", row.Scopes["project"], seq, k)
		}
		for _, st := range []struct {
			s    *sql.Stmt
			args []any
		}{
			{rowsSt, rowArgs},
			{commitSt, []any{p, seq, cm.ClientID, cm.ClientCommitID, cm.ActorID, cm.CreatedAtMs}},
			{changesSt, chArgs},
			{scopesSt, scArgs},
			{resultSt, []any{p, cm.ClientID, cm.ClientCommitID, cm.ResultJSON(seq)}},
		} {
			if _, err := st.s.ExecContext(ctx, st.args...); err != nil {
				return 0, err
			}
		}
		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			return 0, err
		}
		return seq, nil
	}
	return conformance.RawLoop{
		Commit: commit,
		Counts: func(ctx context.Context) (k conformance.RawCounts, err error) {
			p := conformance.BenchPartition
			err = conn.QueryRowContext(ctx, myRawCounts, p, p, p, p, p, p, p).Scan(&k.Rows, &k.Commits, &k.Changes,
				&k.ChangeScopes, &k.PushResults, &k.MinSeq, &k.MaxSeq)
			return k, err
		},
		Reader: func(context.Context) (driver.Conn, error) { return c, nil },
	}
}
