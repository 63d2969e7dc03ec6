package conformance

import (
	"context"
	"errors"

	syncstore "github.com/syncstore/syncstore/sync"
)

// Cases for PULL-14 (SkipSnapshot: a fresh bootstrap whose snapshot the
// caller serves itself reads no page).

func init() {
	register(Case{Name: "PULL-14/skip-snapshot-reads-no-page", Run: pullSkipSnapshot})
}

// Catches: the hook asked at another pin than the bootstrap's, asked for
// a resumed bootstrap or a window, a skipped snapshot still handed to the
// sink as a page or carrying a token, a declined one not served as
// before, and an error of the hook swallowed or followed by a client
// record.
func pullSkipSnapshot(t T, h Harness) {
	conn, s := pullStore(t, h)
	rows := pullRows("r", "p7", 5)
	pullWriteRows(t, conn, "p1", rows...) // head 5
	var asked []int64
	hook := func(skip bool, err error) func(context.Context, int64) (bool, error) {
		return func(_ context.Context, asOf int64) (bool, error) {
			asked = append(asked, asOf)
			return skip, err
		}
	}
	sub := pullSub("s", "p7", syncstore.PullBootstrap)
	sub.LimitRows = 2
	sub.SkipSnapshot = hook(true, nil)
	skipped := pullFresh("s", 5)
	skipped.Skipped = true

	rec := &pullRecorder{}
	pullStream(t, s, "p1", pullReq(sub), rec)
	expectEqual(t, "PULL-14: a skipped snapshot: Start and End, no Page", []pullEvent{startOf(skipped), endOf(skipped)}, rec.events)
	expectEqual(t, "PULL-14: the hook is asked once, with the bootstrap's pin", []int64{5}, asked)
	expectEqual(t, "PULL-14: Pull's result of a skipped snapshot (no rows, no token)", skipped, pullOne(t, s, "p1", sub))

	// Declined: the bootstrap as without the hook.
	asked = nil
	sub.SkipSnapshot = hook(false, nil)
	got := pullOne(t, s, "p1", sub)
	n, token := len(got.Rows), hasToken(&got)
	got.Rows = nil
	expectEqual(t, "PULL-14: a declined skip: the fresh bootstrap's result", pullFresh("s", 5), got)
	expectEqual(t, "PULL-14: a declined skip: the first page and a token", []any{2, true}, []any{n, token})
	expectEqual(t, "PULL-14: a declined skip asks once", []int64{5}, asked)

	// Never asked for a resumed bootstrap or a window.
	asked = nil
	plain := pullSub("s", "p7", syncstore.PullBootstrap)
	plain.LimitRows = 2
	first := pullOne(t, s, "p1", plain)
	resumed := sub
	resumed.SkipSnapshot = hook(true, nil)
	resumed.BootstrapToken = first.BootstrapToken
	if r := pullOne(t, s, "p1", resumed); r.Skipped || len(r.Rows) == 0 {
		t.Errorf("PULL-14: a resumed bootstrap was skipped or empty: %+v", r)
	}
	for _, c := range []int64{0, 3, 5} {
		w := pullSub("s", "p7", c)
		w.SkipSnapshot = hook(true, nil)
		if r := pullOne(t, s, "p1", w); r.Skipped || r.Bootstrap {
			t.Errorf("PULL-14: a window at cursor %d: %+v", c, r)
		}
	}
	expectEqual(t, "PULL-14: the hook is not asked for a resumed bootstrap or a window", []int64(nil), asked)

	// An error stops the pull; no client record is written.
	boom := errors.New("conformance: the hook failed")
	sub.SkipSnapshot = hook(false, boom)
	req := pullReq(sub)
	req.ClientID = "c-skip-err"
	_, err := s.Pull(t.Context(), "p1", req)
	if !errors.Is(err, boom) {
		t.Errorf("PULL-14: the hook's error: Pull returned %v", err)
	}
	_, found, err := s.GetClientRecord(t.Context(), "p1", "c-skip-err")
	must(t, "GetClientRecord", err)
	expectEqual(t, "PULL-14: a failed pull writes no client record", false, found)
}
