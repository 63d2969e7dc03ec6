package conformance

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	gosync "sync"
	"sync/atomic"

	"github.com/syncstore/syncstore/driver"
)

// Rule group TX, visibility and lifecycle (docs/contract.md TX-2…TX-5). The
// serialization cases (TX-1, TX-9) are in core_tx_concurrency.go, the
// failure cases (TX-6…TX-8) in core_tx_failures.go.

// txProject is the project scope of the rows the TX cases write.
const txProject = "pj"

// txRetitled returns a copy of r with a new title (a full replacement).
func txRetitled(r driver.Row, title string) driver.Row {
	r.Values = maps.Clone(r.Values)
	r.Values["title"] = title
	r.ServerVersion++
	return r
}

// txState is what the core reads show of partition p: its todos of
// txProject, its max seq and its commit log for txProject.
type txState struct {
	Rows    []driver.Row
	Max     int64
	Commits []driver.Commit
}

// txSnapshot reads txState through conn (outside any Tx).
func txSnapshot(t T, conn driver.Conn, p string) txState {
	t.Helper()
	ctx := t.Context()
	rows, err := conn.ScanRows(ctx, p, driver.ScanQuery{Table: tTodos, Filter: driver.ScopeFilter{"project": {txProject}}, Limit: 10000})
	must(t, "ScanRows", err)
	txSortRows(rows)
	max, err := conn.MaxCommitSeq(ctx, p)
	must(t, "MaxCommitSeq", err)
	cs, err := conn.ReadCommitWindow(ctx, p, driver.WindowQuery{Table: tTodos,
		Filter: driver.ScopeFilter{"project": {txProject}}, ThroughSeq: seqThroughAll, LimitChanges: 10000})
	must(t, "ReadCommitWindow", err)
	return txState{Rows: rows, Max: max, Commits: cs}
}

// txSortRows sorts rows by id: the TX cases check which rows a scan sees,
// and leave their order to SCAN-1's cases.
func txSortRows(rows []driver.Row) {
	slices.SortFunc(rows, func(a, b driver.Row) int { return strings.Compare(a.ID, b.ID) })
}

// txExpectRow checks GetRow(p, todos, id) through conn: want nil = absent.
func txExpectRow(t T, conn driver.Conn, p, id, what string, want *driver.Row) {
	t.Helper()
	got, found, err := conn.GetRow(t.Context(), p, tTodos, id)
	must(t, what+": GetRow", err)
	switch {
	case want == nil && found:
		t.Errorf("%s: row %q should not be visible, got %+v", what, id, got)
	case want != nil && !found:
		t.Errorf("%s: row %q not found", what, id)
	case want != nil:
		expectEqual(t, what+": row "+id, *want, got)
	}
}

// txExpectTxRow checks GetRow(todos, id) inside tx: want nil = absent.
func txExpectTxRow(t T, tx driver.Tx, id, what string, want *driver.Row) {
	t.Helper()
	got, found, err := tx.GetRow(t.Context(), tTodos, id)
	must(t, what+": Tx.GetRow", err)
	switch {
	case want == nil && found:
		t.Errorf("%s: row %q should not be visible in the Tx, got %+v", what, id, got)
	case want != nil && !found:
		t.Errorf("%s: row %q not found in the Tx", what, id)
	case want != nil:
		expectEqual(t, what+": row "+id+" in the Tx", *want, got)
	}
}

// txStageMixed stages, in tx on a partition holding keep and gone (both
// committed), a replacement of keep, a new row, a delete of gone, one commit
// recording the three changes, and an applied result under (c1, key). It
// returns the replacement, the new row and the commit input.
func txStageMixed(t T, tx driver.Tx, keep, gone driver.Row, key string) (driver.Row, driver.Row, driver.CommitInput, int64) {
	t.Helper()
	ctx := t.Context()
	changed, added := txRetitled(keep, "changed"), todo("added", txProject, "o")
	must(t, "UpsertRow (replace)", tx.UpsertRow(ctx, tTodos, changed))
	must(t, "UpsertRow (new)", tx.UpsertRow(ctx, tTodos, added))
	must(t, "DeleteRow", tx.DeleteRow(ctx, tTodos, gone.ID))
	in := driver.CommitInput{ClientID: "c1", ClientCommitID: key, ActorID: "a1", CreatedAtMs: 1700000000500,
		Changes: []driver.Change{upsertChange(tTodos, changed), upsertChange(tTodos, added), deleteChange(tTodos, gone)}}
	seq, err := tx.AppendCommit(ctx, in)
	must(t, "AppendCommit", err)
	must(t, "PutPushResult", tx.PutPushResult(ctx, "c1", key, prApplied(seq, key)))
	return changed, added, in, seq
}

