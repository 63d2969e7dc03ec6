package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
)

// BenchmarkRawLoop is the physical ceiling of docs/performance.md's W1 on this
// engine (conformance.RunRawLoop: the same 5,000 commits of 10 rows, W1's
// metrics, the result read back through the driver), into the very
// tables and indexes the driver creates (EnsureSchema runs first,
// untimed), with the writer's very DSN and pragmas (dsnFor: WAL,
// synchronous=NORMAL, cache and checkpoint sizes, BEGIN IMMEDIATE), but
// issued as the minimum SQL one push commit needs, straight through
// database/sql and modernc on one connection with statements prepared
// once:
//
//	BEGIN IMMEDIATE
//	  allocate the seq          1 statement (upsert … RETURNING)
//	  upsert the 10 rows        1 statement (10 VALUES tuples)
//	  the commit record         1 statement
//	  its 10 changes            1 statement (10 tuples)
//	  their 20 scope entries    1 statement (20 tuples)
//	  the push result           1 statement (insert-or-ignore)
//	COMMIT
//
// No validation, no codec (the stored values, scopes and push result are
// the codecs' bytes, appended directly), no abstraction: what is left is
// the engine's own work. Compare with BenchmarkWorkloads/W1-push (see
// docs/performance.md, "Raw-loop ratios per engine"):
//
//	go test ./drivers/sqlite -run '^$' -bench 'RawLoop|Workloads/W1-push$' -benchtime 1x -count 6
func BenchmarkRawLoop(b *testing.B) {
	conformance.RunRawLoop(b, newRawLoop)
}

// BenchmarkRawScaled is the raw loop at 10 × its commits on one store,
// beside RunBenchmarks' W1x10-push (-bench 'RawScaled|Workloads/W1x10-push$').
func BenchmarkRawScaled(b *testing.B) {
	conformance.RunRawLoopScaled(b, newRawLoop, 10)
}

// rawLoop holds one connection and the prepared statements of a commit.
type rawLoop struct {
	conn                                *sql.Conn
	seq, rows, commit1, changes, scopes *sql.Stmt
	result                              *sql.Stmt
	buf                                 []byte
}

