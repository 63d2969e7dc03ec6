package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// bigRows is the bootstrap size of TestBootstrapBoundedMemory.
const bigRows = 100_000

// seedDirect writes n tasks of project p straight through the engine, a
// thousand per commit.
func (e *env) seedDirect(p string, n int) {
	e.t.Helper()
	ctx := context.Background()
	for i := 0; i < n; i += sync.MaxPushOps {
		var ops []sync.PushOp
		for j := i; j < min(n, i+sync.MaxPushOps); j++ {
			id := fmt.Sprintf("%s-%06d", p, j)
			ops = append(ops, sync.PushOp{Table: "tasks", RowID: id, Op: sync.OpUpsert, Values: driver.Values{
				"id": id, "project_id": p, "title": "title " + id, "done": j%2 == 0, "n": int64(j), "data": nil, "raw": nil}})
		}
		if _, err := e.store.Push(ctx, "p1", sync.PushRequest{ClientID: "seeder", ClientCommitID: fmt.Sprint(i), ActorID: "seeder", Ops: ops}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// TestBootstrapBoundedMemory: a 100,000-row bootstrap, on the rows lane
// (pages stored as external segments) and as a SQLite image, is handled
// one page at a time: at most one page and one image in flight, the
// segment buffer no larger than one page needs — counts, not timings.
func TestBootstrapBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 100,000 rows")
	}
	e := newEnv(t, sqliteLane())
	e.grant("alice", p1)
	ep := e.epoch("alice", "c1")
	e.seedDirect("p1", bigRows)

	t.Run("rows lane", func(t *testing.T) {
		st := &e.srv.stats
		st.peakPages.Store(0)
		st.peakSegmentBytes.Store(0)
		rows, pages := 0, 0
		cursor, state := int64(-1), driver.JSON("")
		for {
			s := &ssp2.Subscription{ID: "s", Table: "tasks", Scopes: p1, Cursor: cursor, BootstrapState: state}
			m := e.sync("alice", 2, hdr("c1", ep), &ssp2.PullHeader{Accept: 3, LimitSnapshotRows: 10_000, MaxSnapshotPages: 50}, s)
			sec := sections(m)[0]
			for _, r := range sec.refs {
				rows += int(r.RowCount)
				pages++
			}
			for _, in := range sec.inline {
				seg, err := ssp2.DecodeSegment(in.Payload)
				if err != nil {
					t.Fatal(err)
				}
				for _, b := range seg.Blocks {
					rows += len(b)
				}
				pages++
			}
			cursor, state = sec.end.NextCursor, sec.end.BootstrapState
			if state == "" {
				break
			}
		}
		if rows != bigRows {
			t.Fatalf("%d rows delivered", rows)
		}
		peakSeg := st.peakSegmentBytes.Load()
		t.Logf("%d pages; peak pages in flight %d; peak segment buffer %d bytes", pages, st.peakPages.Load(), peakSeg)
		if st.peakPages.Load() != 1 {
			t.Fatalf("%d pages in flight at once", st.peakPages.Load())
		}
		// One page of 10,000 rows of about 40 bytes: well under 2 MiB,
		// against about 4 MiB for the whole table.
		if peakSeg > 2<<20 {
			t.Fatalf("a segment buffer of %d bytes", peakSeg)
		}
	})

	t.Run("sqlite image", func(t *testing.T) {
		st := &e.srv.stats
		st.peakPages.Store(0)
		st.peakImages.Store(0)
		m := e.sync("alice", 2, hdr("c1", ep), &ssp2.PullHeader{Accept: 7, LimitSnapshotRows: 1000},
			sub("s", "tasks", p1, -1))
		sec := sections(m)[0]
		if len(sec.refs) != 1 || sec.refs[0].MediaType != ssp2.MediaSQLite || sec.refs[0].RowCount != bigRows || sec.end.BootstrapState != "" {
			t.Fatalf("image %+v %+v", sec.refs, sec.end)
		}
		t.Logf("image of %d bytes; peak pages in flight %d; peak images %d", sec.refs[0].ByteLength, st.peakPages.Load(), st.peakImages.Load())
		if st.peakPages.Load() != 1 || st.peakImages.Load() != 1 || st.liveImages.Load() != 0 {
			t.Fatalf("pages %d, images %d, live images %d", st.peakPages.Load(), st.peakImages.Load(), st.liveImages.Load())
		}
		status, body, _, eb := e.download("alice", sec.refs[0].SegmentID, p1)
		if status != 200 {
			t.Fatalf("download %d %v", status, eb)
		}
		checkImage(t, body, sec.refs[0], bigRows)
	})
}
