package conformance

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/syncstore/syncstore/driver"
)

// Cases of the admin capability (docs/contract.md ADM-1, ADM-2): read-only console
// views. Client records newest first; commit metadata newest first, paged
// with an exclusive beforeSeq cursor so every page is reachable; scope
// activity counting only matching changes; row scopes lookup.

func init() {
	c := driver.CapAdmin
	register(
		// Catches: records listed oldest first, by client id, unbounded, or from another partition.
		Case{Name: "ADM-1/client-records-newest-first", Capability: c, Run: admClientRecords},
		// Catches: an inclusive or off-by-one beforeSeq cursor (pages overlap or skip a commit).
		Case{Name: "ADM-1/commit-meta-pages-newest-first", Capability: c, Run: admCommitMetaPages},
		// Catches: pruned commits listed, or a wrong change count.
		Case{Name: "ADM-1/commit-meta-after-pruning", Capability: c, Run: admCommitMetaPruned},
		// Catches: counting every change of a matching commit, other tables, or seqs outside (after, through].
		Case{Name: "ADM-1/scope-activity-counts-matching-changes", Capability: c, Run: admScopeActivity},
		// Catches: stale scopes after a move, a deleted row still found, or rows of another partition.
		Case{Name: "ADM-1/row-scopes", Capability: c, Run: admRowScopes},
		// Catches: paging by time alone (records sharing a time skipped or repeated), an inclusive position, a limit ignored.
		Case{Name: "ADM-2/pages-reach-every-record-once", Capability: c, Run: admClientPages},
		// Catches: a position compared under a collation, by client id first, or required to be a stored record; bad positions accepted.
		Case{Name: "ADM-2/position-is-exclusive-and-validated", Capability: c, Run: admClientPosition},
	)
}

// admConn returns the admin half of conn or fails the case.
func admConn(t T, conn driver.Conn) driver.AdminConn {
	t.Helper()
	a, ok := conn.(driver.AdminConn)
	if !ok {
		t.Fatalf("the Conn does not implement driver.AdminConn although the case runs for capability %s", driver.CapAdmin)
	}
	return a
}

// admClient is a client record with one subscription.
func admClient(id string, updatedAt int64) driver.ClientRecord {
	return driver.ClientRecord{ClientID: id, ActorID: "actor-" + id, WireVersion: 2, Cursor: updatedAt / 10, UpdatedAtMs: updatedAt,
		Subscriptions: []driver.Subscription{{ID: "s-" + id, Table: tTodos, Scopes: driver.ScopeFilter{"project": {"pa", "pb"}}}}}
}

func admClientRecords(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	adm := admConn(t, conn)
	recs := []driver.ClientRecord{admClient("c-b", 300), admClient("c-a", 500), admClient("c-d", 100), admClient("c-c", 300), admClient("c-e", 400)}
	for _, r := range recs {
		must(t, "PutClientRecord", conn.PutClientRecord(ctx, "p1", r))
	}
	must(t, "PutClientRecord(p2)", conn.PutClientRecord(ctx, "p2", admClient("c-z", 900)))

	got, err := adm.ListClientRecords(ctx, "p1", driver.ClientRecordQuery{Limit: 10})
	must(t, "ListClientRecords", err)
	// UpdatedAtMs descending, ties by client id descending.
	want := []driver.ClientRecord{admClient("c-a", 500), admClient("c-e", 400), admClient("c-c", 300), admClient("c-b", 300), admClient("c-d", 100)}
	expectEqual(t, "ADM-1: client records newest first", want, got)

	got, err = adm.ListClientRecords(ctx, "p1", driver.ClientRecordQuery{Limit: 2})
	must(t, "ListClientRecords(limit 2)", err)
	expectEqual(t, "ADM-1: the newest two", want[:2], got)

	// A put replaces: the record moves to its new place.
	must(t, "PutClientRecord(c-d)", conn.PutClientRecord(ctx, "p1", admClient("c-d", 600)))
	got, err = adm.ListClientRecords(ctx, "p1", driver.ClientRecordQuery{Limit: 1})
	must(t, "ListClientRecords(limit 1)", err)
	expectEqual(t, "ADM-1: newest after a put", []driver.ClientRecord{admClient("c-d", 600)}, got)

	got, err = adm.ListClientRecords(ctx, "p2", driver.ClientRecordQuery{Limit: 10})
	must(t, "ListClientRecords(p2)", err)
	expectEqual(t, "ADM-1/P-1: records of p2", []driver.ClientRecord{admClient("c-z", 900)}, got)
	got, err = adm.ListClientRecords(ctx, "p404", driver.ClientRecordQuery{Limit: 10})
	must(t, "ListClientRecords(p404)", err)
	expectEqual(t, "ADM-1/P-2: records of an unknown partition", []driver.ClientRecord(nil), got)
}

