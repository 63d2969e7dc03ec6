package conformance

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/syncstore/syncstore/driver"
)

// Cases for WIN-1…WIN-3: which commits and which changes a window read
// returns. WIN-4…WIN-6 are in core_window_limits.go. WIN-7 (candidates
// come from the change-scope index, never a scan of the log) is checked per
// driver against the engine's plan output, so it has no case here.
//
// Each case writes its log through core operations (winWrite), keeps what
// it wrote, and computes the expected result with winModel, a direct
// transcription of WIN-1…WIN-4 and WIN-6; where a literal is clearer the
// case states the expected row ids as well.

func init() {
	register(
		Case{Name: "WIN-1/seq-bounds-exact", Run: winSeqBoundsExact},
		Case{Name: "WIN-1/oldest-first-no-duplicates", Run: winOldestFirstNoDuplicates},
		Case{Name: "WIN-2/only-matching-changes-in-original-order", Run: winOnlyMatchingChanges},
		Case{Name: "WIN-2/commit-metadata-exact", Run: winCommitMetadataExact},
		Case{Name: "WIN-3/extra-stored-keys-ignored", Run: winExtraKeysIgnored},
		Case{Name: "WIN-3/keys-and-values-or", Run: winKeysAndValuesOr},
		Case{Name: "WIN-3/unknown-variable-matches-nothing", Run: winUnknownVariable},
		Case{Name: "WIN-3/empty-value-list-matches-nothing", Run: winEmptyValueList},
		Case{Name: "WIN-3/thousands-of-values", Run: winThousandsOfValues},
		Case{Name: "WIN-3/values-compare-bytewise", Run: winValuesCompareBytewise},
	)
}

// winAll is a limit no case reaches, so a read returns the whole window.
const winAll = 10000

// winOp is one row write of a setup commit: an upsert of row into table,
// or, with del, the delete of row (the change then carries row's scopes).
type winOp struct {
	table string
	row   driver.Row
	del   bool
}

func winUp(table string, row driver.Row) winOp  { return winOp{table: table, row: row} }
func winDel(table string, row driver.Row) winOp { return winOp{table: table, row: row, del: true} }

// winMeta returns plain commit metadata with a unique client commit id.
func winMeta(createdAtMs int64) driver.CommitInput {
	return driver.CommitInput{ClientID: "c1", ClientCommitID: fmt.Sprintf("cc-%d", nextID()),
		ActorID: "a1", CreatedAtMs: createdAtMs}
}

// winWrite applies ops in one Tx on partition p, appends one commit with
// meta's metadata recording them in order, commits, and returns the commit
// as the log holds it (every change). No ops = an empty commit.
func winWrite(t T, conn driver.Conn, p string, meta driver.CommitInput, ops ...winOp) driver.Commit {
	t.Helper()
	ctx := t.Context()
	tx := begin(t, conn, p)
	defer func() { _ = tx.Rollback(context.Background()) }() // no-op after Commit (TX-5)
	meta.Changes = nil
	for _, op := range ops {
		if op.del {
			must(t, "setup: DeleteRow", tx.DeleteRow(ctx, op.table, op.row.ID))
			meta.Changes = append(meta.Changes, deleteChange(op.table, op.row))
			continue
		}
		must(t, "setup: UpsertRow", tx.UpsertRow(ctx, op.table, op.row))
		meta.Changes = append(meta.Changes, upsertChange(op.table, op.row))
	}
	seq, err := tx.AppendCommit(ctx, meta)
	must(t, "setup: AppendCommit", err)
	commit(t, tx)
	return driver.Commit{Seq: seq, ClientID: meta.ClientID, ClientCommitID: meta.ClientCommitID,
		ActorID: meta.ActorID, CreatedAtMs: meta.CreatedAtMs, Changes: meta.Changes}
}

// winMatch reports whether scopes match filter (WIN-3): every filter key is
// present in scopes with one of the listed values. Extra stored keys are
// ignored; an empty list matches nothing.
func winMatch(scopes driver.Scopes, filter driver.ScopeFilter) bool {
	for k, vals := range filter {
		v, ok := scopes[k]
		if !ok || !slices.Contains(vals, v) {
			return false
		}
	}
	return true
}

