//go:build aqmeasure

// Package aqmeasure measures the authoritative-query attacks of AQ-6
// on every bundled driver: wall time and the process's peak RSS growth
// per attack, printed as a table. It asserts nothing and runs only with
// the build tag:
//
//	go test -tags aqmeasure -run TestMeasureAttacks -v -timeout 60m ./internal/aqmeasure
//
// or, with PostgreSQL and MariaDB on servers of the run's own:
//
//	SYNCSTORE_TEST_POSTGRES_AQ="$(.ci/postgres-aq.sh start)" SYNCSTORE_TEST_MARIADB_AQ="$(.ci/mariadb-aq.sh start)" \
//	  AQMEASURE_CAP=20s go test -tags aqmeasure -run TestMeasureAttacks -v ./internal/aqmeasure
//
// Each attack runs on a context of AQMEASURE_CAP (default 60 s): an
// attack still running then is reported as "> cap" (a rewriter that
// ignores ctx keeps burning CPU in the background until the process ends).
// After each call the store's statements still running on a server are
// polled for 5 s (PostgreSQL: pg_stat_activity; MariaDB: processlist,
// with the MEMORY_USED of those threads as "server MB"); other server
// memory (a PostgreSQL backend's, miniflare's workerd) is not measured.
// PostgreSQL and MariaDB run on servers of their own when
// SYNCSTORE_TEST_POSTGRES_AQ / SYNCSTORE_TEST_MARIADB_AQ hold their DSNs
// (.ci/postgres-aq.sh start, .ci/mariadb-aq.sh start), and then every
// attack runs; otherwise on the shared test servers (testdb), where the
// attacks that took such a server down run only with AQMEASURE_UNSAFE=1.
// AQMEASURE_DRIVERS (e.g. "sqlite,postgres") picks drivers,
// AQMEASURE_ATTACKS (e.g. "long-CPU,many-upper-calls") attacks;
// SYNCSTORE_TEST_D1_MINIFLARE adds the miniflare lane.
package aqmeasure

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http"
	"github.com/syncstore/syncstore/drivers/d1http/d1test"
	"github.com/syncstore/syncstore/drivers/mysql"
	"github.com/syncstore/syncstore/drivers/postgres"
	"github.com/syncstore/syncstore/drivers/sqlite"
	"github.com/syncstore/syncstore/internal/aqrates"
	"github.com/syncstore/syncstore/internal/testdb"
)

// attack is one hostile query on partition p1 (3 short rows), or, when
// big, on p2 (the same 3 rows, a stored 'a'×1,000,000 "hay" and a
// 500,001-byte "needle"); unsafe names the drivers on whose shared test
// servers it is not run unless AQMEASURE_UNSAFE=1: it took the server
// down (PostgreSQL's planner copying the flattened expression until the
// backend was killed for memory, the server restarting every backend) or
// left threads running for minutes (MariaDB). On a server of the run's
// own every attack runs.
type attack struct {
	name, sql string
	unsafe    []string
	big       bool
}

// hayBytes is the stored text the big attacks read: under sqlite's
// default MaxValueBytes (1 MiB), so every driver stores and reads it.
const hayBytes = 1_000_000

// needle is the stored needle or pattern of the big attacks: 'a'×500,000
// + 'b', the worst case of SQLite's instr (a memcmp at every position),
// MariaDB's naive instr and every engine's LIKE over 'a's.
var needle = strings.Repeat("a", hayBytes/2) + "b"

// upperSum is n length(upper(title)) terms in a balanced sum (shallow,
// so no depth limit refuses it first).
func upperSum(n int) string { return aqrates.BalancedSum("length(upper(title))", n) }

func nest(open, core, close string, n int) string {
	return strings.Repeat(open, n) + core + strings.Repeat(close, n)
}

func replaceNest(levels int) string {
	x := `title || 'aaaaaaaaaa'`
	for range levels {
		x = `replace(` + x + `, 'a', 'aaaaaaaaaa')`
	}
	return x
}

// derivedNest wraps core in levels derived tables, each selecting expr (of
// the column x of the level below) AS x: the shapes of issue 31 that
// SQLite's flattener and MariaDB's derived-table merge multiply.
func derivedNest(expr, core string, levels int) string {
	s := core
	for range levels {
		s = `SELECT ` + expr + ` AS x FROM (` + s + `) AS d`
	}
	return s
}

