package conformance

import (
	"context"
	"fmt"
	gosync "sync"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Authoritative-query cases beyond the corpus: result values and their
// types (AQ-4, VAL-1), the commit seq of the snapshot under concurrent
// commits (AQ-4), repeatable results (AQ-5), and the declared table set
// (AQ-2, SCH-8).

func init() {
	c := driver.CapAuthoritativeQuery
	register(
		// Catches: booleans as integers, JSON as bytes, an empty blob read as NULL, floats through text.
		Case{Name: "AQ-4/result-value-types", Capability: c, Run: aqValueTypes},
		// Catches: MaxCommitSeq read outside the query's snapshot (before or after it).
		Case{Name: "AQ-4/max-commit-seq-of-the-same-snapshot", Capability: c, Run: aqSnapshotSeq},
		// Catches: results that depend on the Conn, on a previous query or on the partition queried before.
		Case{Name: "AQ-5/same-text-same-rows", Capability: c, Run: aqRepeatable},
		// Catches: a declared table outside the schema accepted, or reported as anything but unknown_table.
		Case{Name: "AQ-2/declared-table-not-in-schema", Capability: c, Run: aqUnknownDeclared},
		// Catches: a query of p2 that sees p1 (the corpus queries p1 only).
		Case{Name: "AQ-2/each-partition-sees-only-itself", Capability: c, Run: aqEachPartition},
	)
}

func aqValueTypes(t T, h Harness) {
	conn := openStore(t, h)
	aqSeed(t, conn)
	res := aqRun(t, conn, "p1", driver.Query{SQL: `SELECT id, s, i, f, b, j, x FROM kinds ORDER BY id`, Tables: []string{tKinds}})
	expectEqual(t, "AQ-4: columns", []string{"id", "s", "i", "f", "b", "j", "x"}, res.Columns)
	var want [][]any
	for _, k := range aqKinds() {
		row := []any{k.ID}
		for _, col := range []string{"s", "i", "f", "b", "j", "x"} {
			v := k.Values[col]
			if j, ok := v.(driver.JSON); ok {
				v = string(j) // JSON text comes back as a string, byte for byte
			}
			row = append(row, v)
		}
		want = append(want, row)
	}
	aqExpectResult(t, "AQ-4/VAL-1: kinds values through a query", nil, want, res)

	// Expressions keep their types too.
	res = aqRun(t, conn, "p1", driver.Query{SQL: `SELECT count(*) AS n, sum(i IS NULL) AS nulls, max(length(x)) AS maxlen FROM kinds WHERE id <> ?`,
		Args: []any{"k1"}, Tables: []string{tKinds}})
	aqExpectResult(t, "AQ-4: aggregates", []string{"n", "nulls", "maxlen"}, [][]any{{int64(3), int64(1), int64(0)}}, res)
	res = aqRun(t, conn, "p1", driver.Query{SQL: `SELECT ?1 AS i, ?2 AS f, ?3 AS s, ?4 AS x, ?5 AS z, id FROM kinds WHERE id = 'k1'`,
		Args: []any{int64(-5), 2.5, "é", []byte{0, 9}, nil}, Tables: []string{tKinds}})
	aqExpectResult(t, "AQ-3/AQ-4: bind values come back as given", nil, [][]any{{int64(-5), 2.5, "é", []byte{0, 9}, nil, "k1"}}, res)
}

func aqSnapshotSeq(t T, h Harness) {
	conn := openStore(t, h)
	store := syncstore.OpenConn(conn)
	must(t, "setup: Store.EnsureSchema", store.EnsureSchema(t.Context(), TestSchema()))
	const commits = 100
	q := driver.Query{SQL: `SELECT count(*) AS n, coalesce(max(updated_at), 0) AS m FROM todos`, Tables: []string{tTodos}}

	var wg gosync.WaitGroup
	var werr error
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for k := int64(1); k <= commits; k++ {
			// Commit k adds one row whose updated_at is k: a snapshot whose
			// max seq is s holds exactly s rows, the newest with updated_at s.
			row := aqTodo(fmt.Sprintf("w%02d", k), "w", false, "alpha", "u1", k)
			err := store.RunInTx(aqQueryCtx(), "p1", func(ctx context.Context, tx *syncstore.Tx) error {
				if err := tx.UpsertRow(ctx, tTodos, row); err != nil {
					return err
				}
				seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: row.ID, CreatedAtMs: k,
					Changes: []driver.Change{upsertChange(tTodos, row)}})
				if err == nil && seq != k {
					err = fmt.Errorf("commit %d got seq %d", k, seq)
				}
				return err
			})
			if err != nil {
				werr = err
				return
			}
		}
	}()

	checks := 0
	check := func() bool {
		res, err := aqQuerier(t, conn).AuthoritativeQuery(t.Context(), "p1", q)
		if err != nil {
			t.Errorf("AQ-4: query during commits: %v", err)
			return false
		}
		checks++
		if len(res.Rows) != 1 || len(res.Rows[0]) != 2 {
			t.Errorf("AQ-4: query returned %s, want one row of two values", aqShow(res.Rows))
			return false
		}
		n, m := res.Rows[0][0], res.Rows[0][1]
		if !aqSame(res.MaxCommitSeq, n) || !aqSame(res.MaxCommitSeq, m) {
			t.Errorf("AQ-4: rows (count %v, newest %v) are not those of MaxCommitSeq %d: the seq is not of the query's snapshot",
				n, m, res.MaxCommitSeq)
			return false
		}
		return true
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		if !check() {
			break
		}
	}
	wg.Wait()
	if werr != nil {
		t.Fatalf("setup: writer: %v", werr)
	}
	if check() {
		res := aqRun(t, conn, "p1", q)
		expectEqual(t, "AQ-4: MaxCommitSeq after every commit", int64(commits), res.MaxCommitSeq)
	}
	t.Logf("AQ-4: %d queries checked while %d commits landed", checks, commits)
}

