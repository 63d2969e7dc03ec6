package conformance

import (
	"context"
	"fmt"
	gosync "sync"
	"time"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for REG-4 (a push registers its partition) and CR-7 (a push
// binds its client id to its actor, as a pull does, atomically).

func init() {
	register(
		Case{Name: "REG-4/push-registers-its-partition", Run: bindRegisters},
		Case{Name: "CR-7/push-binds-the-client-id-refused-push-writes-nothing", Run: bindPush},
		Case{Name: "CR-7/rejected-push-binds-too", Run: bindRejected},
		Case{Name: "CR-7/first-calls-racing-one-actor-binds", Run: bindRace},
		Case{Name: "CR-7/another-actors-replay-reveals-nothing", Run: bindReplay},
	)
}

// bindAt is the time the binding cases push at (PushOptions.Now).
const bindAt = int64(1700000500000)

// bindPush pushes req as actor with Now at bindAt.
func bindPushAs(t T, s *syncstore.Store, p, actor string, req syncstore.PushRequest) (syncstore.PushResponse, error) {
	t.Helper()
	req.ActorID = actor
	return s.PushWith(t.Context(), p, req, syncstore.PushOptions{Now: func() time.Time { return time.UnixMilli(bindAt) }})
}

// bindPullReq is a pull of client by actor of one todos subscription.
func bindPullReq(client, actor string) syncstore.PullRequest {
	r := pullReq(pullSub("s", "p7", 0))
	r.ClientID, r.ActorID = client, actor
	return r
}

// Catches: a push that leaves its partition out of the registry (the
// Worker and Prune loops list it), a pushed partition registered with an
// empty epoch or one that a later pull replaces, a command or a rejected
// push that registers nothing.
func bindRegisters(t T, h Harness) {
	conn, s := pushStore(t, h)
	ctx := t.Context()
	expectEqual(t, "REG-4: registry of a fresh store", []string(nil), regNames(t, conn, "", 10))
	pushDo(t, s, "p1", pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "one", nil)))
	_, err := s.PushWith(ctx, "p2", pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "one", nil)), syncstore.PushOptions{})
	must(t, "PushWith", err)
	cmd := pushReq(syncstore.CommandClientID("job"), "k1", pushTodo("t1", "p7", "o1", "one", nil))
	_, err = s.PushCommand(ctx, "p3", cmd, syncstore.PushOptions{})
	must(t, "PushCommand", err)
	rej := pushDo(t, s, "p4", pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "one", syncstore.Version(3))))
	expectEqual(t, "REG-4: the push on p4 is rejected", driver.PushRejected, rej.Status)
	expectEqual(t, "REG-4: partitions after pushes", []string{"p1", "p2", "p3", "p4"}, regNames(t, conn, "", 10))
	entries := regList(t, conn, "", 10)
	for _, e := range entries {
		if e.Epoch == "" || e.EpochRequired {
			t.Errorf("REG-4: partition %s registered with epoch %q, epochRequired %v: want a fresh epoch, not required", e.Partition, e.Epoch, e.EpochRequired)
		}
	}
	if len(entries) == 4 && entries[0].Epoch == entries[1].Epoch {
		t.Errorf("REG-4: two pushed partitions share the epoch %q: want a fresh one each", entries[0].Epoch)
	}
	// A pull answers the epoch the push registered: the entry stays.
	resp := pullDo(t, s, "p1", bindPullReq("c9", "a9"))
	if len(entries) > 0 {
		expectEqual(t, "REG-4: the epoch a pull answers after a push", entries[0].Epoch, resp.Epoch)
	}
	// Refused input registers nothing (V-9).
	_, err = s.Push(ctx, "p5", pushReq("c1", "k1"))
	expectCode(t, "REG-4: a push without ops", err, driver.CodeInvalidArgument)
	expectEqual(t, "REG-4: partitions after a refused push", []string{"p1", "p2", "p3", "p4"}, regNames(t, conn, "", 10))
}