var attacks = []attack{
	{"500MB-printf", `SELECT printf('%.*c', 500000000, 'x') AS v FROM todos WHERE id = 't1'`, nil, false},
	{"1GB-nested-replace", `SELECT ` + replaceNest(8) + ` AS v FROM todos WHERE id = 't1'`, nil, false},
	{"10M-rows", `WITH RECURSIVE r(n) AS (SELECT count(*) FROM todos UNION ALL SELECT n + 1 FROM r WHERE n < 10000000) SELECT n FROM r`, nil, false},
	{"long-CPU", `WITH RECURSIVE r(n) AS (SELECT count(*) FROM todos UNION ALL SELECT n + 1 FROM r WHERE n < 1000000000) SELECT count(*) AS c FROM r`, nil, false},
	{"100KB-nested-cast", `SELECT ` + nest("CAST(", "1", " AS INTEGER)", 4950) + ` AS v FROM todos`, nil, false},
	{"100KB-nested-division", `SELECT ` + nest("1/(", "1", ")", 24_700) + ` AS v FROM todos`, nil, false},
	{"100KB-division-chain", `SELECT (` + strings.Repeat("1/", 33_000) + `1) AS v FROM todos`, nil, false},
	{"doubling-concat", `WITH RECURSIVE r(n, s) AS (SELECT 1, title FROM todos WHERE id = 't1' UNION ALL SELECT n + 1, s || s FROM r WHERE n < 40) SELECT max(length(s)) AS m FROM r`, nil, false},
	{"derived-doubling-30", derivedNest(`x || x`, `SELECT substr(title, 1, 1) AS x FROM todos WHERE id = 't1'`, 30), []string{"postgres", "mysql"}, false},
	{"derived-replace-9", derivedNest(`replace(x, 'a', 'aaaaaaaaaa')`, `SELECT 'aaaaaaaaaa' || title AS x FROM todos WHERE id = 't1'`, 9), []string{"mysql"}, false},
	// The row-work rule: 2,000 linear calls in one row over the stored
	// 1 MB value; engines check their interrupt between rows only.
	{"many-upper-calls", `SELECT id FROM todos WHERE id = 'hay' AND ` + upperSum(2000) + ` > 0`, nil, true},
	// The search-pattern rule: a needle or pattern read from a column.
	{"search-column-needle", `SELECT instr(h.title, n.title) AS i FROM todos h JOIN todos n ON n.id = 'needle' WHERE h.id = 'hay'`, nil, true},
	{"like-column-pattern", `SELECT h.id FROM todos h JOIN todos n ON n.id = 'needle' WHERE h.id = 'hay' AND h.title LIKE '%' || n.title || '%'`, nil, true},
}

// rssKB returns VmRSS and VmHWM of the process in KiB.
func rssKB() (rss, hwm int64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 2 {
			v, _ := strconv.ParseInt(fs[1], 10, 64)
			switch fs[0] {
			case "VmRSS:":
				rss = v
			case "VmHWM:":
				hwm = v
			}
		}
	}
	return rss, hwm
}

func resetPeak() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

type target struct {
	name  string
	d     driver.Driver
	base  func(t *testing.T) string
	watch func(base, dsn string) *serverWatch // nil: nothing on a server to watch
	own   bool                                // on a server of the run's own: every attack runs
}

// serverBase returns the DSN of the server env names when set (a server
// of the run's own, own true), else shared's (the shared test server).
func serverBase(env string, shared func(testing.TB) string) (base func(t *testing.T) string, own bool) {
	if v := os.Getenv(env); v != "" {
		return func(*testing.T) string { return v }, true
	}
	return func(t *testing.T) string { return shared(t) }, false
}

// serverTargets are the postgres and mysql targets, each on its own
// server when its variable is set.
func serverTargets() []target {
	pg, pgOwn := serverBase("SYNCSTORE_TEST_POSTGRES_AQ", testdb.PostgresServer)
	my, myOwn := serverBase("SYNCSTORE_TEST_MARIADB_AQ", testdb.MySQLServer)
	return []target{
		{"postgres", postgres.Driver{}, pg, pgWatch, pgOwn},
		{"mysql", mysql.Driver{}, my, mysqlWatch, myOwn},
	}
}

