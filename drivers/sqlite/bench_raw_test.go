package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
)

// BenchmarkRawLoop is the physical ceiling of BENCH.md's W1 on this
// engine: the same 5,000 commits of 10 rows (conformance.BenchTodo), into
// the very tables and indexes the driver creates (EnsureSchema runs first,
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
//	  its 10 changes            1 statement (10 tuples; values as plain JSON)
//	  their 20 scope entries    1 statement (20 tuples)
//	  the push result           1 statement (insert-or-ignore)
//	COMMIT
//
// No validation, no codec, no abstraction: what is left is the engine's
// own work. Compare with BenchmarkWorkloads/W1-push (benchstat; see
// docs/performance.md):
//
//	go test ./drivers/sqlite -run '^$' -bench 'RawLoop|Workloads/W1-push$' -benchtime 1x -count 6
func BenchmarkRawLoop(b *testing.B) {
	b.Run("W1-push", func(b *testing.B) {
		const commits = 5000
		var total time.Duration
		tenths := make([]time.Duration, 10)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			r := newRawLoop(b)
			b.StartTimer()
			start := time.Now()
			mark := start
			for c := 0; c < commits; c++ {
				r.commit(b, c)
				if (c+1)%(commits/10) == 0 {
					now := time.Now()
					tenths[c/(commits/10)] += now.Sub(mark)
					mark = now
				}
			}
			total += time.Since(start)
			b.StopTimer()
			r.check(b, commits)
		}
		b.ReportMetric(float64(b.N*commits)/total.Seconds(), "commits/s")
		b.ReportMetric(float64(b.N*commits*conformance.BenchRowsPerCommit)/total.Seconds(), "changes/s")
		// The same scaling figures as W1's: the engine's own growth.
		first, last := float64(b.N*commits/10)/tenths[0].Seconds(), float64(b.N*commits/10)/tenths[9].Seconds()
		b.ReportMetric(first, "first-tenth-commits/s")
		b.ReportMetric(last, "last-tenth-commits/s")
		b.ReportMetric(last/first, "last/first")
	})
}

// rawLoop holds one connection and the prepared statements of a commit.
type rawLoop struct {
	ctx                                 context.Context
	conn                                *sql.Conn
	seq, rows, commit1, changes, scopes *sql.Stmt
	result                              *sql.Stmt
	buf                                 []byte
}

func newRawLoop(b *testing.B) *rawLoop {
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
	r := &rawLoop{ctx: ctx, conn: conn}
	prep := func(q string) *sql.Stmt {
		st, err := conn.PrepareContext(ctx, q)
		if err != nil {
			b.Fatalf("prepare %s: %v", q, err)
		}
		b.Cleanup(func() { _ = st.Close() })
		return st
	}
	r.seq = prep(`INSERT INTO _sync_partitions (partition, max_seq, horizon_seq) VALUES (?1, 1, 0)
ON CONFLICT (partition) DO UPDATE SET max_seq = max_seq + 1 RETURNING max_seq`)
	r.rows = prep(`INSERT INTO todos ("_sync_partition", "_sync_version", id, title, done, project_id, owner_id, updated_at) VALUES ` +
		tuples(conformance.BenchRowsPerCommit, 8) + ` ON CONFLICT ("_sync_partition", id) DO UPDATE SET "_sync_version" = excluded."_sync_version",
title = excluded.title, done = excluded.done, project_id = excluded.project_id, owner_id = excluded.owner_id, updated_at = excluded.updated_at`)
	r.commit1 = prep(`INSERT INTO _sync_commits (partition, seq, client_id, client_commit_id, actor_id, created_at_ms) VALUES (?, ?, ?, ?, ?, ?)`)
	r.changes = prep(`INSERT INTO _sync_changes (partition, seq, idx, tbl, row_id, op, scopes, vals, row_version) VALUES ` +
		tuples(conformance.BenchRowsPerCommit, 9))
	r.scopes = prep(`INSERT INTO _sync_change_scopes (partition, tbl, variable, value, seq, idx) VALUES ` +
		tuples(2*conformance.BenchRowsPerCommit, 6))
	r.result = prep(`INSERT INTO _sync_push_results (partition, client_id, client_commit_id, result) VALUES (?, ?, ?, ?)
ON CONFLICT (partition, client_id, client_commit_id) DO NOTHING`)
	return r
}