// Catches: a push that binds nothing (another actor pushes under the id
// and poisons its commit ids), a refused push that writes, a binding a
// pull or the owner's next push or replay do not honour, a binding that
// crosses partitions.
func bindPush(t T, h Harness) {
	conn, s := pushStore(t, h)
	ctx := t.Context()
	first, err := bindPushAs(t, s, "p1", "a1", pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "one", nil)))
	must(t, "Push by a1", err)
	rec, found := crGet(t, conn, "p1", "c1")
	expectEqual(t, "CR-7: a record after a1's push", true, found)
	expectEqual(t, "CR-7: the record a push binds", driver.ClientRecord{ClientID: "c1", ActorID: "a1", WireVersion: 0,
		Cursor: -1, UpdatedAtMs: bindAt}, driver.ClientRecord{ClientID: rec.ClientID, ActorID: rec.ActorID,
		WireVersion: rec.WireVersion, Cursor: rec.Cursor, UpdatedAtMs: rec.UpdatedAtMs})
	expectEqual(t, "CR-7: subscriptions of the record a push binds", 0, len(rec.Subscriptions))
	before := pushStateOf(t, conn, "p1")

	// Another actor: refused, nothing written, whatever the request.
	for i, req := range []syncstore.PushRequest{
		pushReq("c1", "k2", pushTodo("t2", "p7", "o1", "two", nil)),
		pushReq("c1", "k2", pushTodo("t1", "p7", "o1", "stale", syncstore.Version(7))), // would be rejected
	} {
		_, err = bindPushAs(t, s, "p1", "a2", req)
		expectCode(t, fmt.Sprintf("CR-7: push %d of c1 by a2", i), err, driver.CodeClientActorMismatch)
		_, err = s.PushWith(ctx, "p1", req, syncstore.PushOptions{Authorize: func(context.Context, *syncstore.Tx, syncstore.AuthorizeInput) error {
			return nil
		}})
		expectCode(t, fmt.Sprintf("CR-7: push %d of c1 by actor-c1 (read first)", i), err, driver.CodeClientActorMismatch)
	}
	expectEqual(t, "CR-7: the partition after refused pushes", before, pushStateOf(t, conn, "p1"))
	_, found, err = conn.GetPushResult(ctx, "p1", "c1", "k2")
	must(t, "GetPushResult", err)
	expectEqual(t, "CR-7: a result stored for a refused push", false, found)
	after, _ := crGet(t, conn, "p1", "c1")
	expectEqual(t, "CR-7: the record after refused pushes", rec, after)

	// A pull by another actor is refused (PULL-9); the owner's is served.
	_, err = s.Pull(ctx, "p1", bindPullReq("c1", "a2"))
	expectCode(t, "CR-7: pull of c1 by a2", err, driver.CodeClientActorMismatch)
	pullDo(t, s, "p1", bindPullReq("c1", "a1"))
	rec, _ = crGet(t, conn, "p1", "c1")
	expectEqual(t, "CR-7: actor of the record after a1's pull", "a1", rec.ActorID)

	// The owner goes on: a new commit applies, a replay answers as stored.
	next, err := bindPushAs(t, s, "p1", "a1", pushReq("c1", "k2", pushTodo("t2", "p7", "o1", "two", nil)))
	must(t, "Push k2 by a1", err)
	expectEqual(t, "CR-7: a1's next push", driver.PushApplied, next.Status)
	again, err := bindPushAs(t, s, "p1", "a1", pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "one", nil)))
	must(t, "replay of k1 by a1", err)
	expectEqual(t, "CR-7: a1's replay of k1", syncstore.PushResponse{PushResult: first.PushResult, Replayed: true}, again)

	// A server command binds nothing: its namespace is the host's (V-7).
	cmdID := syncstore.CommandClientID("job", "1")
	for i, actor := range []string{"a1", "a2"} {
		cmd := pushReq(cmdID, fmt.Sprintf("run-%d", i), pushTodo(fmt.Sprintf("c%d", i), "p7", "o1", "cmd", nil))
		cmd.ActorID = actor
		_, err := s.PushCommand(ctx, "p1", cmd, syncstore.PushOptions{})
		must(t, "PushCommand as "+actor, err)
	}
	_, found = crGet(t, conn, "p1", cmdID)
	expectEqual(t, "CR-7: a record of a command's client id", false, found)

	// The binding is per partition (P-1).
	other, err := bindPushAs(t, s, "p2", "a2", pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "one", nil)))
	must(t, "Push of c1 by a2 in p2", err)
	expectEqual(t, "CR-7: c1 by a2 in another partition", driver.PushApplied, other.Status)
}