func TestMeasureAttacks(t *testing.T) {
	capDur := 60 * time.Second
	if v := os.Getenv("AQMEASURE_CAP"); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			capDur = d
		}
	}
	only := os.Getenv("AQMEASURE_DRIVERS")
	onlyAttacks := os.Getenv("AQMEASURE_ATTACKS")
	targets := []target{{"sqlite", sqlite.Driver{}, func(t *testing.T) string { return t.TempDir() }, nil, false}}
	targets = append(targets, serverTargets()...)
	targets = append(targets, target{"d1http", d1http.Driver{}, func(t *testing.T) string {
		srv := d1test.NewServer("tok")
		t.Cleanup(srv.Close)
		return "d1://acct?token=tok&endpoint=" + srv.URL
	}, nil, false})
	if mf := os.Getenv("SYNCSTORE_TEST_D1_MINIFLARE"); mf != "" {
		targets = append(targets, target{"d1http-miniflare", d1http.Driver{}, func(t *testing.T) string {
			return "d1://acct?token=syncstore-test&endpoint=" + mf
		}, nil, false})
	}
	var report []string
	for _, tg := range targets {
		if only != "" && !slices.Contains(strings.Split(only, ","), tg.name) {
			continue
		}
		base := tg.base(t)
		dsn, drop, err := tg.d.(driver.Provisioner).Provision(t.Context(), base)
		if err != nil {
			t.Fatalf("%s: provision: %v", tg.name, err)
		}
		conn, err := tg.d.Open(t.Context(), dsn)
		if err != nil {
			t.Fatalf("%s: open: %v", tg.name, err)
		}
		where := "in-process"
		if tg.watch != nil {
			where = "shared server"
			if tg.own {
				where = "own server"
			}
		}
		t.Logf("%s: %s", tg.name, where)
		seed(t, conn)
		aq := conn.(driver.AuthoritativeQueryConn)
		var watch *serverWatch
		if tg.watch != nil {
			watch = tg.watch(base, dsn)
		}
		for _, a := range attacks {
			if onlyAttacks != "" && !slices.Contains(strings.Split(onlyAttacks, ","), a.name) {
				continue
			}
			if !tg.own && slices.Contains(a.unsafe, tg.name) && os.Getenv("AQMEASURE_UNSAFE") != "1" {
				line := fmt.Sprintf("| %s | %s | not run (AQMEASURE_UNSAFE=1) | | | | |", tg.name, a.name)
				t.Log(line)
				report = append(report, line)
				continue
			}
			resetPeak()
			rss0, _ := rssKB()
			ctx, cancel := context.WithTimeout(context.Background(), capDur)
			type out struct {
				res driver.QueryResult
				err error
			}
			done := make(chan out, 1)
			start := time.Now()
			go func() {
				part := "p1"
				if a.big {
					part = "p2"
				}
				res, err := aq.AuthoritativeQuery(ctx, part, driver.Query{SQL: a.sql, Tables: []string{"todos"}})
				done <- out{res, err}
			}()
			var line string
			select {
			case o := <-done:
				took := time.Since(start)
				_, hwm := rssKB()
				what := ""
				switch {
				case o.err != nil:
					what = strings.TrimPrefix(string(driver.CodeOf(o.err)), "sync.storage.")
					if os.Getenv("AQMEASURE_ERR") != "" {
						what += " " + o.err.Error()
					}
					if b := limitBound(o.err); b != "" {
						what += " (" + b + ")"
					}
				default:
					size := int64(0)
					for _, r := range o.res.Rows {
						for _, v := range r {
							if s, ok := v.(string); ok {
								size += int64(len(s))
							} else {
								size += 8
							}
						}
					}
					what = fmt.Sprintf("returned %d rows, %d bytes", len(o.res.Rows), size)
				}
				left, serverMB := watch.leftRunning()
				line = fmt.Sprintf("| %s | %s | %.2f s | +%d MB | %s | %s | %s |", tg.name, a.name, took.Seconds(), (hwm-rss0)/1024, serverMB, left, what)
			case <-time.After(capDur + 5*time.Second):
				_, hwm := rssKB()
				line = fmt.Sprintf("| %s | %s | > %v (ctx ignored) | +%d MB | | | still running |", tg.name, a.name, capDur+5*time.Second, (hwm-rss0)/1024)
			}
			cancel()
			t.Log(line)
			report = append(report, line)
		}
		_ = conn.Close()
		dctx, dcancel := context.WithTimeout(context.Background(), time.Minute)
		_ = drop(dctx)
		dcancel()
	}
	fmt.Println("| driver | attack | time | client MB (peak RSS growth) | server MB | left running 5 s after | outcome |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, l := range report {
		fmt.Println(l)
	}
}

// seed stores t1..t3 in p1, and in p2 the same rows, "hay" ('a'×hayBytes)
// and "needle" (needle), the rows the big attacks read.
func seed(t *testing.T, conn driver.Conn) {
	ctx := t.Context()
	if err := conn.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	seedPartition(t, conn, "p1", nil)
	seedPartition(t, conn, "p2", map[string]string{"hay": strings.Repeat("a", hayBytes), "needle": needle})
}

func seedPartition(t *testing.T, conn driver.Conn, part string, more map[string]string) {
	ctx := t.Context()
	tx, err := conn.Begin(ctx, part)
	if err != nil {
		t.Fatal(err)
	}
	rows := [][2]string{{"t1", "one"}, {"t2", "two"}, {"t3", "three"}}
	for _, id := range slices.Sorted(maps.Keys(more)) {
		rows = append(rows, [2]string{id, more[id]})
	}
	var changes []driver.Change
	for _, row := range rows {
		id, title := row[0], row[1]
		r := driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"project": "alpha", "owner": "u1"},
			Values: driver.Values{"id": id, "title": title, "done": false, "project_id": "alpha", "owner_id": "u1", "updated_at": int64(10)}}
		if err := tx.UpsertRow(ctx, "todos", r); err != nil {
			t.Fatal(err)
		}
		changes = append(changes, driver.Change{Table: "todos", RowID: id, Op: driver.OpUpsert, Scopes: r.Scopes, Values: r.Values, RowVersion: 1})
	}
	if _, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "cc-" + part, ActorID: "a1", CreatedAtMs: 1, Changes: changes}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}
