package server

import (
	"fmt"
	gosync "sync"
	"testing"
	"time"

	"github.com/syncstore/syncstore/ssp2"
)

// TestImageBuiltOnceUnderStorm: clients that bootstrap the same scopes
// at the same pin on the image lane at once get one image, built by one
// round; the others wait for it instead of building it again (§5.3). The
// first build is held until every round has either begun a build or is
// waiting for one, so the count does not depend on timing: with a round
// per build (no single flight) all of them build.
func TestImageBuiltOnceUnderStorm(t *testing.T) {
	const clients = 6
	e := newEnv(t, sqliteLane())
	e.grant("alice", p1)
	ep := e.epoch("alice", "seed")
	e.seed("alice", "seed", ep, "p1", 300)
	st := &e.srv.stats
	gate := make(chan struct{})
	var once gosync.Once
	e.srv.onImageBuild = func() {
		// Held until every round builds or waits (bounded: 30 s, then the
		// test fails on its counts rather than hang).
		for i := 0; i < 3000 && st.imagesBuilt.Load()+st.imageWaits.Load() < clients; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		once.Do(func() { close(gate) })
		<-gate
	}
	accept := ssp2.AcceptInlineRows | ssp2.AcceptExternalRows | ssp2.AcceptSQLite
	ids := make([]string, clients)
	var wg gosync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := e.sync("alice", 2, hdr(fmt.Sprintf("c%d", i), ep), &ssp2.PullHeader{Accept: accept, LimitSnapshotRows: 50}, sub("s1", "tasks", p1, -1))
			if refs := sections(m)[0].refs; len(refs) == 1 && refs[0].MediaType == ssp2.MediaSQLite {
				ids[i] = refs[0].SegmentID
			}
		}()
	}
	wg.Wait()
	if n := st.imagesBuilt.Load(); n != 1 {
		t.Errorf("%d clients at once built the image %d times (waited: %d); want once (§5.3)", clients, n, st.imageWaits.Load())
	}
	for i, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("client %d got image %q, client 0 %q: every client gets the one image", i, id, ids[0])
		}
	}
}