// admPushCommits writes n commits to p; commit i (1-based) upserts
// (i%3)+1 todos and records client "c<i>", commit id "cc<i>", actor "a<i>"
// and time 1000+i. It returns the expected metadata, oldest first.
func admPushCommits(t T, conn driver.Conn, p string, n int) []driver.CommitMeta {
	t.Helper()
	ctx := t.Context()
	var metas []driver.CommitMeta
	for i := 1; i <= n; i++ {
		tx := begin(t, conn, p)
		var changes []driver.Change
		for k := 0; k <= i%3; k++ {
			r := todo(fmt.Sprintf("r%d-%d", i, k), "pa", "u1")
			if err := tx.UpsertRow(ctx, tTodos, r); err != nil {
				_ = tx.Rollback(context.Background())
				t.Fatalf("UpsertRow: %v", err)
			}
			changes = append(changes, upsertChange(tTodos, r))
		}
		in := driver.CommitInput{ClientID: fmt.Sprintf("c%d", i), ClientCommitID: fmt.Sprintf("cc%d", i),
			ActorID: fmt.Sprintf("a%d", i), CreatedAtMs: int64(1000 + i), Changes: changes}
		seq, err := tx.AppendCommit(ctx, in)
		if err != nil {
			_ = tx.Rollback(context.Background())
			t.Fatalf("AppendCommit: %v", err)
		}
		commit(t, tx)
		metas = append(metas, driver.CommitMeta{Seq: seq, ClientID: in.ClientID, ClientCommitID: in.ClientCommitID,
			ActorID: in.ActorID, CreatedAtMs: in.CreatedAtMs, ChangeCount: len(changes)})
	}
	return metas
}

// admNewestFirst returns metas reversed.
func admNewestFirst(metas []driver.CommitMeta) []driver.CommitMeta {
	out := make([]driver.CommitMeta, len(metas))
	for i, m := range metas {
		out[len(metas)-1-i] = m
	}
	return out
}

func admCommitMetaPages(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	adm := admConn(t, conn)
	metas := admPushCommits(t, conn, "p1", 25)
	admPushCommits(t, conn, "p2", 3)
	all := admNewestFirst(metas)

	var pages [][]driver.CommitMeta
	before := int64(0)
	for i := 0; i < 6; i++ {
		page, err := adm.ListCommitMeta(ctx, "p1", before, 7)
		must(t, "ListCommitMeta", err)
		if len(page) == 0 {
			break
		}
		pages = append(pages, page)
		before = page[len(page)-1].Seq
	}
	want := [][]driver.CommitMeta{all[0:7], all[7:14], all[14:21], all[21:25]}
	expectEqual(t, "ADM-1: pages of 7 newest first, each before the last seq of the previous", want, pages)

	page, err := adm.ListCommitMeta(ctx, "p1", 10, 3)
	must(t, "ListCommitMeta(before 10)", err)
	expectEqual(t, "ADM-1: beforeSeq is exclusive", all[16:19], page)
	page, err = adm.ListCommitMeta(ctx, "p1", 1, 3)
	must(t, "ListCommitMeta(before 1)", err)
	expectEqual(t, "ADM-1: nothing before seq 1", []driver.CommitMeta(nil), page)
	page, err = adm.ListCommitMeta(ctx, "p1", 1000, 2)
	must(t, "ListCommitMeta(before 1000)", err)
	expectEqual(t, "ADM-1: a cursor past the newest", all[0:2], page)
	page, err = adm.ListCommitMeta(ctx, "p2", 0, 10)
	must(t, "ListCommitMeta(p2)", err)
	if len(page) != 3 {
		t.Errorf("ADM-1/P-1: p2 has %d commits listed, want 3", len(page))
	}
}

