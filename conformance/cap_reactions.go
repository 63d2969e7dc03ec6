package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases of the reactions capability (docs/contract.md RX-1…RX-10): this file
// holds the helpers and RX-1 (enqueue in the push transaction); claims are
// in cap_reactions_claim.go, ownership and failure in
// cap_reactions_owner.go, listing and pruning in cap_reactions_admin.go.
//
// Times in these cases are small made-up epoch milliseconds: a driver
// must take every time from its arguments, never from its own clock.

// rxLongLease is a lease no case lets expire.
const rxLongLease = int64(3_600_000)

// rxConn returns a fresh store (TestSchema ensured) and its reactions half.
func rxConn(t T, h Harness) (driver.Conn, driver.ReactionsConn) {
	t.Helper()
	conn := openStore(t, h)
	rc, ok := conn.(driver.ReactionsConn)
	if !ok {
		t.Fatalf("the Conn does not implement driver.ReactionsConn although the case runs for capability %s", driver.CapReactions)
	}
	return conn, rc
}

// rxTx returns the reactions half of tx, rolling tx back and failing the
// case when it is missing (ERR-3 reports the half capability itself).
func rxTx(t T, tx driver.Tx) driver.ReactionsTx {
	t.Helper()
	rt, ok := tx.(driver.ReactionsTx)
	if !ok {
		_ = tx.Rollback(context.Background())
		t.Fatalf("the Tx does not implement driver.ReactionsTx: the reactions capability is declared by halves (ERR-3)")
	}
	return rt
}

// rxIn returns a reaction input of type typ created at createdAt, with a
// payload naming its key and 3 attempts.
func rxIn(key, typ string, createdAt int64) driver.ReactionInput {
	return driver.ReactionInput{Key: key, Type: typ, Payload: driver.JSON(fmt.Sprintf(`{"key": %q}`, key)),
		MaxAttempts: 3, CreatedAtMs: createdAt}
}

// rxWant returns what a freshly enqueued input must read back as (RX-1).
func rxWant(in driver.ReactionInput, seq int64) driver.Reaction {
	return driver.Reaction{Key: in.Key, Type: in.Type, Payload: in.Payload, Status: driver.ReactionPending,
		MaxAttempts: in.MaxAttempts, SourceCommitSeq: seq, CreatedAtMs: in.CreatedAtMs,
		AvailableAtMs: in.CreatedAtMs, UpdatedAtMs: in.CreatedAtMs}
}

// rxLeased returns r as a claim by owner at now for lease ms leaves it (RX-2).
func rxLeased(r driver.Reaction, owner string, now, lease int64) driver.Reaction {
	r.Status = driver.ReactionLeased
	r.Attempts++
	r.LeaseOwner = owner
	r.LeaseExpiresAtMs = now + lease
	r.UpdatedAtMs = now
	return r
}

// rxTryEnqueue pushes one commit (a todo row) with inputs enqueued against
// it and returns the commit's seq and the first error of Enqueue or
// Commit; on an Enqueue error the Tx is rolled back.
func rxTryEnqueue(t T, conn driver.Conn, p string, inputs ...driver.ReactionInput) (int64, error) {
	t.Helper()
	ctx := t.Context()
	tx := begin(t, conn, p)
	defer func() { _ = tx.Rollback(context.Background()) }()
	seq := stage(t, tx, tTodos, todo(fmt.Sprintf("rx-src-%d", nextID()), "pr", "ow"))
	if err := rxTx(t, tx).EnqueueReactions(ctx, seq, inputs); err != nil {
		return seq, err
	}
	return seq, tx.Commit(ctx)
}

// rxEnqueue is rxTryEnqueue that fails the case on error.
func rxEnqueue(t T, conn driver.Conn, p string, inputs ...driver.ReactionInput) int64 {
	t.Helper()
	seq, err := rxTryEnqueue(t, conn, p, inputs...)
	if err != nil {
		t.Fatalf("setup: enqueue %d reactions: %v", len(inputs), err)
	}
	return seq
}

