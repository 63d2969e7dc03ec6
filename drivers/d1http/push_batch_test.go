package d1http

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http/d1test"
	"github.com/syncstore/syncstore/drivers/d1http/internal/d1sql"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// spy forwards requests to a D1 lane (the double or miniflare) and
// records the statements of every /raw request.
type spy struct {
	h       http.Handler
	mu      gosync.Mutex
	batches [][]stmt
}

func (s *spy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/raw") {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Batch []stmt `json:"batch"`
		}
		_ = json.Unmarshal(body, &req)
		s.mu.Lock()
		s.batches = append(s.batches, req.Batch)
		s.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	s.h.ServeHTTP(w, r)
}

// since returns the batches recorded after the first n.
func (s *spy) since(n int) [][]stmt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]stmt(nil), s.batches[n:]...)
}

func (s *spy) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.batches)
}

// spyOpener opens a fresh database, schema ensured, on a spied lane.
type spyOpener func(t *testing.T, schema driver.Schema) (*Conn, *spy)

// onLanes runs f on the D1 double and, when it is on, the miniflare lane
// (D1's real engine).
func onLanes(t *testing.T, f func(t *testing.T, open spyOpener)) {
	t.Run("double", func(t *testing.T) {
		f(t, func(t *testing.T, schema driver.Schema) (*Conn, *spy) {
			h := d1test.NewHandler(testToken)
			t.Cleanup(h.Close)
			return openSpied(t, h, testToken, schema)
		})
	})
	t.Run("miniflare", func(t *testing.T) {
		base := miniflareBase(t)
		cfg, err := parseDSN(base)
		if err != nil {
			t.Fatal(err)
		}
		target, err := url.Parse(cfg.endpoint)
		if err != nil {
			t.Fatal(err)
		}
		f(t, func(t *testing.T, schema driver.Schema) (*Conn, *spy) {
			return openSpied(t, httputil.NewSingleHostReverseProxy(target), cfg.token, schema)
		})
	})
}

// openSpied serves h behind a spy and opens a fresh database through it.
func openSpied(t *testing.T, h http.Handler, token string, schema driver.Schema) (*Conn, *spy) {
	t.Helper()
	s := &spy{h: h}
	srv := httptest.NewServer(s)
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	ctx := context.Background()
	dsn, drop, err := Driver{}.Provision(ctx, "d1://acct?token="+token+"&endpoint="+srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drop(context.Background()) })
	conn, err := Driver{}.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.EnsureSchema(ctx, schema); err != nil {
		t.Fatal(err)
	}
	return conn.(*Conn), s
}

// w1Push is one docs/performance.md W1 push: 10 fresh todos, a commit, its result.
func w1Push(ctx context.Context, c *Conn, i int) ([]driver.Row, error) {
	cm := conformance.W1Commit(i)
	tx, err := c.Begin(ctx, conformance.BenchPartition)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx)
	changes := make([]driver.Change, 0, len(cm.Rows))
	for _, r := range cm.Rows {
		if err := tx.UpsertRow(ctx, conformance.BenchTable, r); err != nil {
			return nil, err
		}
		changes = append(changes, driver.Change{Table: conformance.BenchTable, RowID: r.ID, Op: driver.OpUpsert,
			Scopes: r.Scopes, Values: r.Values, RowVersion: r.ServerVersion})
	}
	seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: cm.ClientID, ClientCommitID: cm.ClientCommitID,
		ActorID: cm.ActorID, CreatedAtMs: cm.CreatedAtMs, Changes: changes})
	if err != nil {
		return nil, err
	}
	if err := tx.PutPushResult(ctx, cm.ClientID, cm.ClientCommitID, driver.PushResult{Status: driver.PushApplied,
		CommitSeq: seq, RecordedAtMs: cm.CreatedAtMs}); err != nil {
		return nil, err
	}
	return cm.Rows, tx.Commit(ctx)
}

// TestPushCommitStatements pins the cost of a W1 push commit: ONE request once the Conn knows the partition's stamp and max
// seq from its previous commit there (the first push of the Conn also
// reads them at Begin: 2), and 8 statements in the Commit batch — the
// stamp guard, ONE upsert of the 10 rows, the commit, its changes, their
// scope entries, the push result, max_seq and the idempotency token (the
// deletion of expired tokens rides on at most one batch a minute) — where
// it used to take 18. The rows read back as written.
func TestPushCommitStatements(t *testing.T) { onLanes(t, testPushCommitStatements) }