// txExpectFinished checks that every Tx method of a finished tx fails with
// tx_finished and writes nothing, and that Rollback is a no-op (TX-5).
// The partition must hold the committed todo existing.
func txExpectFinished(t T, conn driver.Conn, tx driver.Tx, state string, existing driver.Row) {
	t.Helper()
	ctx := t.Context()
	max, err := conn.MaxCommitSeq(ctx, tx.Partition())
	must(t, "MaxCommitSeq", err)
	late := todo("late", txProject, "o")
	ops := []struct {
		name string
		call func() error
	}{
		{"GetRow", func() error { _, _, err := tx.GetRow(ctx, tTodos, existing.ID); return err }},
		{"ScanRows", func() error {
			_, err := tx.ScanRows(ctx, driver.ScanQuery{Table: tTodos, Filter: driver.ScopeFilter{"project": {txProject}}, Limit: 10})
			return err
		}},
		{"GetPushResult", func() error { _, _, err := tx.GetPushResult(ctx, "c1", "k"); return err }},
		{"UpsertRow", func() error { return tx.UpsertRow(ctx, tTodos, late) }},
		{"DeleteRow", func() error { return tx.DeleteRow(ctx, tTodos, existing.ID) }},
		{"AppendCommit", func() error {
			_, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "late", CreatedAtMs: 1,
				Changes: []driver.Change{upsertChange(tTodos, late)}})
			return err
		}},
		{"PutPushResult", func() error { return tx.PutPushResult(ctx, "c1", "late-put", prRejected()) }},
		{"CommitRejected", func() error { return tx.CommitRejected(ctx, "c1", "late-rejected", prRejected()) }},
		{"Commit", func() error { return tx.Commit(ctx) }},
	}
	for _, op := range ops {
		expectCode(t, fmt.Sprintf("TX-5: %s after %s", op.name, state), op.call(), driver.CodeTxFinished)
	}
	for i := range 2 {
		if err := tx.Rollback(ctx); err != nil {
			t.Errorf("TX-5: Rollback #%d after %s must be a no-op, got %v", i+1, state, err)
		}
	}
	txExpectRow(t, conn, tx.Partition(), existing.ID, "TX-5: DeleteRow on a finished Tx deleted nothing", &existing)
	txExpectRow(t, conn, tx.Partition(), "late", "TX-5: UpsertRow on a finished Tx wrote nothing", nil)
	prExpectAbsent(t, conn, tx.Partition(), "late-put", "TX-5: PutPushResult on a finished Tx")
	prExpectAbsent(t, conn, tx.Partition(), "late-rejected", "TX-5: CommitRejected on a finished Tx")
	got, err := conn.MaxCommitSeq(ctx, tx.Partition())
	must(t, "MaxCommitSeq", err)
	expectEqual(t, "TX-5: AppendCommit on a finished Tx allocated nothing", max, got)
}

