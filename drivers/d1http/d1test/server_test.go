package d1test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
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

// D1's limits on names, values, bodies and results (docs/d1http.md,
// "D1's limits"): each refused as D1 refuses it, nothing applied.
func TestLimits(t *testing.T) {
	s, db := newDB(t)
	post(t, s, db, "raw", "tok", `{"sql":"CREATE TABLE t (k INTEGER PRIMARY KEY, v)","params":[]}`)
	big := strings.Repeat("x", MaxValueBytes)
	for name, c := range map[string]struct {
		body   string
		status int
	}{
		"_cf_ table":                           {`{"sql":"CREATE TABLE _cf_x (a)","params":[]}`, 400},
		"_cf_ table quoted":                    {`{"sql":"CREATE TABLE IF NOT EXISTS main.\"_cf_x\"(a)","params":[]}`, 400},
		"_cf_ index":                           {`{"sql":"CREATE UNIQUE INDEX _cf_i ON t (v)","params":[]}`, 400},
		"_cf_ view":                            {`{"sql":"CREATE VIEW _cf_v AS SELECT 1","params":[]}`, 400},
		"_cf_ trigger":                         {`{"sql":"CREATE TRIGGER _cf_r AFTER INSERT ON t BEGIN SELECT 1; END","params":[]}`, 400},
		"_CF_ table (allowed)":                 {`{"sql":"CREATE TABLE _CF_x (a)","params":[]}`, 200},
		"_cf_ column (allowed)":                {`{"sql":"CREATE TABLE c (_cf_a)","params":[]}`, 200},
		"100 columns (allowed)":                {`{"sql":"CREATE TABLE w100 (` + cols(100) + `)","params":[]}`, 200},
		"101 columns":                          {`{"sql":"CREATE TABLE w101 (` + cols(101) + `)","params":[]}`, 400},
		"LIKE pattern of 51 bytes":             {`{"sql":"SELECT 'a' LIKE ?","params":["` + strings.Repeat("a", 51) + `"]}`, 400},
		"statement of 100,000 bytes (allowed)": {`{"sql":"SELECT 1` + strings.Repeat(" ", MaxStatementBytes-8) + `","params":[]}`, 200},
		"bound value at the limit (allowed)":   {`{"sql":"SELECT length(?)","params":["` + big + `"]}`, 200},
		"bound value over the limit":           {`{"sql":"SELECT length(?)","params":["` + big + `x"]}`, 400},
		"built value over the limit":           {`{"sql":"SELECT length(?1 || 'x')","params":["` + big + `"]}`, 400},
		"row over the limit":                   {`{"sql":"INSERT INTO t VALUES (1, ?1 || ?1)","params":["` + big[:MaxValueBytes/2+1] + `"]}`, 400},
		"result over the limit": {`{"batch":[` + strings.Repeat(`{"sql":"SELECT ?","params":["`+big[:MaxValueBytes-10]+`"]},`, MaxResultBytes/MaxValueBytes) +
			`{"sql":"INSERT INTO t VALUES (2, 'r')","params":[]},{"sql":"SELECT 1","params":[]}]}`, 400},
	} {
		status, out := post(t, s, db, "raw", "tok", c.body)
		if status != c.status {
			t.Errorf("%s: status %d, answer %.300v; want %d", name, status, out, c.status)
		}
	}
	_, out := post(t, s, db, "raw", "tok", `{"sql":"SELECT count(*) FROM t","params":[]}`)
	rows, _ := json.Marshal(out["result"].([]any)[0].(map[string]any)["results"].(map[string]any)["rows"])
	if string(rows) != `[[0]]` {
		t.Errorf("rows after refused writes = %s, want [[0]]", rows)
	}
	// A body over MaxBodyBytes: 413, read no further.
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/client/v4/accounts/a/d1/database/"+db+"/raw",
		io.MultiReader(strings.NewReader(`{"sql":"SELECT ?","params":["`), strings.NewReader(strings.Repeat("y", MaxBodyBytes)), strings.NewReader(`"]}`)))
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a body of %d bytes: status %d, want 413", MaxBodyBytes+20, resp.StatusCode)
	}
}

// cols returns n column names, comma-separated.
func cols(n int) string {
	c := make([]string, n)
	for i := range c {
		c[i] = "c" + strconv.Itoa(i)
	}
	return strings.Join(c, ", ")
}

// An index entry is a record too: a row whose table record fits
// MaxValueBytes but whose entry in an index of every column (a scope
// index's cover, internal/sqlitesql) passes it by the rowid is refused
// whole, as SQLITE_TOOBIG, nothing applied. The driver's row budget
// (1,800,000 bytes) keeps its rows far from either.
func TestIndexRecordLimit(t *testing.T) {
	s, db := newDB(t)
	post(t, s, db, "raw", "tok", `{"sql":"CREATE TABLE u (g TEXT NOT NULL, v TEXT NOT NULL)","params":[]}`)
	post(t, s, db, "raw", "tok", `{"sql":"CREATE INDEX ui ON u (g, v)","params":[]}`)
	fits := strings.Repeat("x", MaxValueBytes-20)     // table record and index entry fit
	tableOnly := strings.Repeat("x", MaxValueBytes-8) // the table record fits, the index entry does not
	if status, out := post(t, s, db, "raw", "tok", `{"sql":"INSERT INTO u VALUES ('g', ?)","params":["`+fits+`"]}`); status != 200 {
		t.Fatalf("a row of %d bytes: status %d, %.300v", len(fits), status, out)
	}
	status, out := post(t, s, db, "raw", "tok", `{"sql":"INSERT INTO u VALUES ('g', ?)","params":["`+tableOnly+`"]}`)
	if status != 400 || !strings.Contains(mustJSON(out["errors"]), "SQLITE_TOOBIG") {
		t.Errorf("a row whose index entry passes the limit: status %d, %.300v; want 400, SQLITE_TOOBIG", status, out)
	}
	_, out = post(t, s, db, "raw", "tok", `{"sql":"SELECT (SELECT count(*) FROM u), (SELECT count(*) FROM u INDEXED BY ui WHERE g = 'g')","params":[]}`)
	rows, _ := json.Marshal(out["result"].([]any)[0].(map[string]any)["results"].(map[string]any)["rows"])
	if string(rows) != `[[1,1]]` {
		t.Errorf("rows after the refused insert = %s, want [[1,1]]", rows)
	}
	// Without the index the same row fits.
	post(t, s, db, "raw", "tok", `{"sql":"DROP INDEX ui","params":[]}`)
	if status, out := post(t, s, db, "raw", "tok", `{"sql":"INSERT INTO u VALUES ('g', ?)","params":["`+tableOnly+`"]}`); status != 200 {
		t.Errorf("the same row without the index: status %d, %.300v", status, out)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