func admCommitMetaPruned(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	adm := admConn(t, conn)
	metas := admPushCommits(t, conn, "p1", 6)
	must(t, "SetHorizonSeq", conn.SetHorizonSeq(ctx, "p1", 4))
	n, err := conn.PruneCommitsThrough(ctx, "p1", 4)
	must(t, "PruneCommitsThrough", err)
	if n != 4 {
		t.Fatalf("setup: PruneCommitsThrough(4) removed %d commits, want 4", n)
	}
	page, err := adm.ListCommitMeta(ctx, "p1", 0, 10)
	must(t, "ListCommitMeta", err)
	expectEqual(t, "ADM-1/HZ-2: pruned commits are not listed", admNewestFirst(metas[4:]), page)
	page, err = adm.ListCommitMeta(ctx, "p1", 5, 10)
	must(t, "ListCommitMeta(before 5)", err)
	expectEqual(t, "ADM-1/HZ-2: nothing retained before 5", []driver.CommitMeta(nil), page)
}

func admScopeActivity(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	adm := admConn(t, conn)
	// seq 1: 2 changes in pa, 1 in pb.
	push(t, conn, "p1", tTodos, todo("a", "pa", "u1"), todo("b", "pb", "u1"), todo("c", "pa", "u2"))
	// seq 2: only pb.
	push(t, conn, "p1", tTodos, todo("d", "pb", "u1"))
	// seq 3: a users change (another table) and 1 todos change in pa.
	tx := begin(t, conn, "p1")
	ua := user("ua", "pa", "x@x")
	must(t, "UpsertRow(users)", tx.UpsertRow(ctx, tUsers, ua))
	must(t, "UpsertRow(todos)", tx.UpsertRow(ctx, tTodos, todo("e", "pa", "u3")))
	_, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "cc-adm-3", CreatedAtMs: 3,
		Changes: []driver.Change{upsertChange(tUsers, ua), upsertChange(tTodos, todo("e", "pa", "u3"))}})
	must(t, "AppendCommit", err)
	commit(t, tx)
	// seq 4: a delete in pa.
	tx = begin(t, conn, "p1")
	must(t, "DeleteRow", tx.DeleteRow(ctx, tTodos, "a"))
	_, err = tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "cc-adm-4", CreatedAtMs: 4,
		Changes: []driver.Change{deleteChange(tTodos, todo("a", "pa", "u1"))}})
	must(t, "AppendCommit", err)
	commit(t, tx)
	push(t, conn, "p2", tTodos, todo("a", "pa", "u1"))

	type q struct {
		what             string
		filter           driver.ScopeFilter
		after, through   int64
		commits, changes int64
	}
	for _, c := range []q{
		{"pa over everything", driver.ScopeFilter{"project": {"pa"}}, 0, 4, 3, 4},
		{"pb over everything", driver.ScopeFilter{"project": {"pb"}}, 0, 4, 2, 2},
		{"pa or pb", driver.ScopeFilter{"project": {"pa", "pb"}}, 0, 4, 4, 6},
		{"pa and u1", driver.ScopeFilter{"project": {"pa"}, "owner": {"u1"}}, 0, 4, 2, 2},
		{"pa in (1, 3]", driver.ScopeFilter{"project": {"pa"}}, 1, 3, 1, 1},
		{"pa in (0, 1]", driver.ScopeFilter{"project": {"pa"}}, 0, 1, 1, 2},
		{"pa in (4, 4]", driver.ScopeFilter{"project": {"pa"}}, 4, 4, 0, 0},
		{"an empty value list", driver.ScopeFilter{"project": {}}, 0, 4, 0, 0},
		{"a variable todos does not have", driver.ScopeFilter{"org": {"pa"}}, 0, 4, 0, 0},
	} {
		got, err := adm.ScopeActivity(ctx, "p1", tTodos, c.filter, c.after, c.through)
		must(t, "ScopeActivity "+c.what, err)
		expectEqual(t, "ADM-1: scope activity, "+c.what, driver.ScopeActivity{Commits: c.commits, Changes: c.changes}, got)
	}
	got, err := adm.ScopeActivity(ctx, "p1", tUsers, driver.ScopeFilter{"org": {"pa"}}, 0, 4)
	must(t, "ScopeActivity users", err)
	expectEqual(t, "ADM-1: scope activity of users", driver.ScopeActivity{Commits: 1, Changes: 1}, got)
	_, err = adm.ScopeActivity(ctx, "p1", "nope", driver.ScopeFilter{"project": {"pa"}}, 0, 4)
	expectCode(t, "ADM-1/SCH-8: scope activity of an unknown table", err, driver.CodeUnknownTable)
}