// winFmt formats a filter for messages, keys sorted, long value lists
// abbreviated ("[v1 v2 v3 … 3002 values]").
func winFmt(f driver.ScopeFilter) string {
	var b strings.Builder
	b.WriteString("{")
	for i, k := range slices.Sorted(maps.Keys(f)) {
		if i > 0 {
			b.WriteString(" ")
		}
		vals := f[k]
		if len(vals) > 6 {
			fmt.Fprintf(&b, "%s:%+q … %d values", k, vals[:3], len(vals))
		} else {
			fmt.Fprintf(&b, "%s:%+q", k, vals)
		}
	}
	b.WriteString("}")
	return b.String()
}

// winModel returns what ReadCommitWindow(q) must return when log holds
// the partition's retained commits, ascending by seq: commits with
// AfterSeq < seq ≤ ThroughSeq (WIN-1) having ≥ 1 change of q.Table that
// matches q.Filter, with only those changes in order (WIN-2, WIN-3),
// stopping after the commit that brings the changes to LimitChanges
// (WIN-4). Empty commits never match (WIN-6).
func winModel(log []driver.Commit, q driver.WindowQuery) []driver.Commit {
	var out []driver.Commit
	n := 0
	for _, c := range log {
		if c.Seq <= q.AfterSeq || c.Seq > q.ThroughSeq {
			continue
		}
		var matched []driver.Change
		for _, ch := range c.Changes {
			if ch.Table == q.Table && winMatch(ch.Scopes, q.Filter) {
				matched = append(matched, ch)
			}
		}
		if len(matched) == 0 {
			continue
		}
		c.Changes = matched
		out = append(out, c)
		if n += len(matched); n >= q.LimitChanges {
			break
		}
	}
	return out
}

// winRead calls ReadCommitWindow or fails the case.
func winRead(t T, conn driver.Conn, p string, q driver.WindowQuery) []driver.Commit {
	t.Helper()
	got, err := conn.ReadCommitWindow(t.Context(), p, q)
	if err != nil {
		t.Fatalf("ReadCommitWindow(%s, %v, (%d, %d], limit %d): %v", q.Table, winFmt(q.Filter), q.AfterSeq,
			q.ThroughSeq, q.LimitChanges, err)
	}
	return got
}

// winQ returns a window query over the whole log with no effective limit.
func winQ(table string, filter driver.ScopeFilter, through int64) driver.WindowQuery {
	return driver.WindowQuery{Table: table, Filter: filter, ThroughSeq: through, LimitChanges: winAll}
}

// winRowIDs flattens the row ids of the commits' changes, in order.
func winRowIDs(cs []driver.Commit) []string {
	var out []string
	for _, c := range cs {
		for _, ch := range c.Changes {
			out = append(out, ch.RowID)
		}
	}
	return out
}

// winCheck reads q and compares the result with winModel(log, q) and,
// when wantIDs is not nil, its change row ids with wantIDs.
func winCheck(t T, conn driver.Conn, p string, log []driver.Commit, q driver.WindowQuery, rule string, wantIDs []string) {
	t.Helper()
	got := winRead(t, conn, p, q)
	what := fmt.Sprintf("%s: ReadCommitWindow(%s, %v, (%d, %d], limit %d)", rule, q.Table, winFmt(q.Filter), q.AfterSeq,
		q.ThroughSeq, q.LimitChanges)
	if wantIDs != nil {
		expectEqual(t, what+" change row ids", wantIDs, winRowIDs(got))
	}
	expectEqual(t, what, winModel(log, q), got)
}

// Catches: `seq >= afterSeq` or `seq < throughSeq` (an off-by-one at either
// end of the window), or a throughSeq that is ignored.
func winSeqBoundsExact(t T, h Harness) {
	conn := openStore(t, h)
	var log []driver.Commit
	for i := range 6 {
		id := fmt.Sprintf("t%d", i+1)
		log = append(log, winWrite(t, conn, "p1", winMeta(1000+int64(i)), winUp(tTodos, todo(id, "p7", "u1"))))
	}
	f := driver.ScopeFilter{"project": {"p7"}}
	for after := int64(0); after <= 6; after++ {
		for through := after; through <= 7; through++ {
			q := winQ(tTodos, f, through)
			q.AfterSeq = after
			var want []int64
			for s := after + 1; s <= min(through, 6); s++ {
				want = append(want, s)
			}
			got := winRead(t, conn, "p1", q)
			expectEqual(t, fmt.Sprintf("WIN-1: seqs of window (%d, %d]", after, through), want, seqs(got))
			expectEqual(t, fmt.Sprintf("WIN-1: window (%d, %d]", after, through), winModel(log, q), got)
		}
	}
}

