package conformance

import (
	"strings"

	"github.com/syncstore/syncstore/driver"
)

// Ownership (RX-5), failure (RX-6) and operator retry (RX-7).

// rxLeasedRow enqueues one reaction "r" (created at 100, 3 attempts) in p1
// and claims it for owner at 100 with the given lease. It returns the
// leased row as the claim returned it.
func rxLeasedRow(t T, h Harness, owner string, lease int64) (driver.Conn, driver.ReactionsConn, driver.Reaction) {
	t.Helper()
	conn, rc := rxConn(t, h)
	seq := rxEnqueue(t, conn, "p1", rxIn("r", "x", 100))
	got := rxClaimAll(t, rc, "p1", owner, 100, lease)
	want := rxLeased(rxWant(rxIn("r", "x", 100), seq), owner, 100, lease)
	if d := diff([]driver.Reaction{want}, got); d != "" {
		t.Fatalf("setup: claim of r %s", d)
	}
	return conn, rc, want
}

// rxOwnerOps tries Complete, ExtendLease and Fail (retry) as owner at now
// and checks each returns want.
func rxOwnerOps(t T, rc driver.ReactionsConn, p, key, owner string, now int64, want bool, why string) {
	t.Helper()
	ctx := t.Context()
	ok, err := rc.ExtendReactionLease(ctx, p, key, owner, now, 1000)
	rxBool(t, "ExtendReactionLease "+why, want, ok, err)
	ok, err = rc.FailReaction(ctx, p, key, owner, driver.FailRequest{NowMs: now, Retry: true, RetryAtMs: now, Code: "x.fail"})
	rxBool(t, "FailReaction "+why, want, ok, err)
	ok, err = rc.CompleteReaction(ctx, p, key, owner, now)
	rxBool(t, "CompleteReaction "+why, want, ok, err)
}