func init() {
	register(
		// Catches: a Commit that loses part of the Tx (a delete, the
		// commit's changes, the result).
		Case{Name: "TX-2/commit-publishes-every-write", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			keep, gone := todo("keep", txProject, "o"), todo("gone", txProject, "o")
			push(t, conn, "p1", tTodos, keep, gone)
			tx := begin(t, conn, "p1")
			defer func() { _ = tx.Rollback(context.Background()) }()
			changed, added, in, seq := txStageMixed(t, tx, keep, gone, "k")
			expectEqual(t, "TX-2: seq", int64(2), seq)
			commit(t, tx)
			txExpectRow(t, conn, "p1", "keep", "TX-2 (replaced)", &changed)
			txExpectRow(t, conn, "p1", "added", "TX-2 (added)", &added)
			txExpectRow(t, conn, "p1", "gone", "TX-2 (deleted)", nil)
			got := txSnapshot(t, conn, "p1")
			expectEqual(t, "TX-2: scanned rows", []driver.Row{added, changed}, got.Rows)
			expectEqual(t, "TX-2: MaxCommitSeq", int64(2), got.Max)
			if len(got.Commits) == 2 {
				expectEqual(t, "TX-2: the committed log entry", driver.Commit{Seq: 2, ClientID: in.ClientID,
					ClientCommitID: in.ClientCommitID, ActorID: in.ActorID, CreatedAtMs: in.CreatedAtMs, Changes: in.Changes}, got.Commits[1])
			} else {
				t.Errorf("TX-2: window read returned seqs %v, want [1 2]", seqs(got.Commits))
			}
			prExpectStored(t, conn, "p1", "k", "TX-2", prApplied(2, "k"))
		}},
		// Catches: a Rollback that keeps any staged write.
		Case{Name: "TX-2/rollback-discards-every-write", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			keep, gone := todo("keep", txProject, "o"), todo("gone", txProject, "o")
			push(t, conn, "p1", tTodos, keep, gone)
			before := txSnapshot(t, conn, "p1")
			tx := begin(t, conn, "p1")
			defer func() { _ = tx.Rollback(context.Background()) }()
			txStageMixed(t, tx, keep, gone, "k")
			must(t, "Rollback", tx.Rollback(t.Context()))
			expectEqual(t, "TX-2: store after a rollback", before, txSnapshot(t, conn, "p1"))
			txExpectRow(t, conn, "p1", "keep", "TX-2 (replace rolled back)", &keep)
			txExpectRow(t, conn, "p1", "gone", "TX-2 (delete rolled back)", &gone)
			txExpectRow(t, conn, "p1", "added", "TX-2 (insert rolled back)", nil)
			prExpectAbsent(t, conn, "p1", "k", "TX-2 (result rolled back)")
		}},
		// Catches: a Commit whose parts become visible one after another
		// (rows before the log, the log before the result, one row first).
		Case{Name: "TX-2/commit-visible-at-once", Run: txCommitAtomic},

		// Catches: reads inside a Tx that go to committed state only
		// (another connection, a snapshot taken at Begin).
		Case{Name: "TX-3/reads-see-own-writes", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			keep, gone, moved := todo("keep", txProject, "o"), todo("gone", txProject, "o"), todo("moved", txProject, "o")
			push(t, conn, "p1", tTodos, keep, gone, moved)
			tx := begin(t, conn, "p1")
			defer func() { _ = tx.Rollback(context.Background()) }()
			changed, added, _, seq := txStageMixed(t, tx, keep, gone, "k")
			movedTo := todo("moved", "elsewhere", "o")
			must(t, "UpsertRow (re-scope)", tx.UpsertRow(ctx, tTodos, movedTo))
			txExpectTxRow(t, tx, "keep", "TX-3 (replaced)", &changed)
			txExpectTxRow(t, tx, "added", "TX-3 (added)", &added)
			txExpectTxRow(t, tx, "gone", "TX-3 (deleted)", nil)
			txExpectTxRow(t, tx, "moved", "TX-3 (re-scoped)", &movedTo)
			rows, err := tx.ScanRows(ctx, driver.ScanQuery{Table: tTodos, Filter: driver.ScopeFilter{"project": {txProject}}, Limit: 100})
			must(t, "Tx.ScanRows", err)
			txSortRows(rows)
			expectEqual(t, "TX-3: scan of the old scope inside the Tx", []driver.Row{added, changed}, rows)
			rows, err = tx.ScanRows(ctx, driver.ScanQuery{Table: tTodos, Filter: driver.ScopeFilter{"project": {"elsewhere"}}, Limit: 100})
			must(t, "Tx.ScanRows", err)
			expectEqual(t, "TX-3: scan of the new scope inside the Tx", []driver.Row{movedTo}, rows)
			got, found, err := tx.GetPushResult(ctx, "c1", "k")
			must(t, "Tx.GetPushResult", err)
			expectEqual(t, "TX-3: staged result found in the Tx", true, found)
			prExpectExact(t, "TX-3: staged result", prApplied(seq, "k"), got)
			// Delete, then re-insert with other values, in the same Tx.
			must(t, "DeleteRow", tx.DeleteRow(ctx, tTodos, "added"))
			txExpectTxRow(t, tx, "added", "TX-3 (deleted again)", nil)
			again := txRetitled(added, "again")
			must(t, "UpsertRow", tx.UpsertRow(ctx, tTodos, again))
			txExpectTxRow(t, tx, "added", "TX-3 (re-inserted)", &again)
		}},

		// Catches: writes applied outside the Tx (autocommit), or reads
		// outside it that see the writer's uncommitted state.
		Case{Name: "TX-4/nothing-visible-before-commit", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			keep, gone := todo("keep", txProject, "o"), todo("gone", txProject, "o")
			push(t, conn, "p1", tTodos, keep, gone)
			before := txSnapshot(t, conn, "p1")
			tx := begin(t, conn, "p1")
			defer func() { _ = tx.Rollback(context.Background()) }()
			changed, added, _, _ := txStageMixed(t, tx, keep, gone, "k")
			expectEqual(t, "TX-4: store seen from outside while the Tx is open", before, txSnapshot(t, conn, "p1"))
			txExpectRow(t, conn, "p1", "keep", "TX-4 (replace not visible)", &keep)
			txExpectRow(t, conn, "p1", "gone", "TX-4 (delete not visible)", &gone)
			txExpectRow(t, conn, "p1", "added", "TX-4 (insert not visible)", nil)
			prExpectAbsent(t, conn, "p1", "k", "TX-4 (result not visible)")
			commit(t, tx)
			txExpectRow(t, conn, "p1", "keep", "TX-4 (visible after commit)", &changed)
			txExpectRow(t, conn, "p1", "added", "TX-4 (visible after commit)", &added)
		}},
		// Catches: a rollback that restores a snapshot (losing writes made
		// outside meanwhile), or Conn-level writes inside the open Tx.
		Case{Name: "TX-4/outside-writes-survive-rollback", Run: txOutsideWritesSurvive},

		// Catches: a finished Tx that still reads or writes, or a second
		// Rollback that errors.
		Case{Name: "TX-5/finished-after-commit", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			push(t, conn, "p1", tTodos, todo("a", txProject, "o"))
			tx := begin(t, conn, "p1")
			defer func() { _ = tx.Rollback(context.Background()) }()
			stage(t, tx, tTodos, todo("b", txProject, "o"))
			commit(t, tx)
			txExpectFinished(t, conn, tx, "Commit", todo("a", txProject, "o"))
		}},
		Case{Name: "TX-5/finished-after-rollback", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			push(t, conn, "p1", tTodos, todo("a", txProject, "o"))
			tx := begin(t, conn, "p1")
			defer func() { _ = tx.Rollback(context.Background()) }()
			stage(t, tx, tTodos, todo("b", txProject, "o"))
			must(t, "Rollback", tx.Rollback(t.Context()))
			txExpectFinished(t, conn, tx, "Rollback", todo("a", txProject, "o"))
		}},
	)
}

