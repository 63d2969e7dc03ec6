package conformance

import (
	"context"
	"fmt"
	"math"
	gosync "sync"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Rule group PR: stored push results and idempotency (docs/contract.md PR-1…PR-6;
// PR-5, a corrupted stored result, is checked per driver since only the
// driver can corrupt its own storage).

// prKinds returns the values of a kinds row (grp "g") for a conflict's
// ServerRow.
func prKinds(id string, s, i, f, b, j, x any) driver.Values {
	return driver.Values{"id": id, "grp": "g", "s": s, "i": i, "f": f, "b": b, "j": j, "x": x}
}

// prFull returns a result exercising every field of PR-1: every op kind,
// server rows with bytes (0x00, 0xff, empty), int64 extremes, floats whose
// bits matter (-0, the smallest subnormal, MaxFloat64, 0.1), JSON text with
// odd spacing, key order and escapes, NULLs, and a missing server row.
func prFull(status driver.PushStatus, seq int64) driver.PushResult {
	return driver.PushResult{
		Status: status, CommitSeq: seq, RecordedAtMs: 1700000000123, CacheIdentity: "cache/identity:α-1",
		Ops: []driver.OpResult{
			{Status: driver.OpApplied},
			{Status: driver.OpConflict, Code: "row.version_conflict", ServerVersion: math.MaxInt64,
				Message:   "the server has a newer version — \"quoted\"\n\ttab 🎉 e\u0301 \uFFFD",
				ServerRow: prKinds("k1", "emoji 🎉", int64(math.MinInt64), 0.1, true, driver.JSON(`{"b":1,  "a":[true,null], "b":2}`), []byte{0, 1, 255})},
			{Status: driver.OpConflict, Code: "row.conflict", Message: "empty and extreme values", ServerVersion: -1,
				ServerRow: prKinds("k2", "", int64(math.MaxInt64), math.Copysign(0, -1), false, driver.JSON(`"\u0000"`), []byte{})},
			{Status: driver.OpConflict, Code: "row.conflict", ServerVersion: 3,
				ServerRow: prKinds("k3", nil, int64(1<<53+1), 5e-324, nil, driver.JSON(`[ ]`), nil)},
			{Status: driver.OpConflict, Code: "row.missing", Message: "the row does not exist", ServerVersion: 0, ServerRow: nil},
			{Status: driver.OpConflict, Code: "row.conflict", ServerVersion: 1,
				ServerRow: prKinds("k4", nil, nil, math.MaxFloat64, nil, nil, nil)},
			{Status: driver.OpError, Code: "app.validation:title-1", Message: "title too long", Retryable: true,
				Details: driver.JSON("{ \"max\" : 80,\"got\":[1, 2.5e3],\n \"z\":\"\\u00e9\", \"a\":{} }")},
			{Status: driver.OpError, Code: "app.denied", Message: "", Retryable: false, Details: ""},
		},
	}
}

// prRejected returns a small rejected result.
func prRejected() driver.PushResult {
	return driver.PushResult{Status: driver.PushRejected, RecordedAtMs: 1700000000999, CacheIdentity: "rej",
		Ops: []driver.OpResult{
			{Status: driver.OpApplied},
			{Status: driver.OpError, Code: "app.rejected", Message: "rejected by the host", Details: driver.JSON(`{"why":"test"}`)},
		}}
}

// prApplied returns a minimal applied result for seq, told apart by ci.
func prApplied(seq int64, ci string) driver.PushResult {
	return driver.PushResult{Status: driver.PushApplied, CommitSeq: seq, RecordedAtMs: 1700000000000 + seq,
		CacheIdentity: ci, Ops: []driver.OpResult{{Status: driver.OpApplied}}}
}

// prExpectExact compares results with expectEqual, then checks what the
// diff's nil-equals-empty option hides: an empty []byte stays non-nil, a
// NULL stays an untyped nil, a missing server row stays nil, and floats keep
// their bits (-0 included).
func prExpectExact(t T, what string, want, got driver.PushResult) {
	t.Helper()
	expectEqual(t, what, want, got)
	if len(want.Ops) != len(got.Ops) {
		return
	}
	for i, w := range want.Ops {
		g := got.Ops[i].ServerRow
		if w.ServerRow == nil {
			if g != nil {
				t.Errorf("%s: op %d: a nil ServerRow (row missing) came back as %#v", what, i, g)
			}
			continue
		}
		if g == nil {
			t.Errorf("%s: op %d: ServerRow came back nil", what, i)
			continue
		}
		for col, wv := range w.ServerRow {
			gv, ok := g[col]
			switch wv := wv.(type) {
			case []byte:
				if gb, isBytes := gv.([]byte); !isBytes || gb == nil {
					t.Errorf("%s: op %d column %s: non-nil []byte %v came back as %#v", what, i, col, wv, gv)
				}
			case float64:
				if gf, isFloat := gv.(float64); !isFloat || math.Float64bits(gf) != math.Float64bits(wv) {
					t.Errorf("%s: op %d column %s: float %v (bits %#x) came back as %#v", what, i, col, wv, math.Float64bits(wv), gv)
				}
			case nil:
				if !ok || gv != nil {
					t.Errorf("%s: op %d column %s: NULL came back as %#v (present %v)", what, i, col, gv, ok)
				}
			}
		}
	}
}

// prExpectStored checks the result stored under (c1, key) in p.
func prExpectStored(t T, conn driver.Conn, p, key, rule string, want driver.PushResult) {
	t.Helper()
	got, found, err := conn.GetPushResult(t.Context(), p, "c1", key)
	must(t, rule+": GetPushResult", err)
	if !found {
		t.Errorf("%s: result %q not found", rule, key)
		return
	}
	prExpectExact(t, rule+": stored result "+key, want, got)
}

// prExpectAbsent checks that nothing is stored under (c1, key) in p.
func prExpectAbsent(t T, conn driver.Conn, p, key, rule string) {
	t.Helper()
	got, found, err := conn.GetPushResult(t.Context(), p, "c1", key)
	must(t, rule+": GetPushResult", err)
	if found {
		t.Errorf("%s: result %q should not exist, got %+v", rule, key, got)
	}
}

// prPushWithResult commits rows with one commit and, in the same Tx,
// stores r under (c1, key), with CommitSeq set to the commit's seq when r
// is applied. It returns the result as stored.
func prPushWithResult(t T, conn driver.Conn, p, key string, r driver.PushResult, rows ...driver.Row) driver.PushResult {
	t.Helper()
	tx := begin(t, conn, p)
	defer func() { _ = tx.Rollback(context.Background()) }()
	seq := stage(t, tx, tTodos, rows...)
	if r.Status == driver.PushApplied {
		r.CommitSeq = seq
	}
	must(t, "PutPushResult", tx.PutPushResult(t.Context(), "c1", key, r))
	commit(t, tx)
	return r
}

func init() {
	register(
		// Catches: a lossy result codec (bytes as text, int64 through
		// float64, floats through decimal text, JSON re-serialized, nil vs
		// empty collapsed) or a result only cached in memory.
		Case{Name: "PR-1/applied-result-round-trips", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			tx := begin(t, conn, "p1")
			defer func() { _ = tx.Rollback(context.Background()) }()
			want := prFull(driver.PushApplied, stage(t, tx, tTodos, todo("a", "pj", "o")))
			must(t, "PutPushResult", tx.PutPushResult(ctx, "c1", "full", want))
			got, found, err := tx.GetPushResult(ctx, "c1", "full")
			must(t, "PR-1: Tx.GetPushResult", err)
			if !found {
				t.Fatalf("PR-1/TX-3: a result put in the Tx is not found inside it")
			}
			prExpectExact(t, "PR-1: result read inside the Tx", want, got)
			commit(t, tx)
			prExpectStored(t, conn, "p1", "full", "PR-1 (after commit)", want)
			if h.Reopen == nil {
				t.Logf("PR-1: the read through a second Conn needs Harness.Reopen; skipped")
				return
			}
			prExpectStored(t, h.Reopen(t, conn), "p1", "full", "PR-1 (second Conn)", want)
		}},
		// Catches: rejected results (no commit seq) stored differently or
		// lossily, through CommitRejected and through PutPushResult.
		Case{Name: "PR-1/rejected-result-round-trips", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			want := prFull(driver.PushRejected, 0)
			want.RecordedAtMs = 0
			want.CacheIdentity = ""
			tx := begin(t, conn, "p1")
			defer func() { _ = tx.Rollback(context.Background()) }()
			stage(t, tx, tTodos, todo("a", "pj", "o"))
			must(t, "CommitRejected", tx.CommitRejected(ctx, "c1", "via-commit-rejected", want))
			prExpectStored(t, conn, "p1", "via-commit-rejected", "PR-1 (CommitRejected)", want)

			tx2 := begin(t, conn, "p1")
			defer func() { _ = tx2.Rollback(context.Background()) }()
			must(t, "PutPushResult", tx2.PutPushResult(ctx, "c1", "via-put", want))
			commit(t, tx2)
			prExpectStored(t, conn, "p1", "via-put", "PR-1 (PutPushResult of a rejected result)", want)
		}},

		// Catches: a lookup that matches on a prefix, on the client id or
		// commit id alone, on the concatenated key, or across partitions.
		Case{Name: "PR-2/unknown-key-not-found", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			prExpectAbsent(t, conn, "p1", "k", "PR-2 (empty store)")
			tx := begin(t, conn, "p1")
			defer func() { _ = tx.Rollback(context.Background()) }()
			must(t, "PutPushResult", tx.PutPushResult(ctx, "ab", "c", prRejected()))
			must(t, "PutPushResult", tx.PutPushResult(ctx, "c1", "key", prRejected()))
			_, found, err := tx.GetPushResult(ctx, "c1", "other")
			must(t, "PR-2: Tx.GetPushResult", err)
			expectEqual(t, "PR-2: unknown key found inside a Tx", false, found)
			commit(t, tx)
			for _, k := range []struct{ p, client, commit string }{
				{"p1", "a", "bc"}, {"p1", "abc", "c"}, {"p1", "ab", "c2"}, {"p1", "ab", "C"},
				{"p1", "c1", "ke"}, {"p1", "c1", "key2"}, {"p1", "c2", "key"}, {"p2", "c1", "key"}, {"p2", "ab", "c"},
			} {
				got, found, err := conn.GetPushResult(ctx, k.p, k.client, k.commit)
				if err != nil {
					t.Errorf("PR-2: GetPushResult(%s, %q, %q): %v", k.p, k.client, k.commit, err)
					continue
				}
				if found {
					t.Errorf("PR-2: GetPushResult(%s, %q, %q) found %+v; want not found", k.p, k.client, k.commit, got)
				}
			}
			got, found, err := conn.GetPushResult(ctx, "p1", "ab", "c")
			must(t, "GetPushResult", err)
			expectEqual(t, "PR-2: the stored key is found", true, found)
			prExpectExact(t, "PR-2: the stored key's result", prRejected(), got)
		}},

		// Catches: a later put that overwrites ("upsert") or fails the Tx.
		Case{Name: "PR-3/first-writer-wins-across-txs", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			first := prPushWithResult(t, conn, "p1", "k", prApplied(0, "first"), todo("a", "pj", "o"))
			tx := begin(t, conn, "p1")
			defer func() { _ = tx.Rollback(context.Background()) }()
			must(t, "PR-3: a later PutPushResult must be ignored without error",
				tx.PutPushResult(ctx, "c1", "k", prApplied(9, "second")))
			got, found, err := tx.GetPushResult(ctx, "c1", "k")
			must(t, "Tx.GetPushResult", err)
			expectEqual(t, "PR-3: found inside the Tx", true, found)
			prExpectExact(t, "PR-3: result read inside the Tx after the ignored put", first, got)
			stage(t, tx, tTodos, todo("b", "pj", "o"))
			commit(t, tx)
			prExpectStored(t, conn, "p1", "k", "PR-3", first)
			_, found, err = conn.GetRow(ctx, "p1", tTodos, "b")
			must(t, "GetRow", err)
			expectEqual(t, "PR-3: the Tx with the ignored put still commits its row", true, found)

			// A rejected result stored first is kept the same way.
			tx2 := begin(t, conn, "p1")
			defer func() { _ = tx2.Rollback(context.Background()) }()
			must(t, "CommitRejected", tx2.CommitRejected(ctx, "c1", "r", prRejected()))
			prPushWithResult(t, conn, "p1", "r", prApplied(0, "later"), todo("c", "pj", "o"))
			prExpectStored(t, conn, "p1", "r", "PR-3 (rejected first)", prRejected())
		}},
		// Catches: a driver that keeps only the last staged put of a Tx.
		Case{Name: "PR-3/first-writer-wins-within-a-tx", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			tx := begin(t, conn, "p1")
			defer func() { _ = tx.Rollback(context.Background()) }()
			first := prApplied(stage(t, tx, tTodos, todo("a", "pj", "o")), "first")
			must(t, "PutPushResult (first)", tx.PutPushResult(ctx, "c1", "k", first))
			must(t, "PR-3: a second PutPushResult in the same Tx must be ignored without error",
				tx.PutPushResult(ctx, "c1", "k", prRejected()))
			got, found, err := tx.GetPushResult(ctx, "c1", "k")
			must(t, "Tx.GetPushResult", err)
			expectEqual(t, "PR-3: found inside the Tx", true, found)
			prExpectExact(t, "PR-3: result read inside the Tx", first, got)
			commit(t, tx)
			prExpectStored(t, conn, "p1", "k", "PR-3", first)
		}},

		// Catches: a result written outside the Tx (autocommit), which
		// survives the rollback and then blocks the real first writer.
		Case{Name: "PR-4/rolled-back-result-not-stored", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			tx := begin(t, conn, "p1")
			defer func() { _ = tx.Rollback(context.Background()) }()
			must(t, "PutPushResult", tx.PutPushResult(ctx, "c1", "k", prApplied(stage(t, tx, tTodos, todo("a", "pj", "o")), "gone")))
			must(t, "Rollback", tx.Rollback(ctx))
			prExpectAbsent(t, conn, "p1", "k", "PR-4")
			later := prPushWithResult(t, conn, "p1", "k", prApplied(0, "later"), todo("b", "pj", "o"))
			prExpectStored(t, conn, "p1", "k", "PR-4 (the first committed put wins, not the rolled-back one)", later)
		}},

		// Catches: a check-then-insert of the idempotency key that is not
		// serialized with the push, so both pushes commit.
		Case{Name: "PR-6/simultaneous-same-key-one-commit", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			st := syncstore.OpenConn(conn)
			const rounds = 4
			for r := range rounds {
				key := fmt.Sprintf("k%d", r)
				var (
					wg      gosync.WaitGroup
					start   = make(chan struct{})
					results [2]driver.PushResult
					fresh   [2]bool
					errs    [2]error
				)
				for i := range 2 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						errs[i] = st.RunInTx(ctx, "p1", func(ctx context.Context, tx *syncstore.Tx) error {
							res, found, err := prIdempotentPush(ctx, tx.Driver(), key, fmt.Sprintf("caller-%d", i))
							results[i], fresh[i] = res, !found
							return err
						})
					}()
				}
				close(start)
				wg.Wait()
				for i, err := range errs {
					must(t, fmt.Sprintf("PR-6: push %d of key %s", i, key), err)
				}
				expectEqual(t, "PR-6: pushes that applied a commit for key "+key, 1, prBtoi(fresh[0])+prBtoi(fresh[1]))
				prExpectExact(t, "PR-6: both callers end with the same result for "+key, results[0], results[1])
				prExpectStored(t, conn, "p1", key, "PR-6", results[0])
				expectEqual(t, "PR-6: the result's commit", int64(r+1), results[0].CommitSeq)
				row, found, err := conn.GetRow(ctx, "p1", tTodos, "row-"+key)
				must(t, "GetRow", err)
				expectEqual(t, "PR-6: the row written by the winning push", true, found)
				expectEqual(t, "PR-6: the row's title names the winner", "by "+results[0].CacheIdentity, row.Values["title"])
			}
			max, err := conn.MaxCommitSeq(ctx, "p1")
			must(t, "MaxCommitSeq", err)
			expectEqual(t, "PR-6: commits after every key was pushed twice at once", int64(rounds), max)
		}},
		// Catches: an idempotency check that reads committed state before
		// the partition is taken (e.g. BEGIN DEFERRED), so a push made
		// while the first is still open commits a second time.
		Case{Name: "PR-6/push-while-first-is-open", Run: prPushWhileOpen},
	)
}