// Catches: a rejected push whose binding is discarded with its writes, so
// another actor can still take the client id (a rejection stores a result
// under the id as an application does).
func bindRejected(t T, h Harness) {
	conn, s := pushStore(t, h)
	rej, err := bindPushAs(t, s, "p1", "a1", pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "one", syncstore.Version(4))))
	must(t, "Push by a1", err)
	expectEqual(t, "CR-7: a1's push is rejected", driver.PushRejected, rej.Status)
	rec, found := crGet(t, conn, "p1", "c1")
	expectEqual(t, "CR-7: a record after a rejected push", true, found)
	expectEqual(t, "CR-7: actor of the record after a rejected push", "a1", rec.ActorID)
	before := pushStateOf(t, conn, "p1")
	_, err = bindPushAs(t, s, "p1", "a2", pushReq("c1", "k2", pushTodo("t2", "p7", "o1", "two", nil)))
	expectCode(t, "CR-7: push of c1 by a2 after a1's rejected push", err, driver.CodeClientActorMismatch)
	expectEqual(t, "CR-7: the partition after the refused push", before, pushStateOf(t, conn, "p1"))
	// A push rejected by a hook binds too.
	refuse := syncstore.PushOptions{Authorize: func(context.Context, *syncstore.Tx, syncstore.AuthorizeInput) error {
		return &syncstore.Refusal{Code: "app.denied", Message: "no"}
	}}
	req := pushReq("c2", "k1", pushTodo("t3", "p7", "o1", "three", nil))
	req.ActorID = "a1"
	refused, err := s.PushWith(t.Context(), "p1", req, refuse)
	must(t, "PushWith a refusing Authorize", err)
	expectEqual(t, "CR-7: a1's push of c2 is refused by Authorize", driver.PushRejected, refused.Status)
	req.ActorID, req.ClientCommitID = "a2", "k2"
	_, err = s.Push(t.Context(), "p1", req)
	expectCode(t, "CR-7: push of c2 by a2 after a1's refused push", err, driver.CodeClientActorMismatch)
}

// bindRounds is how many rounds each pair of racing calls runs.
const bindRounds = 12

// Catches: a binding checked and written in two steps (a read, then a
// write a racing call can come between), so two actors both pass their
// first call of one client id: push against push, push against pull,
// pull against pull. Each round starts the two calls together on a fresh
// client id; exactly one must land and the other be refused with
// CodeClientActorMismatch, having written nothing.
func bindRace(t T, h Harness) {
	conn, s := pushStore(t, h)
	ctx := t.Context()
	type call func(client, actor string, n int) error
	push := func(client, actor string, n int) error {
		req := pushReq(client, fmt.Sprintf("k-%s", actor), pushTodo(fmt.Sprintf("t-%s-%s", client, actor), "p7", "o1", "x", nil))
		_, err := bindPushAs(t, s, "p1", actor, req)
		return err
	}
	pull := func(client, actor string, _ int) error {
		_, err := s.Pull(ctx, "p1", bindPullReq(client, actor))
		return err
	}
	for _, mode := range []struct {
		name string
		a, b call
	}{{"push-push", push, push}, {"push-pull", push, pull}, {"pull-push", pull, push}, {"pull-pull", pull, pull}} {
		wins, refused := 0, 0
		for i := range bindRounds {
			client := fmt.Sprintf("%s-%d", mode.name, i)
			start := make(chan struct{})
			errs := make([]error, 2)
			var wg gosync.WaitGroup
			for j, c := range []call{mode.a, mode.b} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					errs[j] = c(client, fmt.Sprintf("a%d", j+1), i)
				}()
			}
			close(start)
			wg.Wait()
			winner := ""
			for j, err := range errs {
				switch driver.CodeOf(err) {
				case "":
					wins++
					winner = fmt.Sprintf("a%d", j+1)
				case driver.CodeClientActorMismatch:
					refused++
				default:
					t.Fatalf("CR-7: %s round %d: call %d: %v", mode.name, i, j, err)
				}
			}
			rec, found := crGet(t, conn, "p1", client)
			if winner != "" && (!found || rec.ActorID != winner) {
				t.Errorf("CR-7: %s round %d: record bound to %q (found %v), want the winner %q", mode.name, i, rec.ActorID, found, winner)
			}
			for j := range 2 {
				actor := fmt.Sprintf("a%d", j+1)
				_, stored, err := conn.GetPushResult(ctx, "p1", client, "k-"+actor)
				must(t, "GetPushResult", err)
				if stored && actor != winner {
					t.Errorf("CR-7: %s round %d: the refused actor %s's push left a result", mode.name, i, actor)
				}
			}
		}
		expectEqual(t, "CR-7: "+mode.name+": calls that landed", bindRounds, wins)
		expectEqual(t, "CR-7: "+mode.name+": calls refused", bindRounds, refused)
	}
}