func admRowScopes(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	adm := admConn(t, conn)
	push(t, conn, "p1", tTodos, todo("a", "pa", "u1"), todo("b", "pb", "u2"))
	push(t, conn, "p2", tTodos, todo("a", "px", "u9"))

	check := func(what, p, id string, want driver.Scopes, wantOK bool) {
		t.Helper()
		got, ok, err := adm.RowScopes(ctx, p, tTodos, id)
		must(t, "RowScopes "+what, err)
		if ok != wantOK {
			t.Errorf("ADM-1: RowScopes %s: found %v, want %v", what, ok, wantOK)
		}
		expectEqual(t, "ADM-1: RowScopes "+what, want, got)
	}
	check("of a", "p1", "a", driver.Scopes{"project": "pa", "owner": "u1"}, true)
	check("of a in p2", "p2", "a", driver.Scopes{"project": "px", "owner": "u9"}, true)
	check("of a missing row", "p1", "zz", nil, false)

	push(t, conn, "p1", tTodos, todo("a", "pq", "u7"))
	check("of a after a move", "p1", "a", driver.Scopes{"project": "pq", "owner": "u7"}, true)
	tx := begin(t, conn, "p1")
	must(t, "DeleteRow", tx.DeleteRow(ctx, tTodos, "b"))
	commit(t, tx)
	check("of a deleted row", "p1", "b", nil, false)

	_, _, err := adm.RowScopes(ctx, "p1", "nope", "a")
	expectCode(t, "ADM-1/SCH-8: RowScopes of an unknown table", err, driver.CodeUnknownTable)
}

// admPagedClients puts records on p whose times repeat (many share one
// UpdatedAtMs, including the extremes of int64) and whose ids order apart
// under collations, and returns them newest first: UpdatedAtMs descending,
// then client id descending, bytewise (ADM-2).
func admPagedClients(t T, conn driver.Conn, p string) []driver.ClientRecord {
	t.Helper()
	times := []int64{200, 100, 200, 300, 200, math.MaxInt64, -5, 200, 100, math.MinInt64}
	ids := []string{"b", "B", "a", "\u00e9", "e\u0301", "aa", "😀", "\uFFFD", "A", "10", "9", "a ", "Z", "ß", "ss", "c-1", "c-2",
		"c-10", "x", "y"}
	var recs []driver.ClientRecord
	for i, id := range ids {
		r := admClient(id, times[i%len(times)])
		must(t, "PutClientRecord", conn.PutClientRecord(t.Context(), p, r))
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(a, b driver.ClientRecord) int {
		return cmp.Or(cmp.Compare(b.UpdatedAtMs, a.UpdatedAtMs), strings.Compare(b.ClientID, a.ClientID))
	})
	return recs
}

func admClientPages(t T, h Harness) {
	conn := openStore(t, h)
	ctx := t.Context()
	adm := admConn(t, conn)
	want := admPagedClients(t, conn, "p1")
	must(t, "PutClientRecord(p2)", conn.PutClientRecord(ctx, "p2", admClient("c-0", 250)))
	for _, limit := range []int{1, 2, 3, 7, len(want) - 1, len(want), len(want) + 1} {
		var got []driver.ClientRecord
		q := driver.ClientRecordQuery{Limit: limit}
		pages := 0
		for ; pages <= len(want)+1; pages++ {
			page, err := adm.ListClientRecords(ctx, "p1", q)
			must(t, fmt.Sprintf("ListClientRecords(after (%d, %q), limit %d)", q.AfterUpdatedAtMs, q.AfterClientID, limit), err)
			if len(page) > limit {
				t.Fatalf("ADM-2: a page of %d records with limit %d", len(page), limit)
			}
			got = append(got, page...)
			if len(page) < limit {
				break
			}
			q = q.Next(page[len(page)-1])
		}
		expectEqual(t, fmt.Sprintf("ADM-2: every record of p1, newest first, paged %d at a time", limit), want, got)
		if wantPages := len(want) / limit; pages != wantPages {
			t.Errorf("ADM-2: paging %d records %d at a time took %d full pages, want %d", len(want), limit, pages, wantPages)
		}
	}
}

