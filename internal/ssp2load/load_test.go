package ssp2load

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	_ "github.com/syncstore/syncstore/drivers/sqlite"
	"github.com/syncstore/syncstore/server"
	"github.com/syncstore/syncstore/sync"
)

// TestRowValuesMatchUpstream: the seeded rows are upstream's bytes.
// Expected values printed by upstream's fixture.ts (rowValues with
// seededRandom(0x10adb6), rows 0, 1, 2 and 1500 of one sequence).
func TestRowValuesMatchUpstream(t *testing.T) {
	rnd := mulberry32(0x10adb6)
	want := map[int]sync.Values{
		0:    {"id": "row-0000000", "project_id": "storm", "title": "benchmark migrate #0", "done": true, "priority": int64(1), "updated_at_ms": int64(1750000000000)},
		1:    {"id": "row-0000001", "project_id": "storm", "title": "archive review #1", "done": false, "priority": int64(2), "updated_at_ms": int64(1750000000001)},
		2:    {"id": "row-0000002", "project_id": "storm", "title": "deploy inspect #2", "done": false, "priority": int64(2), "updated_at_ms": int64(1750000000002)},
		1500: {"id": "row-0001500", "project_id": "storm", "title": "review document #1500", "done": false, "priority": int64(0), "updated_at_ms": int64(1750000001500)},
	}
	for i := 0; i <= 1500; i++ {
		got := rowValues(i, StormProject, &rnd)
		if w, ok := want[i]; ok {
			if d := cmp.Diff(w, got); d != "" {
				t.Errorf("row %d (-upstream +ours):\n%s", i, d)
			}
		}
	}
}

// TestControlRoutes: a sqlite run seeds its rows, answers upstream's
// metrics shape, prunes, shuts down through the callback, and Close
// removes the store.
func TestControlRoutes(t *testing.T) {
	ctx := context.Background()
	shut := make(chan struct{})
	l, err := Open(ctx, Config{Driver: "sqlite", SeedRows: 2500, Shutdown: func() { close(shut) }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	ts := httptest.NewServer(l)
	defer ts.Close()

	n, err := l.store.MaxCommitSeq(ctx, Partition)
	if err != nil || n != 3 {
		t.Fatalf("seed of 2,500 rows: MaxCommitSeq = %d, %v; want 3 commits", n, err)
	}
	rows, err := l.store.ListRows(ctx, Partition, Table, "", 10_000)
	if err != nil || len(rows) != 2500 {
		t.Fatalf("seeded rows: %d, %v; want 2500", len(rows), err)
	}

	post := func(path string) map[string]any {
		t.Helper()
		res, err := http.Post(ts.URL+path, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != 200 {
			t.Fatalf("POST %s: %d, %v", path, res.StatusCode, err)
		}
		return out
	}
	// Three commits, the newest 50 kept: nothing to remove.
	if got := post("/__load/prune"); got["removedCommits"] != float64(0) {
		t.Errorf("prune: %v, want removedCommits 0", got)
	}

	res, err := http.Get(ts.URL + "/__load/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	err = json.NewDecoder(res.Body).Decode(&m)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Every field of upstream's ServerMetrics (load/src/harness.ts).
	for _, k := range []string{"rssBytes", "peakRssBytes", "requests", "requestErrors", "requestDurationMs",
		"segmentsBuilt", "segmentsReused", "pushApplied", "pushConflicted", "pushRejected", "realtimeDeltas",
		"realtimeWakes", "realtimeOpened", "realtimeClosed", "pruneRuns", "pruneRemovedCommits"} {
		if _, ok := m[k]; !ok {
			t.Errorf("metrics lack %q: %v", k, m)
		}
	}
	if m["pruneRuns"] != float64(1) || m["pushApplied"] != float64(0) || m["rssBytes"].(float64) <= 0 {
		t.Errorf("metrics: %v; want pruneRuns 1, pushApplied 0 (seed excluded), rssBytes > 0", m)
	}

	// A sync request is counted (an empty body is refused: an error).
	r2, err := http.Post(ts.URL+"/sync", "application/vnd.syncular.sync.v2", strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	snap, err := l.Snapshot(ctx)
	if err != nil || snap.Requests != 1 || snap.RequestErrors != 1 || snap.RequestDurationMs.P50 == nil {
		t.Errorf("after one bad /sync: %+v, %v", snap, err)
	}

	if got := post("/__load/shutdown"); got["ok"] != true {
		t.Errorf("shutdown: %v", got)
	}
	select {
	case <-shut:
	case <-time.After(5 * time.Second):
		t.Fatal("shutdown did not call Config.Shutdown")
	}
}

// TestCloseDropsTheStore: the run's SQLite file is gone after Close.
func TestCloseDropsTheStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, err := Open(ctx, Config{Driver: "sqlite", BaseDSN: dir})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir(dir)
	if len(before) == 0 {
		t.Fatalf("no store provisioned in %s", dir)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadDir(dir)
	if len(after) != 0 {
		t.Errorf("left behind in %s: %v", dir, after)
	}
}

// TestSegmentDir: Config.SegmentDir keeps segments in files there (the
// server's FileSegmentStore, creating the directory), not in memory.
func TestSegmentDir(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "segs")
	l, err := Open(ctx, Config{Driver: "sqlite", SegmentDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	if _, ok := l.segs.SegmentStore.(*server.FileSegmentStore); !ok {
		t.Errorf("segment store is %T, want *server.FileSegmentStore", l.segs.SegmentStore)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Errorf("segment directory %s: %v", dir, err)
	}
}
