package postgres

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/testdb"
)

// BenchmarkWorkloads runs docs/performance.md's standard workload (W1–W6) through
// the shared conformance code, one fresh database per workload run, on
// the server internal/testdb finds:
//
//	go test ./drivers/postgres -run '^$' -bench Workloads -benchtime 1x -count 3
func BenchmarkWorkloads(b *testing.B) {
	h, err := conformance.HarnessFor("postgres", Driver{}, testdb.PostgresServer(b), expectedCaps, true)
	if err != nil {
		b.Fatal(err)
	}
	conformance.RunBenchmarks(b, h)
}

// BenchmarkRawLoop is the physical ceiling of W1 on PostgreSQL
// (conformance.RunRawLoop: the same 5,000 commits of 10 rows, W1's
// metrics, the result read back through the driver), written into the
// tables the driver creates (EnsureSchema first, untimed), on one
// connection of the driver's own pgx pool (the same pgx settings,
// statement cache included: every statement is prepared once), as the
// minimum SQL of one push commit in ONE pgx.Batch — a single round trip:
//
//	BEGIN
//	  allocate the seq          INSERT … ON CONFLICT DO UPDATE max_seq + 1 RETURNING
//	                            (also the partition's row lock, TX-1)
//	  upsert the 10 rows        1 statement (10 VALUES tuples)
//	  the commit record         1 statement ┐ the seq read back from the
//	  its 10 changes            1 statement │ partition's row the first
//	  their 20 scope entries    1 statement │ statement updated, so the batch
//	  the push result           1 statement ┘ needs no answer mid-way
//	COMMIT
//
// The driver takes one round trip too once its Conn knows the
// partition's max seq (a deferred Begin, Tx: BEGIN, the guarded max_seq
// update that locks the row, 10 single-row upserts, the log, the result,
// pg_notify for commit fanout, COMMIT); two for its first push to the
// partition (Begin's pipeline, then Commit's). Compare
// (docs/performance.md, "Raw-loop ratios per engine"):
//
//	go test ./drivers/postgres -run '^$' -bench 'RawLoop|Workloads/W1-push$' -benchtime 1x -count 3
func BenchmarkRawLoop(b *testing.B) {
	conformance.RunRawLoop(b, newPGRawLoop)
}

// BenchmarkRawScaled is the raw loop at 10 × its commits on one store,
// beside RunBenchmarks' W1x10-push (-bench 'RawScaled|Workloads/W1x10-push$').
func BenchmarkRawScaled(b *testing.B) {
	conformance.RunRawLoopScaled(b, newPGRawLoop, 10)
}

// The raw loop's statements. $1 is always the partition.
const (
	pgRawSeq = `INSERT INTO _sync_partitions (partition, max_seq, horizon_seq) VALUES ($1, 1, 0)
ON CONFLICT (partition) DO UPDATE SET max_seq = _sync_partitions.max_seq + 1 RETURNING max_seq`
	pgRawCommit = `INSERT INTO _sync_commits (partition, seq, client_id, client_commit_id, actor_id, created_at_ms)
SELECT $1, max_seq, $2, $3, $4, $5 FROM _sync_partitions WHERE partition = $1`
	// $2 table, $3 op, then one array element per change.
	pgRawChanges = `INSERT INTO _sync_changes (partition, seq, idx, tbl, row_id, op, scopes, vals, row_version)
SELECT $1, p.max_seq, u.idx, $2, u.row_id, $3, u.scopes, u.vals, u.row_version
FROM _sync_partitions AS p, unnest($4::integer[], $5::text[], $6::text[], $7::text[], $8::bigint[]) AS u(idx, row_id, scopes, vals, row_version)
WHERE p.partition = $1`
	// $2 table, then one array element per (change, scope variable).
	pgRawScopes = `INSERT INTO _sync_change_scopes (partition, tbl, variable, value, seq, idx)
SELECT $1, $2, u.variable, u.value, p.max_seq, u.idx
FROM _sync_partitions AS p, unnest($3::text[], $4::text[], $5::integer[]) AS u(variable, value, idx)
WHERE p.partition = $1`
	// $4 || seq || $5 is the push result text (conformance.BenchCommit.ResultAround).
	pgRawResult = `INSERT INTO _sync_push_results (partition, client_id, client_commit_id, result, recorded_at_ms)
SELECT $1, $2, $3, $4 || max_seq || $5, $6 FROM _sync_partitions WHERE partition = $1
ON CONFLICT (partition, client_id, client_commit_id) DO NOTHING`
	pgRawCounts = `SELECT (SELECT count(*) FROM todos WHERE "_sync_partition" = $1),
	(SELECT count(*) FROM _sync_commits WHERE partition = $1),
	(SELECT count(*) FROM _sync_changes WHERE partition = $1),
	(SELECT count(*) FROM _sync_change_scopes WHERE partition = $1),
	(SELECT count(*) FROM _sync_push_results WHERE partition = $1),
	(SELECT coalesce(min(seq), 0) FROM _sync_commits WHERE partition = $1),
	(SELECT max_seq FROM _sync_partitions WHERE partition = $1)`
)

