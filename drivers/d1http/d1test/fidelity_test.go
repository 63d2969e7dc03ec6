package d1test

import (
	"encoding/json"
	"testing"
)

// TestLikeWorkerd pins the behaviours the miniflare lane (workerd's D1)
// showed and the double first got wrong: every JSON number binds as REAL
// (an INTEGER column's affinity turns it back into an integer), a JSON
// boolean parameter is refused, and sqlite_version() is not authorized.
func TestLikeWorkerd(t *testing.T) {
	s, db := newDB(t)
	post(t, s, db, "raw", "tok", `{"sql":"CREATE TABLE t (k INTEGER PRIMARY KEY, v)","params":[]}`)
	status, out := post(t, s, db, "raw", "tok",
		`{"sql":"INSERT INTO t VALUES (?1, ?2) RETURNING typeof(k), typeof(v), typeof(?3)","params":[5, 7, 1.5]}`)
	if status != 200 {
		t.Fatalf("insert: status %d: %v", status, out)
	}
	rows, _ := json.Marshal(out["result"].([]any)[0].(map[string]any)["results"].(map[string]any)["rows"])
	if want := `[["integer","real","real"]]`; string(rows) != want {
		t.Errorf("typeof after binding numbers = %s, want %s", rows, want)
	}
	for _, body := range []string{
		`{"sql":"SELECT ?1","params":[true]}`,
		`{"sql":"SELECT sqlite_version()","params":[]}`,
	} {
		if status, out := post(t, s, db, "raw", "tok", body); status != 400 || out["success"] != false {
			t.Errorf("%s: status %d, %v; want a 400 refusal", body, status, out)
		}
	}
}
