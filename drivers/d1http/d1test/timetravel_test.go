package d1test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
)

// TestTimeTravel: a bookmark keeps the database as it was; a restore puts
// it back and answers the replaced state's bookmark, which restores in
// turn; an unknown bookmark and a timestamp are refused (7400), as is
// the oldest bookmark once MaxBookmarks newer ones were taken.
func TestTimeTravel(t *testing.T) {
	s := NewServer("tok")
	defer s.Close()
	id, err := s.CreateDatabase("acct", "tt")
	if err != nil {
		t.Fatal(err)
	}
	base := s.URL + "/client/v4/accounts/acct/d1/database/" + id
	call := func(method, path string, body any) (int, map[string]any) {
		t.Helper()
		var b []byte
		if body != nil {
			b, _ = json.Marshal(body)
		}
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	exec := func(sql string) {
		t.Helper()
		if st, out := call(http.MethodPost, "/query", map[string]any{"sql": sql}); st != 200 {
			t.Fatalf("%s: %d %v", sql, st, out)
		}
	}
	count := func() float64 {
		t.Helper()
		_, out := call(http.MethodPost, "/query", map[string]any{"sql": "SELECT count(*) AS n FROM t"})
		return out["result"].([]any)[0].(map[string]any)["results"].([]any)[0].(map[string]any)["n"].(float64)
	}
	mark := func() string {
		t.Helper()
		st, out := call(http.MethodGet, "/time_travel/bookmark", nil)
		if st != 200 {
			t.Fatalf("bookmark: %d %v", st, out)
		}
		return out["result"].(map[string]any)["bookmark"].(string)
	}
	restore := func(m string) (int, map[string]any) {
		return call(http.MethodPost, "/time_travel/restore?bookmark="+m, nil)
	}
	exec("CREATE TABLE t (x INTEGER)")
	exec("INSERT INTO t VALUES (1)")
	m1 := mark()
	exec("INSERT INTO t VALUES (2)")
	st, out := restore(m1)
	if st != 200 || count() != 1 {
		t.Fatalf("restore: %d %v, %v rows", st, out, count())
	}
	prev := out["result"].(map[string]any)["previous_bookmark"].(string)
	if prev <= m1 {
		t.Fatalf("bookmarks do not sort oldest first: %q after %q", prev, m1)
	}
	if st, _ := restore(prev); st != 200 || count() != 2 {
		t.Fatalf("undo the restore: %d, %v rows", st, count())
	}
	if st, _ := restore("nope"); st != 400 {
		t.Fatalf("an unknown bookmark: %d", st)
	}
	if st, _ := call(http.MethodGet, "/time_travel/bookmark?timestamp=2020-01-01T00:00:00Z", nil); st != 400 {
		t.Fatalf("a timestamp: %d", st)
	}
	for range MaxBookmarks {
		mark()
	}
	if st, _ := restore(m1); st != 400 {
		t.Fatalf("an evicted bookmark: %d", st)
	}
}