// rxList returns every reaction of p (RX-8 order: newest first).
func rxList(t T, rc driver.ReactionsConn, p string) []driver.Reaction {
	t.Helper()
	rs, err := rc.ListReactions(t.Context(), p, driver.ReactionListQuery{Limit: 10000})
	if err != nil {
		t.Fatalf("ListReactions: %v", err)
	}
	return rs
}

// rxGet returns the reaction of p with key, failing the case when absent.
func rxGet(t T, rc driver.ReactionsConn, p, key string) driver.Reaction {
	t.Helper()
	for _, r := range rxList(t, rc, p) {
		if r.Key == key {
			return r
		}
	}
	t.Fatalf("reaction %q is missing from ListReactions", key)
	return driver.Reaction{}
}

// rxClaim claims or fails the case.
func rxClaim(t T, rc driver.ReactionsConn, p string, req driver.ClaimRequest) []driver.Reaction {
	t.Helper()
	rs, err := rc.ClaimReactions(t.Context(), p, req)
	if err != nil {
		t.Fatalf("ClaimReactions(owner %q, now %d): %v", req.Owner, req.NowMs, err)
	}
	return rs
}

// rxClaimAll claims every due reaction of p for owner at now.
func rxClaimAll(t T, rc driver.ReactionsConn, p, owner string, now, lease int64) []driver.Reaction {
	t.Helper()
	return rxClaim(t, rc, p, driver.ClaimRequest{Owner: owner, NowMs: now, LeaseMs: lease, Limit: 10000})
}

// rxKeys returns the keys of rs in order.
func rxKeys(rs []driver.Reaction) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Key
	}
	return out
}

// rxBool checks a (bool, error) result of an owner operation.
func rxBool(t T, what string, want bool, got bool, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	if got != want {
		t.Errorf("%s returned %v, want %v", what, got, want)
	}
}

// rxStore wraps conn in a sync.Store, for the cases that check the
// validation of reaction input (group V applied to RX).
func rxStore(t T, conn driver.Conn) *syncstore.Store {
	t.Helper()
	s := syncstore.OpenConn(conn)
	if err := s.EnsureSchema(t.Context(), TestSchema()); err != nil {
		t.Fatalf("setup: Store.EnsureSchema: %v", err)
	}
	return s
}

