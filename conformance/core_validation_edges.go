package conformance

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// The other side of group V: input on the edge of every bound is valid,
// and sync plus the driver take it end to end, exactly.

func init() {
	register(
		// Catches: a driver that truncates or rejects 255-byte or
		// multi-byte partitions (two partitions equal in 254 bytes
		// collide), or quotes partition names into SQL.
		Case{Name: "V-1/partition-edges-work", Run: vdPartitionEdges},
		// Catches: 255-byte ids truncated or rejected, or a server-made
		// commit with empty ids refused.
		Case{Name: "V-2/id-edges-work", Run: vdIDEdges},
		// Catches: a valid value of any type rejected or altered on its
		// way through the Store.
		Case{Name: "V-3/every-type-accepted", Run: vdEveryTypeAccepted},
		// Catches: a row whose scopes are computed by sync.ScopesOf
		// rejected, or stored under other scopes.
		Case{Name: "V-4/scopes-of-values-accepted", Run: vdScopesOfAccepted},
		// Catches: limits 1 and 10,000 (index lookup 1,000) rejected, or
		// an empty window (afterSeq = throughSeq) treated as an error.
		Case{Name: "V-5/limit-bounds-accepted", Run: vdLimitBounds},
		// Catches: a key with an empty value list that errors or matches,
		// or filters of ≥ 1,000 values that fail.
		Case{Name: "V-6/empty-list-and-long-lists", Run: vdFilterEdges},
		// Catches: client ids that merely resemble the reserved prefix
		// rejected.
		Case{Name: "V-7/near-prefix-accepted", Run: vdNearRemoteCommand},
		// Catches: a code syntax other than V-8's, or reserved prefixes
		// not enforced.
		Case{Name: "V-8/application-code-syntax", Run: vdApplicationCodes},
		// Catches: push results with reserved-prefix op codes (written by
		// the push layer itself) rejected or altered.
		Case{Name: "V-8/reserved-prefixes-allowed-in-results", Run: vdReservedCodesInResults},
	)
}

// vdWrite upserts rows of table in one Tx on p through the Store and
// records them in one commit with meta's ids; returns the commit's seq.
func vdWrite(t T, s *syncstore.Store, p, table string, meta driver.CommitInput, rows ...driver.Row) int64 {
	t.Helper()
	var seq int64
	err := s.RunInTx(t.Context(), p, func(ctx context.Context, tx *syncstore.Tx) error {
		meta.Changes = nil
		for _, r := range rows {
			if err := tx.UpsertRow(ctx, table, r); err != nil {
				return err
			}
			meta.Changes = append(meta.Changes, upsertChange(table, r))
		}
		var err error
		seq, err = tx.AppendCommit(ctx, meta)
		return err
	})
	must(t, "Store.RunInTx(upsert, AppendCommit)", err)
	return seq
}

func vdMeta() driver.CommitInput {
	return driver.CommitInput{ClientID: "c1", ClientCommitID: fmt.Sprintf("cc-%d", nextID()), ActorID: "a1", CreatedAtMs: 1}
}

// vdExpectRow reads id through the Store and compares it with want.
func vdExpectRow(t T, s *syncstore.Store, rule, p, table string, want driver.Row) {
	t.Helper()
	got, ok, err := s.GetRow(t.Context(), p, table, want.ID)
	must(t, rule+": Store.GetRow", err)
	if !ok {
		t.Errorf("%s: row %q of table %s not found", rule, want.ID, table)
		return
	}
	expectEqual(t, rule+": row read back", want, got)
}

