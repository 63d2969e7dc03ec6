package server

import (
	"bytes"
	"context"
	"encoding/hex"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/syncstore/syncstore/crdt/yjs"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/ssp2"
)

// crdtSchema: notes with an LWW title and a yjs-doc crdt column (the
// catalog's crdt table).
func crdtSchema(t testing.TB, crdtType string) ssp2.Schema {
	s, err := ssp2.ParseSchema([]byte(`{"version": 3, "tables": [
	 {"name": "notes", "primaryKey": "id",
	  "columns": [
	   {"name": "id", "type": "string", "nullable": false},
	   {"name": "project_id", "type": "string", "nullable": false},
	   {"name": "title", "type": "string", "nullable": false},
	   {"name": "doc", "type": "crdt", "nullable": true, "crdtType": "` + crdtType + `"}],
	  "scopes": [{"pattern": "project:{project_id}"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return *s
}

// Yjs 13.6 updates (crdt/yjs's merge_test.go): base types "hello", A
// appends " A", B prepends "B ", deletes a letter and sets a map key.
func yjsVectors(t testing.TB) (base, a, b []byte) {
	dec := func(s string) []byte {
		out, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	return dec("01010100040104746578740568656c6c6f00"),
		dec("01010100040104746578740768656c6c6f204100"),
		dec("020202004401000242202801016d016b017601017875057d017c402000007701737e7803010004010474657874016881010001840101036c6c6f0101010101")
}

// TestCRDTColumnsMerge: with Config.CRDTMergers, a pushed crdt value is
// merged into the stored one inside the push (§5.10.3): baseVersion-less
// concurrent edits both apply and the row holds their merge; a stale
// baseVersion conflicts on the row, no merge, the conflict's row carrying
// the merged state; a replay is answered from the stored result without
// merging again; a malformed update is rejected sync.crdt_merge_failed,
// nothing written; a NULL clears the column.
func TestCRDTColumnsMerge(t *testing.T) {
	forEachLane(t, func(t *testing.T, l lane) {
		ctx := context.Background()
		st := l.open(t)
		sch := crdtSchema(t, "yjs-doc")
		ds, err := sch.DriverSchema()
		if err != nil {
			t.Fatal(err)
		}
		if err := st.EnsureSchema(ctx, ds); err != nil {
			t.Fatal(err)
		}
		var merges atomic.Int64
		e := newEnvOn(t, st, sch, func(c *Config) {
			c.CRDTMergers = map[string]CRDTMerger{"yjs-doc": CRDTMergerFunc(func(ctx context.Context, stored, incoming []byte) ([]byte, error) {
				merges.Add(1)
				return yjs.Merger{}.Merge(ctx, stored, incoming)
			})}
		})
		if caps := e.srv.Capabilities(); !strings.Contains(strings.Join(caps, ","), "crdt") {
			t.Errorf("Capabilities() = %v, want crdt", caps)
		}
		e.grant("alice", map[string][]string{"project_id": {"p1"}})
		ep := e.epoch("alice", "c1")
		note := func(title string, doc []byte) []byte {
			v := driver.Values{"id": "n1", "project_id": "p1", "title": title, "doc": nil}
			if doc != nil {
				v["doc"] = doc
			}
			return e.row("notes", v)
		}
		push := func(c *ssp2.PushCommit) *ssp2.PushResult {
			t.Helper()
			rs := framesOf[*ssp2.PushResult](e.sync("alice", 2, hdr("c1", ep), c))
			if len(rs) != 1 {
				t.Fatalf("%d push results", len(rs))
			}
			return rs[0]
		}
		stored := func() ([]byte, int64) {
			t.Helper()
			row, ok, err := st.GetRow(ctx, "p1", "notes", "n1")
			if err != nil || !ok {
				t.Fatalf("GetRow: %v %v", ok, err)
			}
			doc, _ := row.Values["doc"].([]byte)
			return doc, row.ServerVersion
		}
		base, a, b := yjsVectors(t)
		mustMerge := func(ins ...[]byte) []byte {
			m, err := yjs.Merge(ins...)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}

		if r := push(commit("k1", upsert("notes", "n1", note("t", base), 0))); r.Status != ssp2.PushApplied {
			t.Fatalf("create: %+v", r)
		}
		// Concurrent baseVersion-less edits: both apply, no conflict.
		for i, u := range [][]byte{a, b} {
			if r := push(commit("k"+string(rune('2'+i)), upsert("notes", "n1", note("t", u)))); r.Status != ssp2.PushApplied {
				t.Fatalf("edit %d: %+v", i, r)
			}
		}
		doc, v := stored()
		if want := mustMerge(mustMerge(mustMerge(nil, base), a), b); !bytes.Equal(doc, want) || v != 3 {
			t.Fatalf("stored doc %x at version %d, want the merge %x at 3", doc, v, want)
		}
		if !bytes.Contains(doc, []byte("hello A")) || !bytes.Contains(doc, []byte("B ")) {
			t.Fatalf("the stored doc %x lacks an edit", doc)
		}
		n := merges.Load()

		// A stale baseVersion conflicts on the row (the title's token):
		// no merge; the conflict carries the merged doc.
		r := push(commit("k4", upsert("notes", "n1", note("mine", a), 1)))
		if r.Status != ssp2.PushRejected || r.Results[0].Code != string(ssp2.CodeVersionConflict) || r.Results[0].ServerVersion != 3 {
			t.Fatalf("stale base: %+v", r)
		}
		c, _ := ssp2.Compile(&e.schema)
		ct, _ := c.Table("notes")
		srow, err := ct.Codec.Decode(r.Results[0].ServerRow)
		if err != nil || !bytes.Equal(srow["doc"].([]byte), doc) {
			t.Fatalf("conflict serverRow %v (%v), want the merged doc", srow, err)
		}
		if merges.Load() != n {
			t.Errorf("a conflicting op was merged")
		}

		// A replay of k3 is answered cached, nothing merged.
		if r := push(commit("k3", upsert("notes", "n1", note("t", b)))); r.Status != ssp2.PushCached {
			t.Fatalf("replay: %+v", r)
		}
		if d, v := stored(); merges.Load() != n || !bytes.Equal(d, doc) || v != 3 {
			t.Fatalf("the replay merged (%d merges, was %d) or wrote (version %d)", merges.Load(), n, v)
		}

		// Malformed bytes: rejected, stored and replayed, nothing written.
		for range 2 {
			r := push(commit("k5", upsert("notes", "n1", note("t", []byte{1, 2, 3}))))
			if r.Status != ssp2.PushRejected || r.Results[0].Code != string(ssp2.CodeCRDTMergeFailed) {
				t.Fatalf("malformed: %+v", r)
			}
		}
		if d, v := stored(); !bytes.Equal(d, doc) || v != 3 {
			t.Fatalf("a failed merge wrote: version %d", v)
		}

		// NULL clears the column, as for any type (no merge).
		if r := push(commit("k6", upsert("notes", "n1", note("t", nil)))); r.Status != ssp2.PushApplied {
			t.Fatalf("clear: %+v", r)
		}
		if d, v := stored(); d != nil || v != 4 {
			t.Fatalf("after a NULL push: doc %x version %d", d, v)
		}
	})
}

// TestNewRefusesUnregisteredCRDTType: with a merger registry, a crdt
// column naming a crdtType it lacks (or none) is a host configuration
// error New reports (§5.10.1); without a registry New serves the schema
// and refuses crdt writes at push time (TestRoundStoredRejections).
func TestNewRefusesUnregisteredCRDTType(t *testing.T) {
	ctx := context.Background()
	for _, typ := range []string{"automerge", ""} {
		st := sqliteLane().open(t)
		sch := crdtSchema(t, typ)
		ds, err := sch.DriverSchema()
		if err != nil {
			t.Fatal(err)
		}
		if err := st.EnsureSchema(ctx, ds); err != nil {
			t.Fatal(err)
		}
		_, err = New(st, Config{Schema: sch,
			Authenticate:  func(*http.Request) (Identity, error) { return Identity{}, nil },
			ResolveScopes: func(context.Context, Identity, string) (map[string][]string, error) { return nil, nil },
			CRDTMergers:   map[string]CRDTMerger{"yjs-doc": yjs.Merger{}}})
		if err == nil || !strings.Contains(err.Error(), "crdtType") {
			t.Errorf("crdtType %q: New = %v, want a configuration error", typ, err)
		}
	}
}
