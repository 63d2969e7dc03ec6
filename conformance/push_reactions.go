package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for PUSH-16: reaction keys a PlanReactions planner returns are
// per commit — sync.Store.Push over any driver with reactions.

func init() {
	register(
		Case{Name: "PUSH-16/planner-keys-are-per-commit", Capability: driver.CapReactions, Run: pushReactionKeysPerCommit},
		Case{Name: "PUSH-16/key-repeated-in-a-commit-writes-nothing", Capability: driver.CapReactions, Run: pushReactionKeyRepeated},
	)
}

// pushDone returns pushTodo with done set.
func pushDone(id, title string, done bool) syncstore.PushOp {
	o := pushTodo(id, "p7", "o1", title, nil)
	o.Values["done"] = done
	return o
}

// Catches: a planner key stored as given, so the second commit that
// completes a row fails with duplicate_reaction_key (an error, not an
// answer); keys derived from something else than (client id, client
// commit id, planner key); a planner that cannot see the row before the
// commit (AppliedCommit.Ops), so it plans on states, not transitions.
func pushReactionKeysPerCommit(t T, h Harness) {
	conn, s := pushStore(t, h)
	ctx := t.Context()
	s.SetPushOptions(syncstore.PushOptions{PlanReactions: func(ctx context.Context, tx *syncstore.Tx, c syncstore.AppliedCommit) ([]driver.ReactionInput, error) {
		var rs []driver.ReactionInput
		for _, o := range c.Ops {
			// A transition false → true: the row before the op was not done.
			if o.Op.Op == driver.OpUpsert && o.Written.Values["done"] == true && !(o.Exists && o.Current.Values["done"] == true) {
				rs = append(rs, driver.ReactionInput{Key: "completed:" + o.Op.RowID, Type: "mail", Payload: `{}`, MaxAttempts: 3, CreatedAtMs: c.CreatedAtMs})
			}
		}
		return rs, nil
	}})
	long := strings.Repeat("c", 240)
	if k := syncstore.ReactionKey(long, "k1", "completed:t1"); len(k) > syncstore.MaxReactionKeyBytes || !strings.HasPrefix(k, "sha256:") {
		t.Fatalf("PUSH-16: ReactionKey over a 250-byte client id = %q, want the hashed form", k)
	}
	steps := []syncstore.PushRequest{
		pushReq("c1", "k1", pushDone("t1", "a", false)),
		pushReq("c1", "k2", pushDone("t1", "a", true)),  // complete
		pushReq("c1", "k3", pushDone("t1", "a", false)), // reopen
		pushReq("c1", "k4", pushDone("t1", "a", true)),  // complete again
		pushReq("c1", "k5", pushDone("t1", "b", true)),  // already done: no transition
		pushReq("c1", "k6", pushDone("t1", "b", false)), // reopen
		pushReq("c2", "k4", pushDone("t1", "b", true)),  // another client, the same commit id
		pushReq("c2", "k5", pushDone("t1", "c", false)), // reopen
		pushReq(long, "k1", pushDone("t1", "b", true)),  // a derived key over 256 bytes: hashed
	}
	planned := map[string]bool{"c1/k2": true, "c1/k4": true, "c2/k4": true, long + "/k1": true} // the completing commits
	var want []string
	for i, req := range steps {
		r, err := s.Push(ctx, "p1", req)
		must(t, fmt.Sprintf("PUSH-16: push %d", i+1), err)
		expectEqual(t, fmt.Sprintf("PUSH-16: push %d applied", i+1), driver.PushApplied, r.Status)
		if planned[req.ClientID+"/"+req.ClientCommitID] {
			want = append(want, fmt.Sprintf("%s %s/%s seq=%d", syncstore.ReactionKey(req.ClientID, req.ClientCommitID, "completed:t1"),
				req.ClientID, req.ClientCommitID, r.CommitSeq))
		}
	}
	rs, err := s.ListReactions(ctx, "p1", driver.ReactionListQuery{Limit: 10})
	must(t, "ListReactions", err)
	var got []string
	for _, x := range rs {
		got = append(got, fmt.Sprintf("%s %s/%s seq=%d", x.Key, x.SourceClientID, x.SourceClientCommitID, x.SourceCommitSeq))
	}
	slices.Sort(want)
	slices.Sort(got)
	expectEqual(t, "PUSH-16: one reaction per completing commit, keyed by its commit", want, got)
	for _, req := range steps[1:] {
		key := syncstore.ReactionKey(req.ClientID, req.ClientCommitID, "completed:t1")
		_, found, err := conn.(driver.ReactionsConn).GetReaction(ctx, "p1", key)
		must(t, "GetReaction", err)
		expectEqual(t, "PUSH-16: GetReaction by the derived key "+key, planned[req.ClientID+"/"+req.ClientCommitID], found)
	}
}

// Catches: a key repeated inside one commit enqueued once, or failing
// with an error that does not name it, or something written.
func pushReactionKeyRepeated(t T, h Harness) {
	conn, s := pushStore(t, h)
	ctx := t.Context()
	pushDo(t, s, "p1", pushReq("c1", "k1", pushDone("t1", "a", false)))
	before := pushStateOf(t, conn, "p1")
	s.SetPushOptions(syncstore.PushOptions{PlanReactions: func(ctx context.Context, tx *syncstore.Tx, c syncstore.AppliedCommit) ([]driver.ReactionInput, error) {
		r := driver.ReactionInput{Key: "completed:t1", Type: "mail", Payload: `{}`, MaxAttempts: 3, CreatedAtMs: c.CreatedAtMs}
		other := r
		other.Key = "audit:t1"
		return []driver.ReactionInput{r, other, r}, nil
	}})
	_, err := s.Push(ctx, "p1", pushReq("c1", "k2", pushDone("t1", "a", true)))
	expectCode(t, "PUSH-16: a key repeated in one commit", err, driver.CodeDuplicateReactionKey)
	if err == nil || !strings.Contains(err.Error(), `"completed:t1"`) {
		t.Errorf("PUSH-16: the error %v does not name the repeated key %q", err, "completed:t1")
	}
	pushExpectNothing(t, conn, "p1", "PUSH-16: a key repeated in one commit", before, "c1", "k2")
	rs, err := s.ListReactions(ctx, "p1", driver.ReactionListQuery{Limit: 10})
	must(t, "ListReactions", err)
	expectEqual(t, "PUSH-16: reactions after the refused commit", 0, len(rs))
}