func vdPartitionEdges(t T, h Harness) {
	ctx := t.Context()
	_, s := vdStore(t, h)
	parts := []string{strings.Repeat("p", 254) + "a", strings.Repeat("p", 254) + "b", strings.Repeat("p", 253) + "é",
		"😀", "'; DROP TABLE todos; --", "a\tb\u00a0c", `"q"`}
	for i, p := range parts {
		vdWrite(t, s, p, tTodos, vdMeta(), todo(fmt.Sprintf("t%d", i), "pj", "o"))
		e, err := s.TouchPartition(ctx, p, int64(1000+i), "e1")
		must(t, "V-1: Store.TouchPartition", err)
		expectEqual(t, "V-1: TouchPartition entry", driver.PartitionEntry{Partition: p, Epoch: "e1", UpdatedAtMs: int64(1000 + i)}, e)
	}
	for i, p := range parts {
		max, err := s.MaxCommitSeq(ctx, p)
		must(t, "V-1: Store.MaxCommitSeq", err)
		expectEqual(t, fmt.Sprintf("V-1: MaxCommitSeq of partition #%d (%d bytes)", i, len(p)), int64(1), max)
		rows, err := s.ScanRows(ctx, p, driver.ScanQuery{Table: tTodos, Filter: driver.ScopeFilter{"project": {"pj"}}, Limit: 100})
		must(t, "V-1: Store.ScanRows", err)
		expectEqual(t, fmt.Sprintf("V-1: rows of partition #%d", i), []string{fmt.Sprintf("t%d", i)}, ids(rows))
	}
	want := append([]string(nil), parts...)
	sort.Strings(want)
	got, err := s.ListPartitions(ctx, "", 10000)
	must(t, "V-1: Store.ListPartitions", err)
	expectEqual(t, "V-1: ListPartitions (every edge partition, bytewise order)", want, got)
}

func vdIDEdges(t T, h Harness) {
	ctx := t.Context()
	_, s := vdStore(t, h)
	const p = "p1"
	long := func(c string, last string) string { return strings.Repeat(c, 255-len(last)) + last }
	rowA, rowB, rowMB := todo(long("r", "a"), "pj", "o"), todo(long("r", "b"), "pj", "o"), todo(long("r", "é"), "pj", "o")
	meta := driver.CommitInput{ClientID: long("c", "a"), ClientCommitID: long("k", "a"), ActorID: long("a", "é"), CreatedAtMs: 7}
	seq := vdWrite(t, s, p, tTodos, meta, rowA, rowB, rowMB)
	for _, r := range []driver.Row{rowA, rowB, rowMB} {
		vdExpectRow(t, s, "V-2: 255-byte row id", p, tTodos, r)
	}
	server := driver.CommitInput{CreatedAtMs: 8}
	serverRow := todo("srv", "pj", "o")
	serverSeq := vdWrite(t, s, p, tTodos, server, serverRow)
	cs, err := s.ReadCommitWindow(ctx, p, driver.WindowQuery{Table: tTodos, Filter: driver.ScopeFilter{"project": {"pj"}},
		ThroughSeq: vdThrough, LimitChanges: 10000})
	must(t, "V-2: Store.ReadCommitWindow", err)
	meta.Changes = []driver.Change{upsertChange(tTodos, rowA), upsertChange(tTodos, rowB), upsertChange(tTodos, rowMB)}
	expectEqual(t, "V-2: commits with 255-byte ids and with empty ids (server-made)", []driver.Commit{
		{Seq: seq, ClientID: meta.ClientID, ClientCommitID: meta.ClientCommitID, ActorID: meta.ActorID, CreatedAtMs: 7, Changes: meta.Changes},
		{Seq: serverSeq, CreatedAtMs: 8, Changes: []driver.Change{upsertChange(tTodos, serverRow)}},
	}, cs)

	cid, keyA, keyB := long("c", "é"), long("k", "a"), long("k", "b")
	rA, rB := vdRejected(), vdRejected()
	rB.CacheIdentity = "other"
	must(t, "V-2: PutPushResult with 255-byte ids", s.RunInTx(ctx, p, func(ctx context.Context, tx *syncstore.Tx) error {
		if err := tx.PutPushResult(ctx, cid, keyA, rA); err != nil {
			return err
		}
		return tx.PutPushResult(ctx, cid, keyB, rB)
	}))
	for key, want := range map[string]driver.PushResult{keyA: rA, keyB: rB} {
		got, ok, err := s.GetPushResult(ctx, p, cid, key)
		must(t, "V-2: Store.GetPushResult", err)
		expectEqual(t, "V-2: push result under 255-byte ids found", true, ok)
		expectEqual(t, "V-2: push result under 255-byte ids", want, got)
	}

	rec := vdRecord(long("c", "z"))
	rec.ActorID = long("a", "z")
	rec.Subscriptions[0].ID = long("s", "é")
	must(t, "V-2: Store.PutClientRecord with 255-byte ids", s.PutClientRecord(ctx, p, rec))
	gotRec, ok, err := s.GetClientRecord(ctx, p, rec.ClientID)
	must(t, "V-2: Store.GetClientRecord", err)
	expectEqual(t, "V-2: client record found", true, ok)
	expectEqual(t, "V-2: client record with 255-byte ids", rec, gotRec)

	epoch := long("e", "é")
	e, err := s.TouchPartition(ctx, p, 5, epoch)
	must(t, "V-2: Store.TouchPartition with a 255-byte epoch", err)
	expectEqual(t, "V-2: entry with a 255-byte epoch", driver.PartitionEntry{Partition: p, Epoch: epoch, UpdatedAtMs: 5}, e)
	epoch2 := long("f", "z")
	e, err = s.RotatePartitionLogEpoch(ctx, p, epoch2, 6)
	must(t, "V-2: Store.RotatePartitionLogEpoch with a 255-byte epoch", err)
	expectEqual(t, "V-2: rotated entry", driver.PartitionEntry{Partition: p, Epoch: epoch2, EpochRequired: true, UpdatedAtMs: 6}, e)
}