// prPushWhileOpen: push A stages its commit and result for key k and
// holds its Tx open; push B of the same key starts meanwhile. B either
// waits for A (then finds A's result) or, on an optimistic engine, runs
// alongside (then exactly one of them commits and the other, retried by
// RunInTx, finds the winner's result).
func prPushWhileOpen(t T, h Harness) {
	ctx := t.Context()
	conn := openStore(t, h)
	st := syncstore.OpenConn(conn)
	var (
		wg      gosync.WaitGroup
		holder  = newTxHolder()
		results [2]driver.PushResult
		fresh   [2]bool
		errs    [2]error
	)
	defer func() { holder.free(); wg.Wait() }()
	run := func(i int) {
		defer wg.Done()
		errs[i] = st.RunInTx(ctx, "p1", func(ctx context.Context, tx *syncstore.Tx) error {
			res, found, err := prIdempotentPush(ctx, tx.Driver(), "k", fmt.Sprintf("caller-%d", i))
			results[i], fresh[i] = res, !found
			if err == nil && !found {
				holder.hold()
			}
			return err
		})
	}
	wg.Add(1)
	go run(0)
	if _, ok := txRecv(holder.held, txGenerous); !ok {
		t.Fatalf("PR-6: the first push did not stage its commit within %s", txGenerous)
	}
	wg.Add(1)
	go run(1)
	holder.overlap()
	wg.Wait()
	for i, err := range errs {
		must(t, fmt.Sprintf("PR-6: push %d", i), err)
	}
	expectEqual(t, "PR-6: pushes that applied a commit", 1, prBtoi(fresh[0])+prBtoi(fresh[1]))
	prExpectExact(t, "PR-6: both callers end with the same result", results[0], results[1])
	prExpectStored(t, conn, "p1", "k", "PR-6", results[0])
	max, err := conn.MaxCommitSeq(ctx, "p1")
	must(t, "MaxCommitSeq", err)
	expectEqual(t, "PR-6: commits after two pushes of one key", int64(1), max)
}

// prIdempotentPush is a push layer's idempotent push inside tx: if a
// result is stored under (c1, key) it is returned with found=true;
// otherwise the push upserts the todo "row-<key>" titled "by <caller>",
// appends a commit, stores an applied result whose CacheIdentity is caller
// and returns it.
func prIdempotentPush(ctx context.Context, tx driver.Tx, key, caller string) (driver.PushResult, bool, error) {
	res, found, err := tx.GetPushResult(ctx, "c1", key)
	if err != nil || found {
		return res, found, err
	}
	row := todo("row-"+key, "pj", "o")
	row.Values["title"] = "by " + caller
	if err := tx.UpsertRow(ctx, tTodos, row); err != nil {
		return driver.PushResult{}, false, err
	}
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: key, ActorID: "a1",
		CreatedAtMs: 1700000000000, Changes: []driver.Change{upsertChange(tTodos, row)}})
	if err != nil {
		return driver.PushResult{}, false, err
	}
	res = prApplied(seq, caller)
	return res, false, tx.PutPushResult(ctx, "c1", key, res)
}

// prBtoi returns 1 for true, 0 for false.
func prBtoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
