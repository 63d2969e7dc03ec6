package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for PUSH-17: a push within PUSH-8's size bound lands whatever
// the engine's own limits on one bound value or one statement.

func init() {
	register(
		Case{Name: "PUSH-17/large-push-across-ops-lands-and-reads-back", Run: pushLargeAcrossOps},
		Case{Name: "PUSH-17/one-large-value-lands-or-is-refused-typed", Run: pushLargeValue},
	)
}

// pushBigText returns n bytes of text: mostly letters, with some
// characters that need escaping in JSON (quote, backslash, '<', a
// newline) and multi-byte UTF-8, distinct per seed.
func pushBigText(seed string, n int) string {
	unit := seed + ` lorem "ipsum" dolor\sit <amet> é€ 漢字` + "\n"
	var b strings.Builder
	b.Grow(n + len(unit))
	for b.Len() < n {
		b.WriteString(unit)
	}
	s := b.String()[:n]
	for !strings.HasSuffix(s, "\n") && len(s) > 0 && s[len(s)-1] >= 0x80 {
		s = s[:len(s)-1] // never cut a rune
	}
	return s
}

// pushBigBytes returns n bytes of every byte value, distinct per seed.
func pushBigBytes(seed byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
	return b
}

// pushKind returns an upsert of kinds id in group g.
func pushKind(id, g string, s *string, x []byte) syncstore.PushOp {
	v := driver.Values{"id": id, "grp": g, "s": nil, "i": int64(7), "f": 0.5, "b": true, "j": driver.JSON(`{"k":[1,2]}`), "x": nil}
	if s != nil {
		v["s"] = *s
	}
	if x != nil {
		v["x"] = x
	}
	return syncstore.PushOp{Table: tKinds, RowID: id, Op: driver.OpUpsert, Values: v}
}

// pushExpectLanded checks that the applied push req, committed at seq,
// reads back exactly: every row (GetRow) and the commit's logged changes
// (ReadCommits), values byte for byte.
func pushExpectLanded(t T, conn driver.Conn, p, what string, seq int64, req syncstore.PushRequest) {
	t.Helper()
	ctx := t.Context()
	var want []driver.Change
	for _, o := range req.Ops {
		row, found, err := conn.GetRow(ctx, p, o.Table, o.RowID)
		must(t, "GetRow", err)
		if !found {
			t.Errorf("%s: row %s/%s not found", what, o.Table, o.RowID)
			continue
		}
		pushSameValues(t, what+": values of row "+o.RowID, o.Values, row.Values)
		want = append(want, driver.Change{Table: o.Table, RowID: o.RowID, Op: driver.OpUpsert, Scopes: row.Scopes,
			Values: o.Values, RowVersion: row.ServerVersion})
	}
	got, err := conn.ReadCommits(ctx, p, driver.CommitsQuery{AfterSeq: seq - 1, ThroughSeq: seq, LimitChanges: 10_000})
	must(t, "ReadCommits", err)
	if len(got) != 1 {
		t.Fatalf("%s: ReadCommits(%d] returned %d commits, want 1", what, seq, len(got))
	}
	if len(got[0].Changes) != len(want) {
		t.Fatalf("%s: %d changes logged, want %d", what, len(got[0].Changes), len(want))
	}
	for i, ch := range got[0].Changes {
		pushSameValues(t, fmt.Sprintf("%s: values of change %d", what, i), want[i].Values, ch.Values)
		ch.Values, want[i].Values = nil, nil
		expectEqual(t, fmt.Sprintf("%s: change %d", what, i), want[i], ch)
	}
}

