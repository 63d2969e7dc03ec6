package d1test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// post sends body to the database's endpoint and returns the status and answer.
func post(t *testing.T, s *Server, db, path, token, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/client/v4/accounts/a/d1/database/"+db+"/"+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&out); err != nil {
		t.Fatalf("answer is not JSON: %q", data)
	}
	return resp.StatusCode, out
}

func newDB(t *testing.T) (*Server, string) {
	s := NewServer("tok")
	t.Cleanup(s.Close)
	id, err := s.CreateDatabase("a", "test")
	if err != nil {
		t.Fatal(err)
	}
	return s, id
}

func TestShapesAndEncodings(t *testing.T) {
	s, db := newDB(t)
	status, out := post(t, s, db, "raw", "tok", `{"sql":"SELECT ?1 AS a, ?2 AS b, x'00ff' AS c, CAST(?3 AS REAL) AS d, 9007199254740993 AS e, NULL AS f","params":["t", 7, "-0"]}`)
	if status != 200 || out["success"] != true {
		t.Fatalf("status %d: %v", status, out)
	}
	res := out["result"].([]any)[0].(map[string]any)
	rows := res["results"].(map[string]any)["rows"].([]any)
	got, _ := json.Marshal(rows[0])
	if want := `["t",7,[0,255],0,9007199254740992,null]`; string(got) != want {
		t.Errorf("row = %s, want %s (BLOB as byte numbers, 2^53+1 rounded, -0 as 0)", got, want)
	}
	cols, _ := json.Marshal(res["results"].(map[string]any)["columns"])
	if string(cols) != `["a","b","c","d","e","f"]` {
		t.Errorf("columns = %s", cols)
	}
	if _, ok := res["meta"].(map[string]any)["changes"]; !ok {
		t.Errorf("meta has no changes: %v", res["meta"])
	}
	_, out = post(t, s, db, "query", "tok", `{"sql":"SELECT 1 AS one","params":[]}`)
	obj, _ := json.Marshal(out["result"].([]any)[0].(map[string]any)["results"])
	if string(obj) != `[{"one":1}]` {
		t.Errorf("/query results = %s", obj)
	}
}

func TestRefusals(t *testing.T) {
	s, db := newDB(t)
	params := strings.Repeat("1,", 100) + "1"
	for name, body := range map[string]string{
		"begin":       `{"sql":"BEGIN","params":[]}`,
		"savepoint":   `{"sql":"  SAVEPOINT x","params":[]}`,
		"commit":      `{"sql":"/* c */ COMMIT","params":[]}`,
		"101-params":  `{"sql":"SELECT 1","params":[` + params + `]}`,
		"null-params": `{"sql":"SELECT 1","params":null}`,
		"too-long":    `{"sql":"SELECT '` + strings.Repeat("x", MaxStatementBytes) + `'","params":[]}`,
	} {
		status, out := post(t, s, db, "raw", "tok", body)
		errs, _ := out["errors"].([]any)
		if status != 400 || out["success"] != false || len(errs) != 1 {
			t.Errorf("%s: status %d, answer %v; want 400 with one error", name, status, out)
		}
	}
	if status, _ := post(t, s, db, "raw", "wrong", `{"sql":"SELECT 1","params":[]}`); status != 401 {
		t.Errorf("wrong token: status %d, want 401", status)
	}
}

func TestBatchAllOrNothing(t *testing.T) {
	s, db := newDB(t)
	post(t, s, db, "raw", "tok", `{"sql":"CREATE TABLE t (k INTEGER PRIMARY KEY)","params":[]}`)
	status, _ := post(t, s, db, "raw", "tok", `{"batch":[{"sql":"INSERT INTO t VALUES (1)","params":[]},{"sql":"INSERT INTO t VALUES (1)","params":[]}]}`)
	if status != 400 {
		t.Errorf("failing batch: status %d, want 400", status)
	}
	_, out := post(t, s, db, "raw", "tok", `{"sql":"SELECT count(*) FROM t","params":[]}`)
	rows, _ := json.Marshal(out["result"].([]any)[0].(map[string]any)["results"].(map[string]any)["rows"])
	if string(rows) != `[[0]]` {
		t.Errorf("rows after a failed batch = %s, want [[0]]", rows)
	}
}

// A runaway statement is interrupted at the request limit, applies
// nothing, and leaves the database usable for the next request.
func TestRequestLimit(t *testing.T) {
	s, db := newDB(t)
	s.RequestLimit = 200 * time.Millisecond
	post(t, s, db, "raw", "tok", `{"sql":"CREATE TABLE t (k INTEGER PRIMARY KEY)","params":[]}`)
	start := time.Now()
	status, out := post(t, s, db, "raw", "tok", `{"batch":[{"sql":"INSERT INTO t VALUES (1)","params":[]},`+
		`{"sql":"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c","params":[]}]}`)
	if status != http.StatusBadRequest || out["success"] != false {
		t.Fatalf("runaway batch: status %d, answer %v; want 400 and success false", status, out)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("runaway batch answered after %s; the limit is 200ms", took)
	}
	status, out = post(t, s, db, "raw", "tok", `{"sql":"SELECT count(*) AS n FROM t","params":[]}`)
	if status != http.StatusOK {
		t.Fatalf("after the runaway batch: status %d, answer %v; want 200", status, out)
	}
	got, _ := json.Marshal(out["result"].([]any)[0].(map[string]any)["results"].(map[string]any)["rows"])
	if string(got) != `[[0]]` {
		t.Fatalf("after the runaway batch: rows %s; want [[0]] (the insert rolled back)", got)
	}
}