// Catches: commits ordered by scope value or index key instead of seq, and
// a commit or change repeated once per matching change, key or value (a
// join over the scope index without de-duplication).
func winOldestFirstNoDuplicates(t T, h Harness) {
	conn := openStore(t, h)
	log := []driver.Commit{
		winWrite(t, conn, "p1", winMeta(1), winUp(tTodos, todo("a", "p8", "u1"))),
		winWrite(t, conn, "p1", winMeta(2), winUp(tTodos, todo("b", "p7", "u1")), winUp(tTodos, todo("c", "p7", "u2"))),
		winWrite(t, conn, "p1", winMeta(3), winUp(tTodos, todo("d", "p8", "u2")), winUp(tTodos, todo("e", "p7", "u1"))),
		winWrite(t, conn, "p1", winMeta(4), winUp(tTodos, todo("f", "p9", "u1"))),
	}
	cases := []struct {
		filter driver.ScopeFilter
		want   []string
	}{
		{driver.ScopeFilter{"project": {"p8", "p7"}}, []string{"a", "b", "c", "d", "e"}},
		{driver.ScopeFilter{"project": {"p7", "p8", "p9"}, "owner": {"u2", "u1"}}, []string{"a", "b", "c", "d", "e", "f"}},
		{driver.ScopeFilter{"owner": {"u2", "u1", "u2"}}, []string{"a", "b", "c", "d", "e", "f"}},
		{driver.ScopeFilter{"project": {"p7"}}, []string{"b", "c", "e"}},
	}
	for _, c := range cases {
		got := winRead(t, conn, "p1", winQ(tTodos, c.filter, 4))
		for i := 1; i < len(got); i++ {
			if got[i].Seq <= got[i-1].Seq {
				t.Errorf("WIN-1: filter %v: seqs %v are not strictly ascending (oldest first, no duplicates)", winFmt(c.filter), seqs(got))
				break
			}
		}
		expectEqual(t, fmt.Sprintf("WIN-1: filter %v: change row ids", winFmt(c.filter)), c.want, winRowIDs(got))
		expectEqual(t, fmt.Sprintf("WIN-1: filter %v", winFmt(c.filter)), winModel(log, winQ(tTodos, c.filter, 4)), got)
	}
}

// Catches: a matching commit returned with all its changes (other tables,
// other scopes), changes re-sorted by row id or table, or a commit returned
// when only another table's changes match.
func winOnlyMatchingChanges(t T, h Harness) {
	conn := openStore(t, h)
	log := []driver.Commit{
		winWrite(t, conn, "p1", winMeta(1),
			winUp(tTodos, todo("z", "p7", "u1")),
			winUp(tTodos, todo("m", "p8", "u1")),
			winUp(tUsers, user("x1", "o1", "x1@example.com")),
			winUp(tTodos, todo("a", "p7", "u2")),
			winUp(tUsers, user("x2", "o2", "x2@example.com"))),
		winWrite(t, conn, "p1", winMeta(2), winUp(tUsers, user("x3", "o1", "x3@example.com"))),
		winWrite(t, conn, "p1", winMeta(3), winUp(tTodos, todo("k", "p8", "u2")), winUp(tTodos, todo("z", "p7", "u1"))),
	}
	cases := []struct {
		table    string
		filter   driver.ScopeFilter
		wantSeqs []int64
		wantIDs  []string
	}{
		{tTodos, driver.ScopeFilter{"project": {"p7"}}, []int64{1, 3}, []string{"z", "a", "z"}},
		{tTodos, driver.ScopeFilter{"project": {"p8"}}, []int64{1, 3}, []string{"m", "k"}},
		{tTodos, driver.ScopeFilter{"owner": {"u1"}}, []int64{1, 3}, []string{"z", "m", "z"}},
		{tUsers, driver.ScopeFilter{"org": {"o1"}}, []int64{1, 2}, []string{"x1", "x3"}},
		{tUsers, driver.ScopeFilter{"org": {"o2"}}, []int64{1}, []string{"x2"}},
	}
	for _, c := range cases {
		q := winQ(c.table, c.filter, 3)
		got := winRead(t, conn, "p1", q)
		what := fmt.Sprintf("WIN-2: %s %v", c.table, winFmt(c.filter))
		expectEqual(t, what+": seqs", c.wantSeqs, seqs(got))
		expectEqual(t, what+": change row ids", c.wantIDs, winRowIDs(got))
		expectEqual(t, what, winModel(log, q), got)
	}
}