// pushSameValues checks got against want column by column, naming the
// columns that differ with their sizes (a diff of megabytes is useless).
func pushSameValues(t T, what string, want, got driver.Values) {
	t.Helper()
	w, err := driver.EncodeValues(want)
	must(t, "EncodeValues", err)
	g, err := driver.EncodeValues(got)
	must(t, "EncodeValues", err)
	if bytes.Equal(w, g) {
		return
	}
	for k, v := range want {
		a, _ := driver.EncodeValues(driver.Values{k: v})
		b, _ := driver.EncodeValues(driver.Values{k: got[k]})
		if !bytes.Equal(a, b) {
			t.Errorf("%s: column %q differs (%d encoded bytes, want %d)", what, k, len(b), len(a))
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d columns, want %d", what, len(got), len(want))
	}
}

// Catches: a driver that binds a commit's change log, a row or a push
// result as one engine value and fails (or truncates) a push that is
// within PUSH-8's 4 MiB because the engine caps one value or one
// statement below it (D1: 2,000,000 bytes per string, blob or row).
func pushLargeAcrossOps(t T, h Harness) {
	conn, s := pushStore(t, h)
	const each = 512 << 10 // 7 × 512 KiB = 3.5 MiB of values
	var ops []syncstore.PushOp
	for i := range 4 {
		op := pushTodo(fmt.Sprintf("t%d", i), "p7", "o1", "", nil)
		op.Values["title"] = pushBigText(fmt.Sprint(i), each)
		ops = append(ops, op)
	}
	for i := range 3 {
		ops = append(ops, pushKind(fmt.Sprintf("k%d", i), "g1", nil, pushBigBytes(byte(i), each)))
	}
	req := pushReq("c1", "big", ops...)
	resp, err := s.Push(t.Context(), "p1", req)
	must(t, "PUSH-17: Push of 3.5 MiB over 7 ops", err)
	expectEqual(t, "PUSH-17: the push's status", syncstore.PushApplied, resp.Status)
	pushExpectLanded(t, conn, "p1", "PUSH-17", resp.CommitSeq, req)
	// Its replay returns the stored result (PUSH-1).
	again, err := s.Push(t.Context(), "p1", req)
	must(t, "PUSH-17: replay", err)
	expectEqual(t, "PUSH-17: the replayed result", resp.PushResult, again.PushResult)
	// Every op with a base version: a driver.GuardedBeginner writes them
	// as guarded writes (PUSH-9).
	for i := range ops {
		ops[i].BaseVersion = syncstore.Version(1)
		if i < 4 {
			ops[i].Values["title"] = pushBigText(fmt.Sprint("v2-", i), each)
		} else {
			ops[i].Values["x"] = pushBigBytes(byte(100+i), each)
		}
	}
	req = pushReq("c1", "big2", ops...)
	resp, err = s.Push(t.Context(), "p1", req)
	must(t, "PUSH-17: Push of 3.5 MiB over 7 ops with base versions", err)
	expectEqual(t, "PUSH-17: the second push's status", syncstore.PushApplied, resp.Status)
	pushExpectLanded(t, conn, "p1", "PUSH-17 (base versions)", resp.CommitSeq, req)
}

// Catches: a row over the engine's own limit that fails as internal, or
// lands cut; a row of 1,000,000 bytes of values refused.
func pushLargeValue(t T, h Harness) {
	conn, s := pushStore(t, h)
	small := pushBigText("m", 1_000_000)
	req := pushReq("c1", "mb", pushKind("k1", "g1", &small, nil))
	resp, err := s.Push(t.Context(), "p1", req)
	must(t, "PUSH-17: Push of one 1,000,000-byte value", err)
	pushExpectLanded(t, conn, "p1", "PUSH-17: 1,000,000 bytes", resp.CommitSeq, req)

	big := pushBigText("b", 2_500_000)
	// Without and with base versions (guarded writes, PUSH-9).
	for n, base := range []*int64{nil, syncstore.Version(0)} {
		what := fmt.Sprintf("PUSH-17: a 2,500,000-byte value (base %v)", base != nil)
		before := pushStateOf(t, conn, "p1")
		key := fmt.Sprint("big", n)
		first, op := pushTodo(fmt.Sprint("t", n), "p7", "o1", "x", base), pushKind(fmt.Sprint("k", n+2), "g1", &big, nil)
		op.BaseVersion = base
		req = pushReq("c1", key, first, op)
		resp, err = s.Push(t.Context(), "p1", req)
		if err == nil {
			t.Logf("%s: landed", what)
			pushExpectLanded(t, conn, "p1", what, resp.CommitSeq, req)
			continue
		}
		// Refused: only as too large, blaming the op, nothing written.
		t.Logf("%s: refused: %v", what, err)
		expectCode(t, what, err, driver.CodePushTooLarge)
		var e *driver.Error
		if errors.As(err, &e) {
			expectEqual(t, what+": the error's op index", 1, e.OpIndex)
		}
		expectEqual(t, what+": retryable", false, driver.IsRetryable(err))
		pushExpectNothing(t, conn, "p1", what, before, "c1", key)
	}
}
