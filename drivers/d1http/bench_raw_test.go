package d1http

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
)

// BenchmarkSuiteWorkloads runs docs/performance.md's standard workload (W1–W6)
// through the shared conformance code (conformance.RunBenchmarks) against
// the D1 double, one fresh database per workload run, so W1 here is the
// same work, checks and metrics as on every other driver (the older
// BenchmarkQuickW1W3 in bench_test.go is a shorter W1–W3 that also
// counts requests per push):
//
//	go test ./drivers/d1http -run '^$' -bench 'SuiteWorkloads' -benchtime 1x -count 3
//
// The double runs in-process behind loopback HTTP (SQLite in the same
// process), so the rates measure the driver's work, its request count and
// the double's SQLite, not D1's network latency.
func BenchmarkSuiteWorkloads(b *testing.B) {
	_, base := newDouble(b)
	h, err := conformance.HarnessFor("d1http", Driver{}, base, expectedCaps, false)
	if err != nil {
		b.Fatal(err)
	}
	conformance.RunBenchmarks(b, h)
}

// BenchmarkRawLoop is the physical ceiling of W1 on D1's HTTP API
// (conformance.RunRawLoop: the same 5,000 commits of 10 rows, W1's
// metrics, the result read back through the driver), against the same
// double, into the tables the driver creates (EnsureSchema first,
// untimed), through the driver's own HTTP client and request code (its
// http.Client, endpoint, token and JSON encoding; one attempt, no retry
// or fencing): ONE POST of one /raw batch per commit — D1 runs a batch
// as one transaction — holding the minimum SQL:
//
//	allocate the seq          INSERT … ON CONFLICT DO UPDATE max_seq + 1 RETURNING
//	upsert the 10 rows        1 statement (json_each over one JSON array)
//	the commit record         1 statement ┐ the seq read back from the
//	its 10 changes            1 statement │ partition's row the first
//	their 20 scope entries    1 statement │ statement updated (the batch is
//	the push result           1 statement ┘ one transaction)
//
// The driver takes one request per push once its Conn knows the
// partition's stamp and max seq from its last commit there (Begin reads
// them only for the Conn's first push to the partition); Commit sends 8
// statements: the stamp guard, one multi-row upsert of the rows, the log,
// the result, max_seq and the idempotency token
// (TestPushCommitStatements pins them).
// Compare (docs/performance.md, "Raw-loop ratios per engine"):
//
//	go test ./drivers/d1http -run '^$' -bench 'RawLoop|SuiteWorkloads/W1-push$' -benchtime 1x -count 3
func BenchmarkRawLoop(b *testing.B) {
	conformance.RunRawLoop(b, newD1RawLoop)
}

// BenchmarkRawScaled is the raw loop at 10 × its commits on one store,
// beside RunBenchmarks' W1x10-push (-bench 'RawScaled|Workloads/W1x10-push$').
func BenchmarkRawScaled(b *testing.B) {
	conformance.RunRawLoopScaled(b, newD1RawLoop, 10)
}

// BenchmarkMiniflareRawLoop is BenchmarkRawLoop on D1's real engine: the
// miniflare lane (workerd's SQLite behind a Worker serving D1's HTTP
// API, .ci/start-miniflare.sh), beside BenchmarkMiniflareWorkloads'
// W1. The double answers a statement with Go's SQLite and prepares every
// statement of every request again; workerd is D1's own code. Skipped
// unless SYNCSTORE_TEST_D1_MINIFLARE names the lane:
//
//	export SYNCSTORE_TEST_D1_MINIFLARE="$(.ci/start-miniflare.sh)"
//	go test ./drivers/d1http -run '^$' -bench 'Miniflare(RawLoop|Workloads/W1-push)$' -benchtime 1x -count 5
func BenchmarkMiniflareRawLoop(b *testing.B) {
	base := miniflareBase(b)
	conformance.RunRawLoop(b, func(b *testing.B) conformance.RawLoop { return d1RawLoop(b, provisioned(b, base)) })
}