// pgRawRows is the upsert of n todos rows: 8 parameters per row.
func pgRawRows(n int) string {
	var s strings.Builder
	s.WriteString(`INSERT INTO todos ("_sync_partition", "_sync_version", id, title, done, project_id, owner_id, updated_at) VALUES `)
	for i := 0; i < n; i++ {
		if i > 0 {
			s.WriteString(", ")
		}
		s.WriteString("(")
		for k := 1; k <= 8; k++ {
			if k > 1 {
				s.WriteString(", ")
			}
			s.WriteString("$" + strconv.Itoa(8*i+k))
		}
		s.WriteString(")")
	}
	s.WriteString(` ON CONFLICT ("_sync_partition", id) DO UPDATE SET "_sync_version" = EXCLUDED."_sync_version",
title = EXCLUDED.title, done = EXCLUDED.done, project_id = EXCLUDED.project_id, owner_id = EXCLUDED.owner_id, updated_at = EXCLUDED.updated_at`)
	return s.String()
}

func newPGRawLoop(b *testing.B) conformance.RawLoop {
	b.Helper()
	ctx := context.Background()
	dc, err := Driver{}.Open(ctx, testdb.NewPostgres(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = dc.Close() })
	if err := dc.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		b.Fatal(err)
	}
	c := dc.(*Conn)
	pc, err := c.pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pc.Release)
	rows := pgRawRows(conformance.BenchRowsPerCommit)
	var buf []byte
	commit := func(ctx context.Context, cm conformance.BenchCommit) (seq int64, err error) {
		p, n := conformance.BenchPartition, len(cm.Rows)
		rowArgs := make([]any, 0, 8*n)
		idx, ids, scopes, vals, vers := make([]int32, n), make([]string, n), make([]string, n), make([]string, n), make([]int64, n)
		vars, values, sIdx := make([]string, 0, 2*n), make([]string, 0, 2*n), make([]int32, 0, 2*n)
		for k, row := range cm.Rows {
			v := row.Values
			rowArgs = append(rowArgs, p, row.ServerVersion, row.ID, v["title"], v["done"], v["project_id"], v["owner_id"], v["updated_at"])
			buf = conformance.AppendScopesJSON(buf[:0], row)
			scopes[k] = string(buf)
			buf = conformance.AppendValuesJSON(buf[:0], row)
			idx[k], ids[k], vals[k], vers[k] = int32(k), row.ID, string(buf), row.ServerVersion
			vars = append(vars, "owner", "project") // sorted, as the driver writes them
			values = append(values, row.Scopes["owner"], row.Scopes["project"])
			sIdx = append(sIdx, int32(k), int32(k))
		}
		prefix, suffix := cm.ResultAround()
		bt := &pgx.Batch{}
		bt.Queue("BEGIN")
		bt.Queue(pgRawSeq, p).QueryRow(func(r pgx.Row) error { return r.Scan(&seq) })
		bt.Queue(rows, rowArgs...)
		bt.Queue(pgRawCommit, p, cm.ClientID, cm.ClientCommitID, cm.ActorID, cm.CreatedAtMs)
		bt.Queue(pgRawChanges, p, conformance.BenchTable, string(driver.OpUpsert), idx, ids, scopes, vals, vers)
		bt.Queue(pgRawScopes, p, conformance.BenchTable, vars, values, sIdx)
		bt.Queue(pgRawResult, p, cm.ClientID, cm.ClientCommitID, prefix, suffix, cm.CreatedAtMs)
		bt.Queue("COMMIT")
		if err := pc.SendBatch(ctx, bt).Close(); err != nil {
			_, _ = pc.Exec(context.WithoutCancel(ctx), "ROLLBACK", pgx.QueryExecModeSimpleProtocol)
			return 0, err
		}
		return seq, nil
	}
	return conformance.RawLoop{
		Commit: commit,
		Counts: func(ctx context.Context) (k conformance.RawCounts, err error) {
			err = pc.QueryRow(ctx, pgRawCounts, conformance.BenchPartition).Scan(&k.Rows, &k.Commits, &k.Changes,
				&k.ChangeScopes, &k.PushResults, &k.MinSeq, &k.MaxSeq)
			return k, err
		},
		Reader: func(context.Context) (driver.Conn, error) { return dc, nil },
	}
}
