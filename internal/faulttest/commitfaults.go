package faulttest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/syncstore/syncstore/driver"
)

// ProxiedStore is a store whose every connection goes through Proxy (the
// suite's schema ensured), for CommitFaults.
type ProxiedStore struct {
	Conn  driver.Conn
	Proxy *Proxy
	// Quiesce waits, bounded, until no session of the store is inside a
	// transaction on the server: whatever a held COMMIT could still do
	// has been done.
	Quiesce func(t *testing.T)
}

// cancelAfter is how long after the proxy saw the COMMIT its context is
// cancelled: the hold outlasts it (a hold ends only on Release).
const cancelAfter = 200 * time.Millisecond

// Rejected is the rejected result push i stores with CommitRejected.
func Rejected(i int) driver.PushResult {
	return driver.PushResult{Status: driver.PushRejected, RecordedAtMs: int64(i), CacheIdentity: fmt.Sprintf("ci-%d", i),
		Ops: []driver.OpResult{{Status: driver.OpError, Code: "app.rejected", Message: "rejected"}}}
}

// CommitFaults runs, for Commit and for CommitRejected, the commit-fault
// cases of TX-10 against a store open returns, each on a store of its own:
//
//   - hold-reply-past-cancel: the server commits, its reply is held, and
//     the context is cancelled meanwhile. The call must return before the
//     reply is released (it honours its context) and return nil: the Tx
//     landed.
//   - drop-reply: the server commits and the connection drops before the
//     reply reaches the client. nil, and the Tx is there.
//   - hold-request-past-cancel: the COMMIT itself is held and the context
//     cancelled; the call must return before the request is released,
//     with an error that says nothing was written — and after the held
//     COMMIT reaches the server, the Tx must still not land.
func CommitFaults(t *testing.T, open func(t *testing.T) ProxiedStore) {
	for _, rejected := range []bool{false, true} {
		call := "commit"
		if rejected {
			call = "rejected"
		}
		t.Run("hold-reply-past-cancel/"+call, func(t *testing.T) {
			s := open(t)
			err, returnedFirst := faultedFinish(t, s, HoldReply, rejected, true)
			if !returnedFirst {
				t.Errorf("%s returned only once the held reply was released: it did not honour its context (TX-10)", call)
			}
			if err != nil {
				t.Errorf("%s = %v; the server committed, so it must return nil (TX-10)", call, err)
			}
			expectPush(t, s.Conn, rejected, true)
		})
		t.Run("drop-reply/"+call, func(t *testing.T) {
			s := open(t)
			err, _ := faultedFinish(t, s, DropReply, rejected, false)
			if err != nil {
				t.Errorf("%s = %v; the server committed before the connection dropped, so it must return nil (TX-10)", call, err)
			}
			expectPush(t, s.Conn, rejected, true)
		})
		t.Run("hold-request-past-cancel/"+call, func(t *testing.T) {
			s := open(t)
			err, returnedFirst := faultedFinish(t, s, HoldRequest, rejected, true)
			if !returnedFirst {
				t.Errorf("%s returned only once the held COMMIT was released: it did not honour its context (TX-10)", call)
			}
			switch code := driver.CodeOf(err); {
			case err == nil:
				t.Errorf("%s = nil, but the COMMIT never reached the server before the call returned (TX-10)", call)
			case code == driver.CodeCommitOutcomeUnknown:
				t.Errorf("%s = %v; the driver could have settled this outcome (TX-10)", call, err)
			case code == "":
				t.Errorf("%s = %v, not a *driver.Error (ERR-1)", call, err)
			}
			s.Quiesce(t)
			expectPush(t, s.Conn, rejected, false)
		})
	}
}

// faultedFinish stages push 1 (after push 0, which warms the connection
// up), arms the fault, commits (or rejects) it, cancelling the context
// cancelAfter after the proxy saw the COMMIT when cancel is set, and
// returns the call's error and whether it returned before the fault was
// released. The held request, if any, is then released and forwarded.
func faultedFinish(t *testing.T, s ProxiedStore, kind FaultKind, rejected, cancel bool) (err error, returnedFirst bool) {
	t.Helper()
	if err := Push(context.Background(), s.Conn, "P", 0); err != nil {
		t.Fatalf("warm-up push: %v", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	tx, err := s.Conn.Begin(ctx, "P")
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if err := StagePush(ctx, tx, 1); err != nil {
		t.Fatalf("stage push 1: %v", err)
	}
	f := s.Proxy.Arm(kind)
	defer f.Release()
	if cancel {
		go func() {
			select {
			case <-f.Fired():
				time.Sleep(cancelAfter)
				stop()
			case <-ctx.Done():
			}
		}()
	}
	if rejected {
		err = tx.CommitRejected(ctx, "f", Key(1), Rejected(1))
	} else {
		err = tx.Commit(ctx)
	}
	returnedFirst = !f.Released()
	select {
	case <-f.Fired():
	default:
		t.Fatalf("the proxy never saw the COMMIT (error %v)", err)
	}
	f.Release()
	if kind == HoldRequest {
		<-f.Forwarded()
	}
	return err, returnedFirst
}

// expectPush checks that push 1 is there whole (landed) or absent, and
// that push 0 is there.
func expectPush(t *testing.T, c driver.Conn, rejected, landed bool) {
	t.Helper()
	ctx := context.Background()
	win, err := c.ReadCommitWindow(ctx, "P", driver.WindowQuery{Table: "todos",
		Filter: driver.ScopeFilter{"project": {"p"}}, ThroughSeq: 1 << 40, LimitChanges: 100})
	if err != nil {
		t.Fatal(err)
	}
	wantLog := []driver.Commit{Commit(0, 1)}
	if landed && !rejected {
		wantLog = append(wantLog, Commit(1, 2))
	}
	if d := cmp.Diff(wantLog, win, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("TX-10: the log (-want +got):\n%s", d)
	}
	r, found, err := c.GetPushResult(ctx, "P", "f", Key(1))
	if err != nil {
		t.Fatal(err)
	}
	want := Result(1, 2)
	if rejected {
		want = Rejected(1)
	}
	if found != landed || (found && !cmp.Equal(want, r, cmpopts.EquateEmpty())) {
		t.Errorf("TX-10: push result stored %v (%+v); want stored %v (%+v)", found, r, landed, want)
	}
	for _, row := range Rows(1) {
		_, found, err := c.GetRow(ctx, "P", "todos", row.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := landed && !rejected; found != want {
			t.Errorf("TX-10: row %s exists %v, want %v", row.ID, found, want)
		}
	}
}