func aqRepeatable(t T, h Harness) {
	conn := openStore(t, h)
	aqSeed(t, conn)
	queries := []driver.Query{
		{SQL: `SELECT t.id AS id, t.title AS title, t.done AS done, u.email AS email FROM todos t JOIN users u ON u.id = t.owner_id ORDER BY t.id`,
			Tables: []string{tTodos, tUsers}},
		{SQL: `SELECT id, s, i, f, b, j, x FROM kinds ORDER BY id`, Tables: []string{tKinds}},
	}
	first := make([]driver.QueryResult, len(queries))
	for i, q := range queries {
		first[i] = aqRun(t, conn, "p1", q)
	}
	// Another partition in between must not change what p1's query returns.
	aqRun(t, conn, "p2", queries[0])
	others := []driver.Conn{conn}
	if h.Reopen != nil {
		again := h.Reopen(t, conn)
		must(t, "setup: EnsureSchema on the second Conn", again.EnsureSchema(t.Context(), TestSchema()))
		others = append(others, again)
	}
	for n, c := range others {
		for i, q := range queries {
			again := aqRun(t, c, "p1", q)
			aqExpectResult(t, fmt.Sprintf("AQ-5: query %d again on conn %d", i, n), first[i].Columns, first[i].Rows, again)
		}
	}
	aqExpectResult(t, "AQ-5: the joined query", []string{"id", "title", "done", "email"},
		[][]any{{"t1", "one", false, "a@x"}, {"t2", "two", true, "b@x"}, {"t3", "three", false, "a@x"}}, first[0])
}

func aqUnknownDeclared(t T, h Harness) {
	conn := openStore(t, h)
	aqSeed(t, conn)
	before := aqTake(t, conn)
	_, err := aqQuerier(t, conn).AuthoritativeQuery(t.Context(), "p1",
		driver.Query{SQL: `SELECT id FROM todos`, Tables: []string{tTodos, "nope"}})
	expectCode(t, "AQ-2/SCH-8: a declared table that is not in the schema", err, driver.CodeUnknownTable)
	bare := h.Open(t) // no schema ensured: every table is unknown
	_, err = aqQuerier(t, bare).AuthoritativeQuery(t.Context(), "p1", driver.Query{SQL: `SELECT id FROM todos`, Tables: []string{tTodos}})
	expectCode(t, "AQ-2/SCH-8: a query before EnsureSchema", err, driver.CodeUnknownTable)
	aqCheckUnchanged(t, conn, before)
}

func aqEachPartition(t T, h Harness) {
	conn := openStore(t, h)
	aqSeed(t, conn)
	q := driver.Query{SQL: `SELECT t.id AS id, t.title AS title, u.email AS email FROM todos t LEFT JOIN users u ON u.id = t.owner_id ORDER BY t.id`,
		Tables: []string{tTodos, tUsers}}
	aqExpectResult(t, "AQ-2: p2's rows", nil, [][]any{{"t1", "p2-one", "p2@x"}, {"x9", "p2-secret", "z@x"}}, aqRun(t, conn, "p2", q))
	aqExpectResult(t, "AQ-2: p1's rows", nil, [][]any{{"t1", "one", "a@x"}, {"t2", "two", "b@x"}, {"t3", "three", "a@x"}},
		aqRun(t, conn, "p1", q))
	res := aqRun(t, conn, "p404", q)
	aqExpectResult(t, "AQ-2/P-2: an unknown partition", nil, nil, res)
	expectEqual(t, "AQ-4/P-2: MaxCommitSeq of an unknown partition", int64(0), res.MaxCommitSeq)
}