// BenchmarkMiniflareWorkloads is BenchmarkSuiteWorkloads on the
// miniflare lane (see BenchmarkMiniflareRawLoop).
func BenchmarkMiniflareWorkloads(b *testing.B) {
	h, err := conformance.HarnessFor("d1http", Driver{}, miniflareBase(b), expectedCaps, false)
	if err != nil {
		b.Fatal(err)
	}
	conformance.RunBenchmarks(b, h)
}

// provisioned opens a database of its own beside base with the suite's
// schema; closed and dropped by b.Cleanup.
func provisioned(b *testing.B, base string) *Conn {
	b.Helper()
	dsn, drop, err := Driver{}.Provision(context.Background(), base)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = drop(context.Background()) })
	return openProvisioned(b, dsn)
}

// The raw loop's statements. ?1 is always the partition.
const (
	d1RawSeq = `INSERT INTO _sync_partitions (partition, max_seq, horizon_seq) VALUES (?1, 1, 0)
ON CONFLICT (partition) DO UPDATE SET max_seq = max_seq + 1 RETURNING max_seq`
	// ?2: [[version, id, title, done, project_id, owner_id, updated_at], …]
	d1RawRows = `INSERT INTO todos ("_sync_partition", "_sync_version", id, title, done, project_id, owner_id, updated_at)
SELECT ?1, r.value ->> 0, r.value ->> 1, r.value ->> 2, r.value ->> 3, r.value ->> 4, r.value ->> 5, r.value ->> 6
FROM json_each(?2) AS r WHERE true
ON CONFLICT ("_sync_partition", id) DO UPDATE SET "_sync_version" = excluded."_sync_version",
title = excluded.title, done = excluded.done, project_id = excluded.project_id, owner_id = excluded.owner_id, updated_at = excluded.updated_at`
	d1RawCommit = `INSERT INTO _sync_commits (partition, seq, client_id, client_commit_id, actor_id, created_at_ms)
SELECT ?1, max_seq, ?2, ?3, ?4, ?5 FROM _sync_partitions WHERE partition = ?1`
	// ?2: the changes as sqlitesql.ChangesJSON writes them.
	d1RawChanges = `INSERT INTO _sync_changes (partition, seq, idx, tbl, row_id, op, scopes, vals, row_version)
SELECT ?1, p.max_seq, c.key, c.value ->> 0, c.value ->> 1, c.value ->> 2, c.value -> 3, c.value ->> 4, c.value ->> 5
FROM _sync_partitions AS p, json_each(?2) AS c WHERE p.partition = ?1`
	d1RawScopes = `INSERT INTO _sync_change_scopes (partition, tbl, variable, value, seq, idx)
SELECT ?1, c.value ->> 0, s.key, s.value, p.max_seq, c.key
FROM _sync_partitions AS p, json_each(?2) AS c, json_each(c.value -> 3) AS s WHERE p.partition = ?1`
	// ?4 || seq || ?5 is the push result text (conformance.BenchCommit.ResultAround).
	d1RawResult = `INSERT INTO _sync_push_results (partition, client_id, client_commit_id, result, recorded_at_ms)
SELECT ?1, ?2, ?3, ?4 || max_seq || ?5, ?6 FROM _sync_partitions WHERE partition = ?1
ON CONFLICT (partition, client_id, client_commit_id) DO NOTHING`
	d1RawCounts = `SELECT (SELECT count(*) FROM todos WHERE "_sync_partition" = ?1),
	(SELECT count(*) FROM _sync_commits WHERE partition = ?1),
	(SELECT count(*) FROM _sync_changes WHERE partition = ?1),
	(SELECT count(*) FROM _sync_change_scopes WHERE partition = ?1),
	(SELECT count(*) FROM _sync_push_results WHERE partition = ?1),
	(SELECT coalesce(min(seq), 0) FROM _sync_commits WHERE partition = ?1),
	(SELECT max_seq FROM _sync_partitions WHERE partition = ?1)`
)