// Catches: a push under another actor's client id and one of its client
// commit ids answered from the stored result — the owner's applied
// result, or a rejection carrying a server row the other actor may not
// read — or with idempotency_key_reused, which tells it the key exists;
// anything written by such a push.
func bindReplay(t T, h Harness) {
	conn, s := pushStore(t, h)
	ctx := t.Context()
	k1 := pushReq("c1", "k1", pushTodo("t1", "p7", "o1", "secret", nil))
	k2 := pushReq("c1", "k2", pushTodo("t1", "p7", "o1", "stale", syncstore.Version(7)))
	applied, err := bindPushAs(t, s, "p1", "a1", k1)
	must(t, "Push k1 by a1", err)
	expectEqual(t, "CR-7: k1 by a1", driver.PushApplied, applied.Status)
	rejected, err := bindPushAs(t, s, "p1", "a1", k2)
	must(t, "Push k2 by a1", err)
	expectEqual(t, "CR-7: k2 by a1 (a conflict carrying the row)", driver.PushRejected, rejected.Status)
	before := pushStateOf(t, conn, "p1")

	other := pushReq("c1", "k1", pushTodo("t9", "p7", "o1", "mine", nil))
	for i, req := range []syncstore.PushRequest{k1, k2, other} {
		resp, err := bindPushAs(t, s, "p1", "a2", req)
		expectCode(t, fmt.Sprintf("CR-7: replay %d of c1's key %s by a2", i, req.ClientCommitID), err, driver.CodeClientActorMismatch)
		if err == nil {
			t.Errorf("CR-7: replay %d by a2 answered %s with %d op results: want no result", i, resp.Status, len(resp.Ops))
		}
		_, err = s.PushWith(ctx, "p1", withActor(req, "a2"), syncstore.PushOptions{Authorize: func(context.Context, *syncstore.Tx, syncstore.AuthorizeInput) error {
			return nil
		}})
		expectCode(t, fmt.Sprintf("CR-7: replay %d by a2 (read first)", i), err, driver.CodeClientActorMismatch)
	}
	expectEqual(t, "CR-7: the partition after another actor's replays", before, pushStateOf(t, conn, "p1"))

	// The owner's replays answer the stored results.
	again, err := bindPushAs(t, s, "p1", "a1", k2)
	must(t, "replay of k2 by a1", err)
	expectEqual(t, "CR-7: a1's replay of k2", true, again.Replayed && again.Status == driver.PushRejected)
	_, err = bindPushAs(t, s, "p1", "a1", other)
	expectCode(t, "CR-7: a1's other request under k1", err, driver.CodeIdempotencyKeyReused)
}

// withActor is req pushed as actor.
func withActor(req syncstore.PushRequest, actor string) syncstore.PushRequest {
	req.ActorID = actor
	return req
}