// txCommitAtomic commits rounds of {row a, row b, commit k, result k} while
// a reader checks, in an order that exposes a partial commit: the max seq,
// then a (its version must reach it), the result of the max (must exist),
// then b (at least a's version), then the max again (at least b's version).
func txCommitAtomic(t T, h Harness) {
	ctx := t.Context()
	conn := openStore(t, h)
	const rounds = 15
	var (
		finished  atomic.Bool
		violation string
		polls     int
		wg        gosync.WaitGroup
	)
	stop := func() { finished.Store(true); wg.Wait() }
	defer stop() // also when a setup failure ends the case early
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			last := finished.Load()
			polls++
			if violation = txObserveAtomic(ctx, conn); violation != "" || last {
				return
			}
		}
	}()
	for k := int64(1); k <= rounds; k++ {
		tx, err := conn.Begin(ctx, "p1")
		if err != nil {
			t.Errorf("Begin: %v", err)
			break
		}
		a, b := todo("a", txProject, "o"), todo("b", txProject, "o")
		a.ServerVersion, b.ServerVersion = k, k
		seq := stage(t, tx, tTodos, a, b)
		if err := tx.PutPushResult(ctx, "c1", fmt.Sprintf("k%d", seq), prApplied(seq, "atomic")); err != nil {
			_ = tx.Rollback(context.Background())
			t.Errorf("PutPushResult: %v", err)
			break
		}
		if err := tx.Commit(ctx); err != nil {
			t.Errorf("Commit: %v", err)
			break
		}
	}
	stop()
	if violation != "" {
		t.Errorf("TX-2: a reader saw a partly visible commit: %s", violation)
	}
	t.Logf("TX-2: %d observations during %d commits", polls, rounds)
}