func newD1RawLoop(b *testing.B) conformance.RawLoop {
	b.Helper()
	srv, _ := newDouble(b)
	return d1RawLoop(b, openOn(b, srv, "")) // a fresh database, TestSchema ensured; closed at the end of b
}

// d1RawLoop is the raw loop on c's database (TestSchema ensured).
func d1RawLoop(b *testing.B, c *Conn) conformance.RawLoop {
	b.Helper()
	var rows, changes, vals []byte
	commit := func(ctx context.Context, cm conformance.BenchCommit) (int64, error) {
		p := conformance.BenchPartition
		rows, changes = append(rows[:0], '['), append(changes[:0], '[')
		for k, row := range cm.Rows {
			if k > 0 {
				rows, changes = append(rows, ','), append(changes, ',')
			}
			v := row.Values
			rows = append(rows, '[')
			rows = strconv.AppendInt(rows, row.ServerVersion, 10)
			rows = append(rows, ',')
			rows = strconv.AppendQuote(rows, row.ID)
			rows = append(rows, ',')
			rows = strconv.AppendQuote(rows, v["title"].(string))
			rows = append(rows, ',', '0'+byte(bit(v["done"].(bool))), ',')
			rows = strconv.AppendQuote(rows, v["project_id"].(string))
			rows = append(rows, ',')
			rows = strconv.AppendQuote(rows, v["owner_id"].(string))
			rows = append(rows, ',')
			rows = strconv.AppendInt(rows, v["updated_at"].(int64), 10)
			rows = append(rows, ']')
			// [table, row id, op, scopes, values text, row version]
			changes = append(changes, `["`+conformance.BenchTable+`",`...)
			changes = strconv.AppendQuote(changes, row.ID)
			changes = append(changes, `,"upsert",`...)
			changes = conformance.AppendScopesJSON(changes, row)
			changes = append(changes, ',')
			vals = conformance.AppendValuesJSON(vals[:0], row)
			changes = strconv.AppendQuote(changes, string(vals))
			changes = append(changes, ',')
			changes = strconv.AppendInt(changes, row.ServerVersion, 10)
			changes = append(changes, ']')
		}
		rows, changes = append(rows, ']'), append(changes, ']')
		prefix, suffix := cm.ResultAround()
		res, e := c.cl.send(ctx, []stmt{
			st(d1RawSeq, p),
			st(d1RawRows, p, string(rows)),
			st(d1RawCommit, p, cm.ClientID, cm.ClientCommitID, cm.ActorID, dec(cm.CreatedAtMs)),
			st(d1RawChanges, p, string(changes)),
			st(d1RawScopes, p, string(changes)),
			st(d1RawResult, p, cm.ClientID, cm.ClientCommitID, prefix, suffix, dec(cm.CreatedAtMs)),
		})
		if e != nil {
			return 0, e
		}
		if r := res[0].Results.Rows; len(r) != 1 || len(r[0]) != 1 {
			return 0, fmt.Errorf("the seq statement answered %v", r)
		}
		return rawInt(res[0].Results.Rows[0][0])
	}
	return conformance.RawLoop{
		Commit: commit,
		Counts: func(ctx context.Context) (k conformance.RawCounts, err error) {
			res, e := c.cl.send(ctx, []stmt{st(d1RawCounts, conformance.BenchPartition)})
			if e != nil {
				return k, e
			}
			if r := res[0].Results.Rows; len(r) != 1 || len(r[0]) != 7 {
				return k, fmt.Errorf("the counts answered %v", r)
			}
			for i, dst := range []*int64{&k.Rows, &k.Commits, &k.Changes, &k.ChangeScopes, &k.PushResults, &k.MinSeq, &k.MaxSeq} {
				if *dst, err = rawInt(res[0].Results.Rows[0][i]); err != nil {
					return k, err
				}
			}
			return k, nil
		},
		Reader: func(context.Context) (driver.Conn, error) { return c, nil },
	}
}

// bit binds a boolean as 1 or 0: D1 refuses JSON booleans as parameters
// (the miniflare lane answers them with an engine error).
func bit(b bool) int {
	if b {
		return 1
	}
	return 0
}