func init() {
	register(
		// Catches: Complete/Extend/Fail that ignore the owner.
		Case{Name: "RX-5/other-owner-changes-nothing", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			_, rc, leased := rxLeasedRow(t, h, "w1", 1000)
			rxOwnerOps(t, rc, "p1", "r", "w2", 200, false, "by another owner (RX-5)")
			expectEqual(t, "r after another owner's calls (RX-5: nothing changes)", leased, rxGet(t, rc, "p1", "r"))
			ok, err := rc.CompleteReaction(t.Context(), "p1", "r", "w1", 300)
			rxBool(t, "CompleteReaction by the owner", true, ok, err)
			want := leased
			want.Status, want.LeaseOwner, want.LeaseExpiresAtMs, want.UpdatedAtMs = driver.ReactionCompleted, "", 0, 300
			want.CompletedAtMs = 300
			expectEqual(t, "r after its owner completed it (RX-5: completed at now, lease cleared, attempts kept)", want, rxGet(t, rc, "p1", "r"))
		}},
		// Catches: a stale owner whose late Complete/Fail overrides the
		// worker that reclaimed the row.
		Case{Name: "RX-5/stale-owner-after-reclaim", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			ctx := t.Context()
			_, rc, leased := rxLeasedRow(t, h, "w1", 10)
			re := rxClaimAll(t, rc, "p1", "w2", 110, 50)
			want := rxLeased(leased, "w2", 110, 50)
			expectEqual(t, "reclaim after expiry (RX-2)", []driver.Reaction{want}, re)
			rxOwnerOps(t, rc, "p1", "r", "w1", 120, false, "by the stale owner after a reclaim (RX-5)")
			expectEqual(t, "r after the stale owner's calls (RX-5: nothing changes)", want, rxGet(t, rc, "p1", "r"))
			ok, err := rc.ExtendReactionLease(ctx, "p1", "r", "w2", 130, 70)
			rxBool(t, "ExtendReactionLease by the new owner", true, ok, err)
			want.LeaseExpiresAtMs, want.UpdatedAtMs = 200, 130
			expectEqual(t, "r after the new owner extended its lease (RX-5: expiry = now + lease)", want, rxGet(t, rc, "p1", "r"))
			expectEqual(t, "claim at 199, before the extended expiry", []string{}, rxKeys(rxClaimAll(t, rc, "p1", "w3", 199, 10)))
			ok, err = rc.CompleteReaction(ctx, "p1", "r", "w2", 150)
			rxBool(t, "CompleteReaction by the new owner", true, ok, err)
		}},
		// Catches: a lease treated as lost at expiry although nobody
		// reclaimed it (the row is still leased to its owner, RX-5).
		Case{Name: "RX-5/expired-unreclaimed-lease-still-owned", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			_, rc, leased := rxLeasedRow(t, h, "w1", 10)
			ok, err := rc.ExtendReactionLease(t.Context(), "p1", "r", "w1", 500, 100)
			rxBool(t, "ExtendReactionLease after expiry without a reclaim (RX-5: still leased to w1)", true, ok, err)
			want := leased
			want.LeaseExpiresAtMs, want.UpdatedAtMs = 600, 500
			expectEqual(t, "r after the late extension", want, rxGet(t, rc, "p1", "r"))
			ok, err = rc.CompleteReaction(t.Context(), "p1", "r", "w1", 900)
			rxBool(t, "CompleteReaction after expiry without a reclaim (RX-5)", true, ok, err)
		}},
		// Catches: owner operations that act on rows that are not leased.
		Case{Name: "RX-5/rows-not-leased", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, rc := rxConn(t, h)
			rxEnqueue(t, conn, "p1", rxIn("done", "x", 1), rxIn("dead", "x", 2))
			rxClaimAll(t, rc, "p1", "w", 10, 1000)
			ok, err := rc.CompleteReaction(ctx, "p1", "done", "w", 11)
			rxBool(t, "setup: CompleteReaction", true, ok, err)
			ok, err = rc.FailReaction(ctx, "p1", "dead", "w", driver.FailRequest{NowMs: 11, Code: "x.fatal"})
			rxBool(t, "setup: FailReaction", true, ok, err)
			rxEnqueue(t, conn, "p1", rxIn("pending", "x", 100))
			rxEnqueue(t, conn, "p2", rxIn("elsewhere", "x", 1))
			rxClaimAll(t, rc, "p2", "w", 10, 1000)
			before := rxList(t, rc, "p1")
			for _, key := range []string{"done", "dead", "pending", "missing", "elsewhere"} {
				rxOwnerOps(t, rc, "p1", key, "w", 20, false, "on "+key+" (RX-5: only a leased row)")
			}
			expectEqual(t, "p1 after calls on rows not leased (RX-5)", before, rxList(t, rc, "p1"))
			if got := rxGet(t, rc, "p2", "elsewhere"); got.Status != driver.ReactionLeased || got.LeaseOwner != "w" {
				t.Errorf("p2's leased row changed by calls on p1 (P-1): %+v", got)
			}
		}},
		// Catches: owner-operation input reaching the driver unchecked.
		Case{Name: "RX-5/owner-input-validated", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, rc, leased := rxLeasedRow(t, h, "w1", 1000)
			s := rxStore(t, conn)
			for _, tc := range []struct {
				name, p, key, owner string
				lease               int64
			}{
				{"empty partition", "", "r", "w1", 10},
				{"empty key", "p1", "", "w1", 10},
				{"257-byte key", "p1", strings.Repeat("k", 257), "w1", 10},
				{"empty owner", "p1", "r", "", 10},
				{"owner with NUL", "p1", "r", "w\x001", 10},
			} {
				_, err := s.CompleteReaction(ctx, tc.p, tc.key, tc.owner, 200)
				expectCode(t, "Store.CompleteReaction with "+tc.name, err, driver.CodeInvalidArgument)
				_, err = s.ExtendReactionLease(ctx, tc.p, tc.key, tc.owner, 200, tc.lease)
				expectCode(t, "Store.ExtendReactionLease with "+tc.name, err, driver.CodeInvalidArgument)
				_, err = s.FailReaction(ctx, tc.p, tc.key, tc.owner, driver.FailRequest{NowMs: 200, Code: "x.y"})
				expectCode(t, "Store.FailReaction with "+tc.name, err, driver.CodeInvalidArgument)
			}
			_, err := s.ExtendReactionLease(ctx, "p1", "r", "w1", 200, 0)
			expectCode(t, "Store.ExtendReactionLease with a zero lease", err, driver.CodeInvalidArgument)
			expectEqual(t, "r after rejected calls (V-9)", leased, rxGet(t, rc, "p1", "r"))
		}},
		// Catches: a retry that loses the failure, changes attempts, keeps
		// the lease, or becomes due at the wrong time.
		Case{Name: "RX-6/fail-with-retry-reschedules", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			_, rc, leased := rxLeasedRow(t, h, "w1", 1000)
			details := driver.JSON(`{"status": 503,  "retryIn" :"5s"}`)
			ok, err := rc.FailReaction(t.Context(), "p1", "r", "w1", driver.FailRequest{NowMs: 120, Retry: true, RetryAtMs: 500, Code: "smtp.timeout", Details: details})
			rxBool(t, "FailReaction with retry", true, ok, err)
			want := leased
			want.Status, want.AvailableAtMs, want.LeaseOwner, want.LeaseExpiresAtMs, want.UpdatedAtMs = driver.ReactionPending, 500, "", 0, 120
			want.LastFailure = &driver.ReactionFailure{Code: "smtp.timeout", Details: details, AtMs: 120}
			expectEqual(t, "r after a failure with retry (RX-6: pending at retryAt, failure kept, attempts unchanged)", want, rxGet(t, rc, "p1", "r"))
			expectEqual(t, "claim at 499, before retryAt", []string{}, rxKeys(rxClaimAll(t, rc, "p1", "w2", 499, 10)))
			again := rxClaimAll(t, rc, "p1", "w2", 500, 10)
			expectEqual(t, "claim at retryAt (RX-6; the last failure stays while leased)", []driver.Reaction{rxLeased(want, "w2", 500, 10)}, again)
		}},
		// Catches: a dead-letter that stays claimable, keeps the lease, or
		// takes RetryAtMs as its availability.
		Case{Name: "RX-6/fail-without-retry-dead-letters", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			_, rc, leased := rxLeasedRow(t, h, "w1", 1000)
			ok, err := rc.FailReaction(t.Context(), "p1", "r", "w1", driver.FailRequest{NowMs: 130, RetryAtMs: 999, Code: "bad.payload"})
			rxBool(t, "FailReaction without retry", true, ok, err)
			want := leased
			want.Status, want.AvailableAtMs, want.LeaseOwner, want.LeaseExpiresAtMs, want.UpdatedAtMs = driver.ReactionDeadLetter, 130, "", 0, 130
			want.LastFailure = &driver.ReactionFailure{Code: "bad.payload", AtMs: 130}
			expectEqual(t, "r after a failure without retry (RX-6: dead letter available at the failure time, empty details kept empty)", want, rxGet(t, rc, "p1", "r"))
			expectEqual(t, "claim of a dead letter (RX-6)", []string{}, rxKeys(rxClaimAll(t, rc, "p1", "w2", 1e12, 10)))
		}},
		// Catches: failure input reaching the driver unchecked: reserved or
		// malformed codes (V-8), details that are not bounded JSON.
		Case{Name: "RX-6/failure-code-and-details-validated", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, rc, leased := rxLeasedRow(t, h, "w1", 1000)
			s := rxStore(t, conn)
			big := driver.JSON(`"` + strings.Repeat("d", 8190) + `"`) // 8,192 bytes: the bound
			for _, tc := range []struct {
				name    string
				code    string
				details driver.JSON
			}{
				{"an empty code", "", ""},
				{"a code starting with a digit", "1x", ""},
				{"a code with a space", "smtp timeout", ""},
				{"a 129-byte code", "c" + strings.Repeat("x", 128), ""},
				{"the reserved prefix reaction.", "reaction.attempts_exhausted", ""},
				{"the reserved prefix sync.", "sync.storage.internal", ""},
				{"details that are not JSON", "x.y", "{oops"},
				{"details over 8 KiB", "x.y", big + " "},
			} {
				_, err := s.FailReaction(ctx, "p1", "r", "w1", driver.FailRequest{NowMs: 200, Retry: true, RetryAtMs: 300, Code: tc.code, Details: tc.details})
				expectCode(t, "Store.FailReaction with "+tc.name+" (RX-6, V-8)", err, driver.CodeInvalidArgument)
			}
			expectEqual(t, "r after rejected failures (V-9)", leased, rxGet(t, rc, "p1", "r"))
			ok, err := s.FailReaction(ctx, "p1", "r", "w1", driver.FailRequest{NowMs: 200, Retry: true, RetryAtMs: 300, Code: "x.y", Details: big})
			rxBool(t, "Store.FailReaction with 8 KiB of details (RX-6: the bound is inclusive)", true, ok, err)
			if got := rxGet(t, rc, "p1", "r"); got.LastFailure == nil || got.LastFailure.Details != big {
				t.Errorf("8 KiB of details not kept byte-for-byte (RX-6)")
			}
		}},
		// Catches: a retry that keeps attempts, ignores now, or revives rows
		// that are not dead letters.
		Case{Name: "RX-7/retry-revives-dead-letter", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, rc := rxConn(t, h)
			in := rxIn("r", "x", 100)
			in.MaxAttempts = 1
			seq := rxEnqueue(t, conn, "p1", in)
			rxClaimAll(t, rc, "p1", "w", 100, 10)
			ok, err := rc.FailReaction(ctx, "p1", "r", "w", driver.FailRequest{NowMs: 105, Code: "x.fatal", Details: `{"n":1}`})
			rxBool(t, "setup: FailReaction", true, ok, err)
			ok, err = rc.RetryReaction(ctx, "p1", "r", 300)
			rxBool(t, "RetryReaction of a dead letter (RX-7)", true, ok, err)
			want := rxWant(in, seq)
			want.AvailableAtMs, want.UpdatedAtMs = 300, 300
			expectEqual(t, "r after RetryReaction (RX-7: pending, attempts 0, available now, last failure cleared)", want, rxGet(t, rc, "p1", "r"))
			expectEqual(t, "claim at 299", []string{}, rxKeys(rxClaimAll(t, rc, "p1", "w", 299, 10)))
			expectEqual(t, "claim at 300 (RX-7: the attempts budget is whole again)", []driver.Reaction{rxLeased(want, "w", 300, 10)},
				rxClaimAll(t, rc, "p1", "w", 300, 10))
			ok, err = rc.RetryReaction(ctx, "p1", "r", 400)
			rxBool(t, "RetryReaction of the now leased row (RX-7)", false, ok, err)
		}},
		// Catches: retry turning pending, leased or completed rows into
		// pending (resetting their attempts) or reviving missing keys.
		Case{Name: "RX-7/retry-only-dead-letter", Capability: driver.CapReactions, Run: func(t T, h Harness) {
			ctx := t.Context()
			conn, rc := rxConn(t, h)
			rxEnqueue(t, conn, "p1", rxIn("done", "x", 1), rxIn("leased", "x", 2))
			rxClaimAll(t, rc, "p1", "w", 10, 1000)
			ok, err := rc.CompleteReaction(ctx, "p1", "done", "w", 11)
			rxBool(t, "setup: CompleteReaction", true, ok, err)
			rxEnqueue(t, conn, "p1", rxIn("pending", "x", 100))
			before := rxList(t, rc, "p1")
			for _, key := range []string{"done", "leased", "pending", "missing"} {
				ok, err := rc.RetryReaction(ctx, "p1", key, 50)
				rxBool(t, "RetryReaction of "+key+" (RX-7: dead letters only)", false, ok, err)
			}
			expectEqual(t, "reactions after refused retries (RX-7)", before, rxList(t, rc, "p1"))
			s := rxStore(t, conn)
			_, err = s.RetryReaction(ctx, "p1", "", 50)
			expectCode(t, "Store.RetryReaction with an empty key", err, driver.CodeInvalidArgument)
		}},
	)
}