// Catches: commit metadata swapped between commits, truncated, re-encoded,
// zeroed, or taken from the wrong row of a join.
func winCommitMetadataExact(t T, h Harness) {
	conn := openStore(t, h)
	metas := []driver.CommitInput{
		{ClientID: "client-é😀", ClientCommitID: "commit/1 'x' \"y\"", ActorID: "actor\tü", CreatedAtMs: 1},
		{CreatedAtMs: 1700000000123}, // a commit made by the server: empty ids
		{ClientID: "c3", ClientCommitID: "cc3", ActorID: "a3", CreatedAtMs: 253402300799999},
		{ClientID: "c4", ClientCommitID: "cc3", ActorID: "a3", CreatedAtMs: 253402300799999},
	}
	var want []driver.Commit
	for i, m := range metas {
		want = append(want, winWrite(t, conn, "p1", m, winUp(tTodos, todo(fmt.Sprintf("t%d", i), "p7", "u1"))))
	}
	got := winRead(t, conn, "p1", winQ(tTodos, driver.ScopeFilter{"project": {"p7"}}, 4))
	expectEqual(t, "WIN-2: commits with their metadata", want, got)
	for i := range min(len(got), len(want)) {
		w, g := want[i], got[i]
		if g.Seq != w.Seq || g.ClientID != w.ClientID || g.ClientCommitID != w.ClientCommitID ||
			g.ActorID != w.ActorID || g.CreatedAtMs != w.CreatedAtMs {
			t.Errorf("WIN-2: commit %d metadata = {%d %q %q %q %d}, want {%d %q %q %q %d}", i, g.Seq, g.ClientID,
				g.ClientCommitID, g.ActorID, g.CreatedAtMs, w.Seq, w.ClientID, w.ClientCommitID, w.ActorID, w.CreatedAtMs)
		}
	}
}

// winFilterLog writes the log the WIN-3 cases query (one todo per commit,
// then a users row whose org value equals a project value):
//
//	1: t1 (project p7, owner u1)   2: t2 (p7, u2)   3: t3 (p8, u1)
//	4: t4 (p9, u2)                 5: t5 (p8, owner "p7")   6: users x (org p7)
func winFilterLog(t T, conn driver.Conn) []driver.Commit {
	t.Helper()
	rows := []driver.Row{todo("t1", "p7", "u1"), todo("t2", "p7", "u2"), todo("t3", "p8", "u1"),
		todo("t4", "p9", "u2"), todo("t5", "p8", "p7")}
	var log []driver.Commit
	for i, r := range rows {
		log = append(log, winWrite(t, conn, "p1", winMeta(int64(i)), winUp(tTodos, r)))
	}
	return append(log, winWrite(t, conn, "p1", winMeta(9), winUp(tUsers, user("x", "p7", "x@example.com"))))
}

// winFilterCase is one filter query of the WIN-3 cases with the row ids it
// must return.
type winFilterCase struct {
	table  string
	filter driver.ScopeFilter
	want   []string
}

func winRunFilterCases(t T, h Harness, rule string, cases []winFilterCase) {
	conn := openStore(t, h)
	log := winFilterLog(t, conn)
	for _, c := range cases {
		want := c.want
		if want == nil {
			want = []string{}
		}
		winCheck(t, conn, "p1", log, winQ(c.table, c.filter, int64(len(log))), rule, want)
	}
}

// Catches: a filter that must equal the stored scopes exactly, so stored
// keys the filter does not name (owner) make a change miss.
func winExtraKeysIgnored(t T, h Harness) {
	winRunFilterCases(t, h, "WIN-3", []winFilterCase{
		{tTodos, driver.ScopeFilter{"project": {"p7"}}, []string{"t1", "t2"}},
		{tTodos, driver.ScopeFilter{"owner": {"u1"}}, []string{"t1", "t3"}},
		{tUsers, driver.ScopeFilter{"org": {"p7"}}, []string{"x"}},
	})
}