func admClientPosition(t T, h Harness) {
	conn, s := vdStore(t, h)
	ctx := t.Context()
	adm := admConn(t, conn)
	all := admPagedClients(t, conn, "p1")
	after := func(q driver.ClientRecordQuery) []string {
		var out []string
		for _, r := range all {
			if q.AfterClientID == "" || r.UpdatedAtMs < q.AfterUpdatedAtMs ||
				(r.UpdatedAtMs == q.AfterUpdatedAtMs && r.ClientID < q.AfterClientID) {
				out = append(out, r.ClientID)
			}
		}
		return out[:min(q.Limit, len(out))]
	}
	positions := []driver.ClientRecordQuery{{}}
	for _, r := range all {
		positions = append(positions, driver.ClientRecordQuery{AfterUpdatedAtMs: r.UpdatedAtMs, AfterClientID: r.ClientID})
	}
	// Positions of no stored record.
	for _, p := range []struct {
		at int64
		id string
	}{{200, "m"}, {200, "\U0010FFFF"}, {200, "A0"}, {250, "a"}, {math.MaxInt64, "\U0010FFFF"}, {math.MinInt64, "a"}, {-5, "zzz"}, {0, "x"}} {
		positions = append(positions, driver.ClientRecordQuery{AfterUpdatedAtMs: p.at, AfterClientID: p.id})
	}
	for _, q := range positions {
		for _, limit := range []int{1, 4, winAll} {
			q.Limit = limit
			page, err := adm.ListClientRecords(ctx, "p1", q)
			must(t, "ListClientRecords", err)
			expectEqual(t, fmt.Sprintf("ADM-2: client ids after (%d, %+q), limit %d", q.AfterUpdatedAtMs, q.AfterClientID, limit),
				after(q), admIDs(page))
		}
	}
	// Through the Store: a bad position or limit is refused before the
	// driver is called.
	for _, c := range []struct {
		q    driver.ClientRecordQuery
		code driver.Code
	}{
		{driver.ClientRecordQuery{AfterUpdatedAtMs: 5, Limit: 10}, driver.CodeInvalidArgument},
		{driver.ClientRecordQuery{AfterUpdatedAtMs: 5, AfterClientID: "a\x00", Limit: 10}, driver.CodeInvalidArgument},
		{driver.ClientRecordQuery{AfterUpdatedAtMs: 5, AfterClientID: "a\xff", Limit: 10}, driver.CodeInvalidArgument},
		{driver.ClientRecordQuery{AfterUpdatedAtMs: 5, AfterClientID: strings.Repeat("a", 256), Limit: 10}, driver.CodeInvalidArgument},
		{driver.ClientRecordQuery{Limit: 0}, driver.CodeInvalidLimit},
		{driver.ClientRecordQuery{Limit: 10001}, driver.CodeInvalidLimit},
	} {
		_, err := s.ListClientRecords(ctx, "p1", c.q)
		errExpectTyped(t, fmt.Sprintf("ADM-2: Store.ListClientRecords(%+v)", c.q), err, c.code, "p1")
	}
	q := driver.ClientRecordQuery{AfterUpdatedAtMs: 200, AfterClientID: "b", Limit: 2}
	got, err := s.ListClientRecords(ctx, "p1", q)
	must(t, "ADM-2: Store.ListClientRecords", err)
	expectEqual(t, "ADM-2: Store.ListClientRecords after (200, \"b\")", after(q), admIDs(got))
}

// admIDs returns the client ids of recs in order.
func admIDs(recs []driver.ClientRecord) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ClientID
	}
	return out
}