func init() {
	register(
		// Catches: reactions written outside the Tx (visible early), or
		// stored with other attempts, availability, commit seq or payload.
		Case{Name: "RX-1/enqueue-lands-with-commit", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, rc := rxConn(t, h)
			a := rxIn("a", "email", 1000)
			b := driver.ReactionInput{Key: "b", Type: "sms", Payload: driver.JSON("{\"z\":1,  \"a\" : [true, null, \"\\u00e9\"], \"z\":2}"),
				MaxAttempts: 7, CreatedAtMs: 2000}
			tx := begin(t, conn, "p1")
			defer func() { _ = tx.Rollback(context.Background()) }()
			stage(t, tx, tTodos, todo("t1", "pr", "ow"))
			seq := stage(t, tx, tTodos, todo("t2", "pr", "ow"))
			must(t, "EnqueueReactions", rxTx(t, tx).EnqueueReactions(ctx, seq, []driver.ReactionInput{a, b}))
			expectEqual(t, "reactions visible outside the Tx before Commit (RX-1, TX-4)", []driver.Reaction(nil), rxList(t, rc, "p1"))
			commit(t, tx)
			expectEqual(t, "reactions after Commit (RX-1: pending, attempts 0, available at createdAt, source commit kept)",
				[]driver.Reaction{rxWant(b, seq), rxWant(a, seq)}, rxList(t, rc, "p1"))
			if seq != 2 {
				t.Errorf("setup: the second commit of the Tx got seq %d, want 2 (SEQ-3)", seq)
			}
		}},
		// Catches: reactions that survive a rollback, or a rollback that
		// leaves their keys taken.
		Case{Name: "RX-1/rollback-discards", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, rc := rxConn(t, h)
			tx := begin(t, conn, "p1")
			seq := stage(t, tx, tTodos, todo("t1", "pr", "ow"))
			must(t, "EnqueueReactions", rxTx(t, tx).EnqueueReactions(ctx, seq, []driver.ReactionInput{rxIn("a", "x", 10), rxIn("b", "x", 10)}))
			must(t, "Rollback", tx.Rollback(ctx))
			expectEqual(t, "reactions after Rollback (RX-1)", []driver.Reaction(nil), rxList(t, rc, "p1"))
			expectEqual(t, "claimable after Rollback (RX-1)", []string{}, rxKeys(rxClaimAll(t, rc, "p1", "w", 1e6, rxLongLease)))
			a := rxIn("a", "y", 20)
			seq = rxEnqueue(t, conn, "p1", a)
			expectEqual(t, "a rolled-back key enqueued again (RX-1)", []driver.Reaction{rxWant(a, seq)}, rxList(t, rc, "p1"))
		}},
		// Catches: a duplicate key that replaces or keeps the stored
		// reaction silently, or lands the rest of its transaction.
		Case{Name: "RX-1/duplicate-key-fails-the-tx", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			conn, rc := rxConn(t, h)
			first := rxIn("k", "x", 100)
			seq := rxEnqueue(t, conn, "p1", first)
			done := rxIn("done", "x", 50)
			rxEnqueue(t, conn, "p1", done)
			rxClaim(t, rc, "p1", driver.ClaimRequest{Owner: "w", NowMs: 60, LeaseMs: 10, Limit: 1})
			ok, err := rc.CompleteReaction(t.Context(), "p1", "done", "w", 61)
			rxBool(t, "setup: CompleteReaction", true, ok, err)
			before := rxList(t, rc, "p1")
			for _, tc := range []struct {
				name   string
				inputs []driver.ReactionInput
			}{
				{"existing pending key", []driver.ReactionInput{rxIn("fresh", "x", 200), rxIn("k", "y", 200)}},
				{"existing completed key", []driver.ReactionInput{rxIn("done", "x", 200)}},
				{"same key twice in one call", []driver.ReactionInput{rxIn("n", "x", 200), rxIn("n", "x", 201)}},
			} {
				_, err := rxTryEnqueue(t, conn, "p1", tc.inputs...)
				expectCode(t, "enqueue with an "+tc.name+" (RX-1)", err, driver.CodeDuplicateReactionKey)
				expectEqual(t, "reactions after a failed enqueue with an "+tc.name+" (RX-1)", before, rxList(t, rc, "p1"))
			}
			if got := rxGet(t, rc, "p1", "k"); got.SourceCommitSeq != seq || got.Type != "x" {
				t.Errorf("the stored reaction was altered by a duplicate (RX-1): %+v", got)
			}
		}},
		// Catches: a key taken across two Enqueue calls of one Tx.
		Case{Name: "RX-1/duplicate-across-calls-in-one-tx", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, rc := rxConn(t, h)
			tx := begin(t, conn, "p1")
			defer func() { _ = tx.Rollback(context.Background()) }()
			seq := stage(t, tx, tTodos, todo("t1", "pr", "ow"))
			rt := rxTx(t, tx)
			must(t, "first EnqueueReactions", rt.EnqueueReactions(ctx, seq, []driver.ReactionInput{rxIn("k", "x", 1)}))
			err := rt.EnqueueReactions(ctx, seq, []driver.ReactionInput{rxIn("k", "x", 2)})
			if err == nil {
				err = tx.Commit(ctx)
			}
			expectCode(t, "the same key enqueued twice in one Tx (RX-1)", err, driver.CodeDuplicateReactionKey)
			_ = tx.Rollback(context.Background())
			expectEqual(t, "reactions after the failed Tx (RX-1)", []driver.Reaction(nil), rxList(t, rc, "p1"))
			if _, found, err := conn.GetRow(ctx, "p1", tTodos, "t1"); err != nil || found {
				t.Errorf("the failed Tx's row landed (found %v, err %v), want nothing (RX-1)", found, err)
			}
		}},
		// Catches: keys unique across partitions, or reads that mix them.
		Case{Name: "RX-1/same-key-in-two-partitions", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			conn, rc := rxConn(t, h)
			in1 := rxIn("k", "x", 100)
			in2 := driver.ReactionInput{Key: "k", Type: "x", Payload: driver.JSON(`{"partition":2}`), MaxAttempts: 1, CreatedAtMs: 100}
			s1 := rxEnqueue(t, conn, "p1", in1)
			rxEnqueue(t, conn, "p2", rxIn("other", "x", 50))
			s2, err := rxTryEnqueue(t, conn, "p2", in2)
			if err != nil {
				t.Fatalf("enqueue key k in p2 while p1 has it: %v (RX-1, P-1: keys are per partition)", err)
			}
			expectEqual(t, "p1's reactions (P-1)", []driver.Reaction{rxWant(in1, s1)}, rxList(t, rc, "p1"))
			got := rxClaimAll(t, rc, "p2", "w", 1000, rxLongLease)
			expectEqual(t, "p2's claim (P-1)", []string{"other", "k"}, rxKeys(got))
			expectEqual(t, "p1 after p2's claim (P-1)", []driver.Reaction{rxWant(in1, s1)}, rxList(t, rc, "p1"))
			if len(got) == 2 {
				expectEqual(t, "p2's reaction k", rxLeased(rxWant(in2, s2), "w", 1000, rxLongLease), got[1])
			}
		}},
		// Catches: enqueue input reaching the driver unchecked through
		// sync (V-2 keys and types, attempts, JSON payload, seq).
		Case{Name: "RX-1/enqueue-input-validated", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, rc := rxConn(t, h)
			s := rxStore(t, conn)
			long := make([]byte, 257)
			for i := range long {
				long[i] = 'k'
			}
			good := rxIn("good", "x", 1)
			for _, tc := range []struct {
				name string
				seq  int64
				in   driver.ReactionInput
			}{
				{"empty key", 1, driver.ReactionInput{Type: "x", Payload: "{}", MaxAttempts: 1}},
				{"257-byte key", 1, driver.ReactionInput{Key: string(long), Type: "x", Payload: "{}", MaxAttempts: 1}},
				{"key with NUL", 1, driver.ReactionInput{Key: "a\x00b", Type: "x", Payload: "{}", MaxAttempts: 1}},
				{"key not UTF-8", 1, driver.ReactionInput{Key: "a\xffb", Type: "x", Payload: "{}", MaxAttempts: 1}},
				{"empty type", 1, driver.ReactionInput{Key: "k", Payload: "{}", MaxAttempts: 1}},
				{"256-byte type", 1, driver.ReactionInput{Key: "k", Type: string(long[:256]), Payload: "{}", MaxAttempts: 1}},
				{"zero max attempts", 1, driver.ReactionInput{Key: "k", Type: "x", Payload: "{}", MaxAttempts: 0}},
				{"payload not JSON", 1, driver.ReactionInput{Key: "k", Type: "x", Payload: "{", MaxAttempts: 1}},
				{"empty payload", 1, driver.ReactionInput{Key: "k", Type: "x", MaxAttempts: 1}},
				{"negative source seq", -1, rxIn("k", "x", 1)},
			} {
				tx, err := s.Begin(ctx, "p1")
				must(t, "Store.Begin", err)
				err = tx.EnqueueReactions(ctx, tc.seq, []driver.ReactionInput{good, tc.in})
				expectCode(t, "EnqueueReactions with a "+tc.name, err, driver.CodeInvalidArgument)
				if err := tx.Commit(ctx); err != nil {
					t.Errorf("Commit after a rejected enqueue: %v", err)
				}
			}
			expectEqual(t, "reactions after rejected enqueues (V-9: nothing written)", []driver.Reaction(nil), rxList(t, rc, "p1"))
			var e *driver.Error
			tx, err := s.Begin(ctx, "p1")
			must(t, "Store.Begin", err)
			defer func() { _ = tx.Rollback(context.Background()) }()
			err = tx.EnqueueReactions(ctx, 1, []driver.ReactionInput{{Key: "secret-key-\xff", Type: "x", Payload: "{}", MaxAttempts: 1}})
			if errors.As(err, &e) && strings.Contains(e.Error(), "secret-key") {
				t.Errorf("the error message repeats the rejected key (V-10): %q", e.Error())
			}
		}},
	)
}