// Catches: two keys joined with OR instead of AND, only the first value of
// a list used, or a value matched under any variable (t5's owner "p7" is
// not project p7).
func winKeysAndValuesOr(t T, h Harness) {
	winRunFilterCases(t, h, "WIN-3", []winFilterCase{
		{tTodos, driver.ScopeFilter{"project": {"p7"}, "owner": {"u1"}}, []string{"t1"}},
		{tTodos, driver.ScopeFilter{"project": {"p7", "p8"}, "owner": {"u2"}}, []string{"t2"}},
		{tTodos, driver.ScopeFilter{"project": {"p7", "p9"}}, []string{"t1", "t2", "t4"}},
		{tTodos, driver.ScopeFilter{"project": {"p9", "p7"}, "owner": {"u2", "u1"}}, []string{"t1", "t2", "t4"}},
		{tTodos, driver.ScopeFilter{"owner": {"p7"}}, []string{"t5"}},
		{tTodos, driver.ScopeFilter{"project": {"p8"}, "owner": {"p7"}}, []string{"t5"}},
		{tTodos, driver.ScopeFilter{"project": {"p9"}, "owner": {"u1"}}, nil},
	})
}

// Catches: a key the table does not have treated as "no condition", or an
// error instead of an empty result; or another table's variable (org)
// matching todos changes.
func winUnknownVariable(t T, h Harness) {
	winRunFilterCases(t, h, "WIN-3", []winFilterCase{
		{tTodos, driver.ScopeFilter{"nosuch": {"p7"}}, nil},
		{tTodos, driver.ScopeFilter{"project": {"p7"}, "nosuch": {"u1"}}, nil},
		{tTodos, driver.ScopeFilter{"org": {"p7"}}, nil},
		{tUsers, driver.ScopeFilter{"project": {"p7"}}, nil},
	})
}

// Catches: a key with an empty value list treated as "any value" (or
// dropped from the filter), or an error (V-6: the driver gets such filters
// and returns nothing).
func winEmptyValueList(t T, h Harness) {
	winRunFilterCases(t, h, "WIN-3", []winFilterCase{
		{tTodos, driver.ScopeFilter{"project": {}}, nil},
		{tTodos, driver.ScopeFilter{"project": nil}, nil},
		{tTodos, driver.ScopeFilter{"project": {"p7"}, "owner": {}}, nil},
		{tTodos, driver.ScopeFilter{"owner": nil, "project": {"p7", "p8", "p9"}}, nil},
	})
}

// winManyValues returns n distinct filter values that match nothing, with
// the given values placed at spread positions.
func winManyValues(n int, real ...string) []string {
	out := make([]string, 0, n+len(real))
	for i := range n {
		out = append(out, fmt.Sprintf("v-%05d", i))
	}
	for i, r := range real {
		pos := (i + 1) * len(out) / (len(real) + 1)
		out = slices.Insert(out, pos, r)
	}
	return append(out, real...) // the real values once more, last: duplicates must not duplicate results
}

// Catches: value lists bound as one parameter each (engine limits of 999,
// 100 or 65,535 parameters), truncated lists, or duplicate values in the
// list duplicating results (V-6: lists of any length work).
func winThousandsOfValues(t T, h Harness) {
	winRunFilterCases(t, h, "WIN-3", []winFilterCase{
		{tTodos, driver.ScopeFilter{"project": winManyValues(3000, "p9", "p7")}, []string{"t1", "t2", "t4"}},
		{tTodos, driver.ScopeFilter{"project": winManyValues(3000, "p7", "p8"), "owner": winManyValues(1500, "u2")},
			[]string{"t2"}},
		{tTodos, driver.ScopeFilter{"project": winManyValues(70000, "p8")}, []string{"t3", "t5"}},
	})
}

// winTrickyValues are distinct scope values that case-insensitive,
// accent-insensitive, pad-space or normalizing collations confuse.
var winTrickyValues = []string{"p7", "P7", "p7 ", " p7", "\u00e9", "e\u0301", "E\u0301", "\u00c9", "ß", "ss", "p7\u00a0", "\uFFFD", "😀"}

// Catches: scope values compared with a collation instead of bytewise
// (case, accents, trailing spaces, Unicode normalization).
func winValuesCompareBytewise(t T, h Harness) {
	conn := openStore(t, h)
	var log []driver.Commit
	for i, v := range winTrickyValues {
		log = append(log, winWrite(t, conn, "p1", winMeta(int64(i)), winUp(tTodos, todo(fmt.Sprintf("t%02d", i), v, "u1"))))
	}
	for i, v := range winTrickyValues {
		q := winQ(tTodos, driver.ScopeFilter{"project": {v}}, int64(len(log)))
		winCheck(t, conn, "p1", log, q, fmt.Sprintf("WIN-3 (value %+q)", v), []string{fmt.Sprintf("t%02d", i)})
	}
}