func newRawLoop(b *testing.B) conformance.RawLoop {
	b.Helper()
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "raw.db")
	c := openDSN(b, path) // creates the driver's layout; closed at the end of b
	if err := c.EnsureSchema(ctx, testSchema()); err != nil {
		b.Fatal(err)
	}
	if err := c.Close(); err != nil {
		b.Fatal(err)
	}
	t, err := parseDSN(path)
	if err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("sqlite", t.dsnFor(true)) // the driver's writer pragmas, whatever they are
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	conn, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close() })
	tuples := func(n, width int) string {
		var s strings.Builder
		for i := 0; i < n; i++ {
			if i > 0 {
				s.WriteString(", ")
			}
			s.WriteString("(" + strings.TrimSuffix(strings.Repeat("?, ", width), ", ") + ")")
		}
		return s.String()
	}
	r := &rawLoop{conn: conn}
	prep := func(q string) *sql.Stmt {
		st, err := conn.PrepareContext(ctx, q)
		if err != nil {
			b.Fatalf("prepare %s: %v", q, err)
		}
		b.Cleanup(func() { _ = st.Close() })
		return st
	}
	n := conformance.BenchRowsPerCommit
	r.seq = prep(`INSERT INTO _sync_partitions (partition, max_seq, horizon_seq) VALUES (?1, 1, 0)
ON CONFLICT (partition) DO UPDATE SET max_seq = max_seq + 1 RETURNING max_seq`)
	r.rows = prep(`INSERT INTO todos ("_sync_partition", "_sync_version", id, title, done, project_id, owner_id, updated_at) VALUES ` +
		tuples(n, 8) + ` ON CONFLICT ("_sync_partition", id) DO UPDATE SET "_sync_version" = excluded."_sync_version",
title = excluded.title, done = excluded.done, project_id = excluded.project_id, owner_id = excluded.owner_id, updated_at = excluded.updated_at`)
	r.commit1 = prep(`INSERT INTO _sync_commits (partition, seq, client_id, client_commit_id, actor_id, created_at_ms) VALUES (?, ?, ?, ?, ?, ?)`)
	r.changes = prep(`INSERT INTO _sync_changes (partition, seq, idx, tbl, row_id, op, scopes, vals, row_version) VALUES ` +
		tuples(n, 9))
	r.scopes = prep(`INSERT INTO _sync_change_scopes (partition, tbl, variable, value, seq, idx) VALUES ` +
		tuples(2*n, 6))
	r.result = prep(`INSERT INTO _sync_push_results (partition, client_id, client_commit_id, result, recorded_at_ms) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (partition, client_id, client_commit_id) DO NOTHING`)
	count := `SELECT (SELECT count(*) FROM todos WHERE "_sync_partition" = ?1),
	(SELECT count(*) FROM _sync_commits WHERE partition = ?1),
	(SELECT count(*) FROM _sync_changes WHERE partition = ?1),
	(SELECT count(*) FROM _sync_change_scopes WHERE partition = ?1),
	(SELECT count(*) FROM _sync_push_results WHERE partition = ?1),
	(SELECT coalesce(min(seq), 0) FROM _sync_commits WHERE partition = ?1),
	(SELECT max_seq FROM _sync_partitions WHERE partition = ?1)`
	return conformance.RawLoop{
		Commit: r.write,
		Counts: func(ctx context.Context) (k conformance.RawCounts, err error) {
			err = conn.QueryRowContext(ctx, count, conformance.BenchPartition).Scan(&k.Rows, &k.Commits, &k.Changes,
				&k.ChangeScopes, &k.PushResults, &k.MinSeq, &k.MaxSeq)
			return k, err
		},
		Reader: func(ctx context.Context) (driver.Conn, error) { return openDSN(b, path), nil },
	}
}

// write writes W1's commit c in one transaction.
func (r *rawLoop) write(ctx context.Context, c conformance.BenchCommit) (seq int64, err error) {
	p := conformance.BenchPartition
	if _, err := r.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			_, _ = r.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	if err := r.seq.QueryRowContext(ctx, p).Scan(&seq); err != nil {
		return 0, err
	}
	n := len(c.Rows)
	rowArgs := make([]any, 0, 8*n)
	chArgs := make([]any, 0, 9*n)
	scArgs := make([]any, 0, 12*n)
	for k, row := range c.Rows {
		v := row.Values
		rowArgs = append(rowArgs, p, row.ServerVersion, row.ID, v["title"], v["done"], v["project_id"], v["owner_id"], v["updated_at"])
		r.buf = conformance.AppendScopesJSON(r.buf[:0], row)
		scopes := string(r.buf)
		r.buf = conformance.AppendValuesJSON(r.buf[:0], row)
		chArgs = append(chArgs, p, seq, k, conformance.BenchTable, row.ID, "upsert", scopes, string(r.buf), row.ServerVersion)
		scArgs = append(scArgs, p, conformance.BenchTable, "project", row.Scopes["project"], seq, k,
			p, conformance.BenchTable, "owner", row.Scopes["owner"], seq, k)
	}
	for _, st := range []struct {
		s    *sql.Stmt
		args []any
	}{
		{r.rows, rowArgs},
		{r.commit1, []any{p, seq, c.ClientID, c.ClientCommitID, c.ActorID, c.CreatedAtMs}},
		{r.changes, chArgs},
		{r.scopes, scArgs},
		{r.result, []any{p, c.ClientID, c.ClientCommitID, c.ResultJSON(seq), c.CreatedAtMs}},
	} {
		if _, err := st.s.ExecContext(ctx, st.args...); err != nil {
			return 0, err
		}
	}
	if _, err := r.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return 0, err
	}
	return seq, nil
}