// vdKindsRow returns a kinds row in group g with the given values of s, i,
// f, b, j, x.
func vdKindsRow(id, g string, s, i, f, b, j, x any) driver.Row {
	return driver.Row{ID: id, ServerVersion: -3, Scopes: driver.Scopes{"grp": g}, Values: driver.Values{
		"id": id, "grp": g, "s": s, "i": i, "f": f, "b": b, "j": j, "x": x}}
}

func vdEveryTypeAccepted(t T, h Harness) {
	_, s := vdStore(t, h)
	rows := []driver.Row{
		vdKindsRow("nulls", "", nil, nil, nil, nil, nil, nil),
		vdKindsRow("max", "g", "😀 e\u0301 \uFFFD", int64(math.MaxInt64), math.MaxFloat64, true, driver.JSON(` {"b":1, "a":[null]} `), []byte{0, 1, 0xff}),
		vdKindsRow("min", "g", "", int64(math.MinInt64), -math.SmallestNonzeroFloat64, false, driver.JSON(`"\u0000"`), []byte{}),
	}
	vdWrite(t, s, "p1", tKinds, vdMeta(), rows...)
	for _, r := range rows {
		vdExpectRow(t, s, "V-3: valid values", "p1", tKinds, r)
	}
}

func vdScopesOfAccepted(t T, h Harness) {
	ctx := t.Context()
	_, s := vdStore(t, h)
	schema, _ := s.Schema()
	table, _ := schema.Table(tTodos)
	values := driver.Values{"id": "t1", "title": "x", "done": true, "project_id": "pa", "owner_id": "oa", "updated_at": int64(1)}
	row := driver.Row{ID: "t1", ServerVersion: 2, Values: values, Scopes: syncstore.ScopesOf(table, values)}
	expectEqual(t, "V-4: ScopesOf", driver.Scopes{"project": "pa", "owner": "oa"}, row.Scopes)
	vdWrite(t, s, "p1", tTodos, vdMeta(), row)
	got, err := s.ScanRows(ctx, "p1", driver.ScanQuery{Table: tTodos, Filter: driver.ScopeFilter{"project": {"pa"}, "owner": {"oa"}}, Limit: 10})
	must(t, "V-4: Store.ScanRows", err)
	expectEqual(t, "V-4: row found under the scopes of its values", []driver.Row{row}, got)
}