// txObserveAtomic makes one observation for txCommitAtomic.
func txObserveAtomic(ctx context.Context, conn driver.Conn) string {
	m, err := conn.MaxCommitSeq(ctx, "p1")
	if err != nil {
		return fmt.Sprintf("MaxCommitSeq: %v", err)
	}
	a, fa, err := conn.GetRow(ctx, "p1", tTodos, "a")
	if err != nil {
		return fmt.Sprintf("GetRow: %v", err)
	}
	if m > 0 {
		if !fa || a.ServerVersion < m {
			return fmt.Sprintf("MaxCommitSeq %d, then row a found=%v version %d", m, fa, a.ServerVersion)
		}
		r, found, err := conn.GetPushResult(ctx, "p1", "c1", fmt.Sprintf("k%d", m))
		if err != nil {
			return fmt.Sprintf("GetPushResult: %v", err)
		}
		if !found || r.CommitSeq != m {
			return fmt.Sprintf("MaxCommitSeq %d, then its push result found=%v seq %d", m, found, r.CommitSeq)
		}
	}
	b, fb, err := conn.GetRow(ctx, "p1", tTodos, "b")
	if err != nil {
		return fmt.Sprintf("GetRow: %v", err)
	}
	if fa && (!fb || b.ServerVersion < a.ServerVersion) {
		return fmt.Sprintf("row a at version %d, then row b found=%v version %d", a.ServerVersion, fb, b.ServerVersion)
	}
	m2, err := conn.MaxCommitSeq(ctx, "p1")
	if err != nil {
		return fmt.Sprintf("MaxCommitSeq: %v", err)
	}
	if fb && m2 < b.ServerVersion {
		return fmt.Sprintf("row b at version %d, then MaxCommitSeq %d", b.ServerVersion, m2)
	}
	return ""
}

// txOutsideWritesSurvive opens a Tx on p1, makes writes outside it while it
// is open (a client record of p1, a push on p2; on engines with a single
// writer they wait for the Tx), rolls the Tx back, then pushes on p1 again:
// every outside write must survive.
func txOutsideWritesSurvive(t T, h Harness) {
	ctx := t.Context()
	conn := openStore(t, h)
	before := todo("before", txProject, "o")
	push(t, conn, "p1", tTodos, before)
	rec := driver.ClientRecord{ClientID: "client-1", ActorID: "actor-1", WireVersion: 2, Cursor: 1, UpdatedAtMs: 1700000000001,
		Subscriptions: []driver.Subscription{{ID: "s1", Table: tTodos, Scopes: driver.ScopeFilter{"project": {txProject}}}}}

	tx := begin(t, conn, "p1")
	var wg gosync.WaitGroup
	defer func() { _ = tx.Rollback(context.Background()); wg.Wait() }()
	stage(t, tx, tTodos, todo("rolled-back", txProject, "o"))
	var recErr, p2Err error
	other := todo("other", txProject, "o")
	wg.Add(2)
	go func() { defer wg.Done(); recErr = conn.PutClientRecord(ctx, "p1", rec) }()
	go func() {
		defer wg.Done()
		tx2, err := conn.Begin(ctx, "p2")
		if err != nil {
			p2Err = err
			return
		}
		if err = tx2.UpsertRow(ctx, tTodos, other); err == nil {
			_, err = tx2.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "other", CreatedAtMs: 1,
				Changes: []driver.Change{upsertChange(tTodos, other)}})
		}
		if err == nil {
			err = tx2.Commit(ctx)
		}
		if err != nil {
			_ = tx2.Rollback(context.Background())
		}
		p2Err = err
	}()
	must(t, "Rollback", tx.Rollback(ctx))
	wg.Wait()
	must(t, "PutClientRecord while a Tx of the partition was open", recErr)
	must(t, "push on p2 while a Tx of p1 was open", p2Err)
	after := todo("after", txProject, "o")
	push(t, conn, "p1", tTodos, after)

	got, found, err := conn.GetClientRecord(ctx, "p1", "client-1")
	must(t, "GetClientRecord", err)
	expectEqual(t, "TX-4: client record written outside the rolled-back Tx exists", true, found)
	expectEqual(t, "TX-4: client record written outside the rolled-back Tx", rec, got)
	txExpectRow(t, conn, "p2", "other", "TX-4 (push on another partition)", &other)
	txExpectRow(t, conn, "p1", "before", "TX-4 (committed before the Tx)", &before)
	txExpectRow(t, conn, "p1", "after", "TX-4 (committed after the rollback)", &after)
	txExpectRow(t, conn, "p1", "rolled-back", "TX-4 (rolled back)", nil)
	p2max, err := conn.MaxCommitSeq(ctx, "p2")
	must(t, "MaxCommitSeq", err)
	expectEqual(t, "TX-4: MaxCommitSeq of p2", int64(1), p2max)
}