func testPushCommitStatements(t *testing.T, openSpy spyOpener) {
	ctx := context.Background()
	c, s := openSpy(t, conformance.TestSchema())
	for i := range 3 {
		before := s.count()
		rows, err := w1Push(ctx, c, i)
		if err != nil {
			t.Fatal(err)
		}
		got := s.since(before)
		if i == 0 {
			if len(got) != 2 {
				t.Fatalf("push %d took %d requests, want 2 (Begin + Commit)", i, len(got))
			}
			if len(got[0]) != 1 || got[0][0].SQL != d1sql.D1BeginRead {
				t.Fatalf("push %d: the first request is not the Begin read: %v", i, got[0])
			}
		} else {
			if len(got) != 1 {
				t.Fatalf("push %d took %d requests, want 1 (Commit: Begin's stamp and max seq are the last commit's)", i, len(got))
			}
			got = append([][]stmt{nil}, got...)
		}
		var sqls []string
		for _, st := range got[1] {
			sqls = append(sqls, strings.SplitN(st.SQL, "(", 2)[0])
		}
		want := []string{d1sql.D1StampGuard, "upsert", sqlitesql.InsertCommit, sqlitesql.InsertChanges, sqlitesql.InsertChangeScopes, sqlitesql.InsertPushResult,
			sqlitesql.SetMaxSeq, d1sql.D1TokenApplied}
		for k := range want {
			want[k] = strings.SplitN(want[k], "(", 2)[0]
		}
		want[1] = `INSERT INTO "` + conformance.BenchTable + `" AS ` + sqlitesql.UpsertAlias + ` `
		if diff := cmp.Diff(want, sqls); diff != "" {
			t.Fatalf("push %d: the commit batch (-want +got):\n%s", i, diff)
		}
		if up := got[1][1]; len(up.Params) != 1+len(rows) || strings.Count(up.SQL, "ON CONFLICT") != 1 {
			t.Fatalf("push %d: the upsert binds %d parameters, want 1 + %d rows", i, len(up.Params), len(rows))
		}
		for _, r := range rows {
			back, found, err := c.GetRow(ctx, conformance.BenchPartition, conformance.BenchTable, r.ID)
			if err != nil || !found {
				t.Fatalf("row %s: found %v, %v", r.ID, found, err)
			}
			if diff := cmp.Diff(r, back); diff != "" {
				t.Fatalf("row %s (-wrote +read):\n%s", r.ID, diff)
			}
		}
	}
	if seq, err := c.MaxCommitSeq(ctx, conformance.BenchPartition); err != nil || seq != 3 {
		t.Fatalf("max seq %d, %v; want 3", seq, err)
	}
}

func kindsRowV(id string, v int64, f float64, x []byte) driver.Row {
	r := driver.Row{ID: id, ServerVersion: v, Scopes: driver.Scopes{"grp": "g" + fmt.Sprint(v%2)},
		Values: driver.Values{"id": id, "grp": "g" + fmt.Sprint(v%2), "s": "s\x01é" + id, "i": math.MinInt64 + v,
			"f": f, "b": v%2 == 0, "j": driver.JSON(`{"a": [1, 1]}`), "x": nil}}
	if x != nil {
		r.Values["x"] = x
	}
	return r
}

// TestPushUpsertRunsKeepOrder: adjacent upserts of a table share one
// statement, anything else between them starts a new one, and the batch
// leaves the state the statements one by one would: a row upserted twice
// keeps the last write, a row deleted then re-upserted exists, one
// upserted then deleted does not; values keep every bit (VAL-1).
func TestPushUpsertRunsKeepOrder(t *testing.T) { onLanes(t, testPushUpsertRunsKeepOrder) }