func vdLimitBounds(t T, h Harness) {
	ctx := t.Context()
	conn, s := vdStore(t, h)
	const p = "p1"
	vdWrite(t, s, p, tTodos, vdMeta(), todo("t1", "pj", "o"))
	vdWrite(t, s, p, tTodos, vdMeta(), todo("t2", "pj", "o"))
	for _, b := range []struct{ limit, want int }{{1, 1}, {10000, 2}} {
		rows, err := s.ScanRows(ctx, p, driver.ScanQuery{Table: tTodos, Filter: driver.ScopeFilter{"owner": {"o"}}, Limit: b.limit})
		must(t, fmt.Sprintf("V-5: ScanRows limit %d", b.limit), err)
		expectEqual(t, fmt.Sprintf("V-5: ScanRows limit %d row count", b.limit), b.want, len(rows))
		cs, err := s.ReadCommitWindow(ctx, p, driver.WindowQuery{Table: tTodos, Filter: driver.ScopeFilter{"owner": {"o"}},
			ThroughSeq: 2, LimitChanges: b.limit})
		must(t, fmt.Sprintf("V-5: ReadCommitWindow limitChanges %d", b.limit), err)
		expectEqual(t, fmt.Sprintf("V-5: ReadCommitWindow limitChanges %d commit count", b.limit), b.want, len(cs))
		for _, q := range []string{"a", "b"} {
			_, err := s.TouchPartition(ctx, q, 1, "e")
			must(t, "setup: TouchPartition", err)
		}
		ps, err := s.ListPartitions(ctx, "", b.limit)
		must(t, fmt.Sprintf("V-5: ListPartitions limit %d", b.limit), err)
		expectEqual(t, fmt.Sprintf("V-5: ListPartitions limit %d", b.limit), []string{"a", "b"}[:b.want], ps)
		es, err := s.ListPartitionRegistry(ctx, "", b.limit)
		must(t, fmt.Sprintf("V-5: ListPartitionRegistry limit %d", b.limit), err)
		expectEqual(t, fmt.Sprintf("V-5: ListPartitionRegistry limit %d entry count", b.limit), b.want, len(es))
	}
	cs, err := s.ReadCommitWindow(ctx, p, driver.WindowQuery{Table: tTodos, Filter: driver.ScopeFilter{"owner": {"o"}},
		AfterSeq: 1, ThroughSeq: 1, LimitChanges: 10})
	must(t, "V-5: ReadCommitWindow with afterSeq = throughSeq", err)
	expectEqual(t, "V-5: empty window", 0, len(cs))
	env := vdEnvOf(t, conn)
	for _, b := range []struct{ limit, want int }{{1, 1}, {1000, 2}} {
		q := driver.IndexQuery{Table: tTodos, Index: "by_owner", Values: []any{"o"}, Limit: b.limit}
		if env.ixl {
			rows, err := s.ScanRowsByIndex(ctx, p, q)
			must(t, fmt.Sprintf("V-5: Store.ScanRowsByIndex limit %d", b.limit), err)
			expectEqual(t, fmt.Sprintf("V-5: ScanRowsByIndex limit %d row count", b.limit), b.want, len(rows))
		}
		if env.ixlTx {
			must(t, "V-5: Tx.ScanRowsByIndex", s.RunInTx(ctx, p, func(ctx context.Context, tx *syncstore.Tx) error {
				rows, err := tx.ScanRowsByIndex(ctx, q)
				expectEqual(t, fmt.Sprintf("V-5: Tx.ScanRowsByIndex limit %d row count", b.limit), b.want, len(rows))
				return err
			}))
		}
	}
}

func vdFilterEdges(t T, h Harness) {
	ctx := t.Context()
	_, s := vdStore(t, h)
	const p = "p1"
	row := todo("t1", "pa", "oa")
	vdWrite(t, s, p, tTodos, vdMeta(), row)
	many := make([]string, 0, 1500)
	for i := range 1499 {
		many = append(many, fmt.Sprintf("v%04d", i))
	}
	many = append(many, "pa")
	filters := []struct {
		name string
		f    driver.ScopeFilter
		want []string
	}{
		{"a key with an empty list", driver.ScopeFilter{"project": {}, "owner": {"oa"}}, nil},
		{"1,500 values", driver.ScopeFilter{"project": many}, []string{"t1"}},
		{"1,500 values and a key with an empty list", driver.ScopeFilter{"project": many, "owner": nil}, nil},
	}
	for _, f := range filters {
		rows, err := s.ScanRows(ctx, p, driver.ScanQuery{Table: tTodos, Filter: f.f, Limit: 10})
		must(t, "V-6: Store.ScanRows with "+f.name, err)
		expectEqual(t, "V-6: Store.ScanRows with "+f.name, f.want, ids(rows))
		cs, err := s.ReadCommitWindow(ctx, p, driver.WindowQuery{Table: tTodos, Filter: f.f, ThroughSeq: vdThrough, LimitChanges: 10})
		must(t, "V-6: Store.ReadCommitWindow with "+f.name, err)
		expectEqual(t, "V-6: commits of Store.ReadCommitWindow with "+f.name, len(f.want), len(cs))
		must(t, "V-6: Tx.ScanRows", s.RunInTx(ctx, p, func(ctx context.Context, tx *syncstore.Tx) error {
			rows, err := tx.ScanRows(ctx, driver.ScanQuery{Table: tTodos, Filter: f.f, Limit: 10})
			expectEqual(t, "V-6: Tx.ScanRows with "+f.name, f.want, ids(rows))
			return err
		}))
	}
}