// commit writes W1's commit i.
func (r *rawLoop) commit(b *testing.B, i int) {
	ctx, p := r.ctx, conformance.BenchPartition
	exec := func(st *sql.Stmt, args ...any) {
		if _, err := st.ExecContext(ctx, args...); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := r.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		b.Fatal(err)
	}
	var seq int64
	if err := r.seq.QueryRowContext(ctx, p).Scan(&seq); err != nil {
		b.Fatal(err)
	}
	n := conformance.BenchRowsPerCommit
	rowArgs := make([]any, 0, 8*n)
	chArgs := make([]any, 0, 9*n)
	scArgs := make([]any, 0, 12*n)
	for k := 0; k < n; k++ {
		row := conformance.BenchTodo(i*n + k)
		v := row.Values
		rowArgs = append(rowArgs, p, row.ServerVersion, row.ID, v["title"], v["done"], v["project_id"], v["owner_id"], v["updated_at"])
		scopes := `{"project":"` + row.Scopes["project"] + `","owner":"` + row.Scopes["owner"] + `"}`
		chArgs = append(chArgs, p, seq, k, "todos", row.ID, "upsert", scopes, r.valsJSON(v), row.ServerVersion)
		scArgs = append(scArgs, p, "todos", "project", row.Scopes["project"], seq, k, p, "todos", "owner", row.Scopes["owner"], seq, k)
	}
	exec(r.rows, rowArgs...)
	cid := "c" + strconv.Itoa(i)
	exec(r.commit1, p, seq, "bench-client", cid, "bench-actor", int64(i))
	exec(r.changes, chArgs...)
	exec(r.scopes, scArgs...)
	exec(r.result, p, "bench-client", cid, `{"status":"applied","commitSeq":`+strconv.FormatInt(seq, 10)+`,"ops":10}`)
	if _, err := r.conn.ExecContext(ctx, "COMMIT"); err != nil {
		b.Fatal(err)
	}
}

// valsJSON encodes the row's values as a plain JSON object (the least a
// log must store to replay an upsert).
func (r *rawLoop) valsJSON(v driver.Values) string {
	buf := append(r.buf[:0], `{"id":`...)
	buf = strconv.AppendQuote(buf, v["id"].(string))
	buf = append(buf, `,"title":`...)
	buf = strconv.AppendQuote(buf, v["title"].(string))
	buf = append(buf, `,"done":`...)
	buf = strconv.AppendBool(buf, v["done"].(bool))
	buf = append(buf, `,"project_id":`...)
	buf = strconv.AppendQuote(buf, v["project_id"].(string))
	buf = append(buf, `,"owner_id":`...)
	buf = strconv.AppendQuote(buf, v["owner_id"].(string))
	buf = append(buf, `,"updated_at":`...)
	buf = strconv.AppendInt(buf, v["updated_at"].(int64), 10)
	buf = append(buf, '}')
	r.buf = buf
	return string(buf)
}

// check fails b unless the loop wrote what W1 writes.
func (r *rawLoop) check(b *testing.B, commits int) {
	b.Helper()
	var seq, rows, scopes int64
	q := `SELECT (SELECT max_seq FROM _sync_partitions WHERE partition = ?1),
	(SELECT count(*) FROM todos WHERE "_sync_partition" = ?1),
	(SELECT count(*) FROM _sync_change_scopes WHERE partition = ?1)`
	if err := r.conn.QueryRowContext(r.ctx, q, conformance.BenchPartition).Scan(&seq, &rows, &scopes); err != nil {
		b.Fatal(err)
	}
	n := int64(commits * conformance.BenchRowsPerCommit)
	if seq != int64(commits) || rows != n || scopes != 2*n {
		b.Fatalf("raw loop wrote max_seq %d, %d rows, %d scope entries; want %d, %d, %d", seq, rows, scopes, commits, n, 2*n)
	}
}