func testPushUpsertRunsKeepOrder(t *testing.T, openSpy spyOpener) {
	ctx := context.Background()
	c, s := openSpy(t, conformance.TestSchema())
	seed, err := c.Begin(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if err := seed.UpsertRow(ctx, "kinds", kindsRowV(id, 1, 1.5, []byte{0})); err != nil {
			t.Fatal(err)
		}
	}
	if err := seed.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	tx, err := c.Begin(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	steps := []func() error{
		func() error { return tx.UpsertRow(ctx, "kinds", kindsRowV("a", 2, math.Copysign(0, -1), []byte{})) },
		func() error { return tx.UpsertRow(ctx, "kinds", kindsRowV("d", 2, 5e-324, nil)) },
		func() error { return tx.UpsertRow(ctx, "kinds", kindsRowV("a", 3, math.MaxFloat64, []byte{0, 0xff})) }, // same statement, later wins
		func() error { return tx.DeleteRow(ctx, "kinds", "b") },
		func() error { return tx.UpsertRow(ctx, "kinds", kindsRowV("b", 4, 0.1, nil)) }, // deleted, then back
		func() error { return tx.UpsertRow(ctx, "kinds", kindsRowV("e", 4, -2.5, nil)) },
		func() error {
			return tx.UpsertRow(ctx, "todos", driver.Row{ID: "t1", ServerVersion: 1, Scopes: driver.Scopes{"project": "p1", "owner": "o1"},
				Values: driver.Values{"id": "t1", "title": "x", "done": true, "project_id": "p1", "owner_id": "o1", "updated_at": int64(7)}})
		},
		func() error { return tx.UpsertRow(ctx, "kinds", kindsRowV("c", 5, 3, nil)) },
		func() error { return tx.DeleteRow(ctx, "kinds", "c") }, // upserted, then deleted
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	before := s.count()
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	batch := s.since(before)[0]
	var kinds []int // rows per upsert statement, in batch order; 0 for any other statement
	for _, st := range batch {
		if strings.HasPrefix(st.SQL, "INSERT INTO \"kinds\"") || strings.HasPrefix(st.SQL, "INSERT INTO \"todos\"") {
			kinds = append(kinds, len(st.Params)-1)
		} else {
			kinds = append(kinds, 0)
		}
	}
	// guard | a,d,a | tombstone b, delete b, clear refs | b,e | t1 | c | tombstone c, delete c, clear refs | token, (expiry)
	want := []int{0, 3, 0, 0, 0, 2, 1, 1, 0, 0, 0, 0}
	if diff := cmp.Diff(want, kinds[:len(want)]); diff != "" {
		t.Fatalf("rows per statement (-want +got):\n%s", diff)
	}

	wantRows := map[string]driver.Row{
		"a": kindsRowV("a", 3, math.MaxFloat64, []byte{0, 0xff}),
		"b": kindsRowV("b", 4, 0.1, nil),
		"d": kindsRowV("d", 2, 5e-324, nil),
		"e": kindsRowV("e", 4, -2.5, nil),
	}
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		got, found, err := c.GetRow(ctx, "p", "kinds", id)
		if err != nil {
			t.Fatal(err)
		}
		w, ok := wantRows[id]
		if found != ok {
			t.Fatalf("row %s: found %v, want %v", id, found, ok)
		}
		if ok {
			if diff := cmp.Diff(w, got); diff != "" {
				t.Fatalf("row %s (-want +got):\n%s", id, diff)
			}
		}
	}
	page, err := c.ScanRows(ctx, "p", driver.ScanQuery{Table: "kinds", Filter: driver.ScopeFilter{"grp": {"g0", "g1"}}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 4 {
		t.Fatalf("the scope index holds %d rows, want 4", len(page))
	}
}

// wideSchema is one table of n float columns (the longest per-column SQL).
func wideSchema(n int) driver.Schema {
	cols := []driver.Column{{Name: "id", Type: driver.TypeString}, {Name: "g", Type: driver.TypeString}}
	for i := range n {
		cols = append(cols, driver.Column{Name: fmt.Sprintf("f%03d", i), Type: driver.TypeFloat, Nullable: true})
	}
	return driver.Schema{Version: 1, Tables: []driver.Table{{Name: "wide", Columns: cols, PrimaryKey: "id",
		Scopes: []driver.Scope{{Variable: "g", Column: "g"}}}}}
}

// TestPushUpsertRunsChunk: many upserts are split into statements within
// D1's 100 parameters and 100,000 bytes (the double refuses more), and
// every row lands: 250 narrow rows, then 120 rows of 40 float columns.
func TestPushUpsertRunsChunk(t *testing.T) { onLanes(t, testPushUpsertRunsChunk) }

func testPushUpsertRunsChunk(t *testing.T, openSpy spyOpener) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		schema driver.Schema
		rows   int
		row    func(i int) driver.Row
	}{
		{"narrow", conformance.TestSchema(), 250, func(i int) driver.Row {
			id := fmt.Sprintf("k%04d", i)
			return kindsRowV(id, int64(i), float64(i)/3, []byte(id))
		}},
		{"wide", wideSchema(40), 120, func(i int) driver.Row {
			id := fmt.Sprintf("w%04d", i)
			v := driver.Values{"id": id, "g": "g"}
			for k := range 40 {
				v[fmt.Sprintf("f%03d", k)] = float64(i*40+k) / 7
			}
			return driver.Row{ID: id, ServerVersion: int64(i), Scopes: driver.Scopes{"g": "g"}, Values: v}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, s := openSpy(t, tc.schema)
			table := tc.schema.Tables[len(tc.schema.Tables)-1].Name
			if tc.name == "narrow" {
				table = "kinds"
			}
			tx, err := c.Begin(ctx, "p")
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.rows {
				if err := tx.UpsertRow(ctx, table, tc.row(i)); err != nil {
					t.Fatal(err)
				}
			}
			before := s.count()
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			total, stmts := 0, 0
			for _, st := range s.since(before)[0] {
				if !strings.HasPrefix(st.SQL, `INSERT INTO "`+table+`"`) {
					continue
				}
				stmts++
				total += len(st.Params) - 1
				if len(st.Params) > d1sql.D1MaxParams || len(st.SQL) > d1sql.D1MaxStatementBytes {
					t.Fatalf("a statement of %d parameters and %d bytes", len(st.Params), len(st.SQL))
				}
			}
			_, u, _ := c.tableUpserts(table)
			if want := (tc.rows + u.MaxRows() - 1) / u.MaxRows(); total != tc.rows || stmts != want {
				t.Fatalf("%d rows in %d statements, want %d in %d (%d per statement)", total, stmts, tc.rows, want, u.MaxRows())
			}
			for i := range tc.rows {
				r := tc.row(i)
				got, found, err := c.GetRow(ctx, "p", table, r.ID)
				if err != nil || !found {
					t.Fatalf("row %s: found %v, %v", r.ID, found, err)
				}
				if diff := cmp.Diff(r, got); diff != "" {
					t.Fatalf("row %s (-want +got):\n%s", r.ID, diff)
				}
			}
		})
	}
}

// TestTokenExpiry: expired idempotency tokens are still deleted, by at
// most one batch per tokenExpireEvery, and the batches between carry no
// deletion.
func TestTokenExpiry(t *testing.T) {
	ctx := context.Background()
	h := d1test.NewHandler(testToken)
	t.Cleanup(h.Close)
	c, s := openSpied(t, h, testToken, conformance.TestSchema())
	old := time.Now().UnixMilli() - tokenTTL.Milliseconds() - 1000
	if _, e := c.cl.send(ctx, []stmt{st(`INSERT INTO _sync_d1_tokens (token, state, at_ms, n) VALUES ('old', 'applied', ?1, 0)`, old)}); e != nil {
		t.Fatal(e)
	}
	tokens := func() int64 {
		rows, err := c.rows(ctx, "count", `SELECT count(*) FROM _sync_d1_tokens WHERE token = 'old'`)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := rawInt(rows[0][0])
		return n
	}
	if _, err := w1Push(ctx, c, 0); err != nil { // EnsureSchema's batch expired tokens a moment ago
		t.Fatal(err)
	}
	if tokens() != 1 {
		t.Fatal("the old token vanished although no batch was due to expire tokens")
	}
	c.cl.expiredAt.Store(0) // a minute has passed
	before := s.count()
	if _, err := w1Push(ctx, c, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := w1Push(ctx, c, 2); err != nil {
		t.Fatal(err)
	}
	if tokens() != 0 {
		t.Fatal("the expired token was not deleted")
	}
	var expiring []int
	for _, b := range s.since(before) {
		for _, st := range b {
			if st.SQL == d1sql.D1TokenExpire {
				expiring = append(expiring, len(b))
			}
		}
	}
	if len(expiring) != 1 {
		t.Fatalf("%d batches expired tokens, want 1", len(expiring))
	}
}