func vdNearRemoteCommand(t T, h Harness) {
	ctx := t.Context()
	_, s := vdStore(t, h)
	for _, id := range []string{`["remote-command"]`, `remote-command`, `["remote-commands",`, ` ["remote-command",`, `["Remote-command",`} {
		rec := vdRecord(id)
		must(t, "V-7: Store.PutClientRecord", s.PutClientRecord(ctx, "p1", rec))
		got, ok, err := s.GetClientRecord(ctx, "p1", id)
		must(t, "V-7: Store.GetClientRecord", err)
		expectEqual(t, "V-7: record found for "+id, true, ok)
		expectEqual(t, "V-7: record for "+id, rec, got)
		must(t, "V-7: PutPushResult", s.RunInTx(ctx, "p1", func(ctx context.Context, tx *syncstore.Tx) error {
			return tx.PutPushResult(ctx, id, "k", vdRejected())
		}))
		r, ok, err := s.GetPushResult(ctx, "p1", id, "k")
		must(t, "V-7: Store.GetPushResult", err)
		expectEqual(t, "V-7: result found for "+id, true, ok)
		expectEqual(t, "V-7: result for "+id, vdRejected(), r)
	}
}

func vdApplicationCodes(t T, _ Harness) {
	good := []string{"a", "Z", "conflict", "app.rule:v2-x_y", "x9", strings.Repeat("a", 128), "syncx.a", "Sync", "clients.x"}
	for _, c := range good {
		if err := syncstore.ValidateApplicationCode(c); err != nil {
			t.Errorf("V-8: ValidateApplicationCode(%q) = %v; want nil", c, err)
		}
	}
	bad := []string{"", "1a", "_a", ".a", "a b", "a/b", "é", "a\x00", strings.Repeat("a", 129),
		"sync.a", "blob.a", "operation.a", "presence.a", "client.a", "reaction.a", "SYNC.a", "Client.a", "sync."}
	for _, c := range bad {
		expectCode(t, fmt.Sprintf("V-8: ValidateApplicationCode(%q)", c), syncstore.ValidateApplicationCode(c), driver.CodeInvalidArgument)
	}
}

func vdReservedCodesInResults(t T, h Harness) {
	ctx := t.Context()
	_, s := vdStore(t, h)
	r := driver.PushResult{Status: driver.PushRejected, RecordedAtMs: 9, CacheIdentity: "ci", Ops: []driver.OpResult{
		{Status: driver.OpConflict, Code: "sync.conflict", Message: "m", ServerVersion: 4, ServerRow: todo("t1", "pa", "oa").Values},
		{Status: driver.OpError, Code: "client.invalid", Retryable: true, Details: driver.JSON(`{"k": [1, 2]}`)},
		{Status: driver.OpError, Code: "reaction.x"},
		{Status: driver.OpError, Code: "a" + strings.Repeat(".b_c:d-E9", 15)[:127]},
		{Status: driver.OpApplied},
	}}
	must(t, "V-8: CommitRejected with reserved-prefix op codes", s.RunInTx(ctx, "p1", func(ctx context.Context, tx *syncstore.Tx) error {
		return tx.CommitRejected(ctx, "c1", "k1", r)
	}))
	got, ok, err := s.GetPushResult(ctx, "p1", "c1", "k1")
	must(t, "V-8: Store.GetPushResult", err)
	expectEqual(t, "V-8: result found", true, ok)
	expectEqual(t, "V-8: result with reserved-prefix op codes", r, got)
}
