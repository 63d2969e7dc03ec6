//go:build aqmeasure

// Package aqmeasure measures the authoritative-query attacks of AQ-6
// on every bundled driver: wall time and the process's peak RSS growth
// per attack, printed as a table. It asserts nothing and runs only with
// the build tag:
//
//	go test -tags aqmeasure -run TestMeasureAttacks -v -timeout 60m ./internal/aqmeasure
//
// Each attack runs on a context of AQMEASURE_CAP (default 60 s): an
// attack still running then is reported as "> cap" (a rewriter that
// ignores ctx keeps burning CPU in the background until the process ends).
// After each call the store's statements still running on a server are
// polled for 5 s (PostgreSQL: pg_stat_activity; MariaDB: processlist,
// with the MEMORY_USED of those threads as "server MB"); other server
// memory (a PostgreSQL backend's, miniflare's workerd) is not measured.
// Attacks that took a shared test server down run there only with
// AQMEASURE_UNSAFE=1 (point it at a server of your own). AQMEASURE_DRIVERS (e.g. "sqlite,postgres") picks drivers;
// SYNCSTORE_TEST_D1_MINIFLARE adds the miniflare lane.
package aqmeasure

import (
	"bufio"
	"context"
	"fmt"
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
	"github.com/syncstore/syncstore/internal/testdb"
)

// attack is one hostile query; unsafe names the drivers on whose shared
// test servers it is not run unless AQMEASURE_UNSAFE=1: it took the
// server down (PostgreSQL's planner copying the flattened expression
// until the backend was killed for memory, the server restarting every
// backend) or left threads running for minutes (MariaDB).
type attack struct {
	name, sql string
	unsafe    []string
}

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
	{"500MB-printf", `SELECT printf('%.*c', 500000000, 'x') AS v FROM todos WHERE id = 't1'`, nil},
	{"1GB-nested-replace", `SELECT ` + replaceNest(8) + ` AS v FROM todos WHERE id = 't1'`, nil},
	{"10M-rows", `WITH RECURSIVE r(n) AS (SELECT count(*) FROM todos UNION ALL SELECT n + 1 FROM r WHERE n < 10000000) SELECT n FROM r`, nil},
	{"long-CPU", `WITH RECURSIVE r(n) AS (SELECT count(*) FROM todos UNION ALL SELECT n + 1 FROM r WHERE n < 1000000000) SELECT count(*) AS c FROM r`, nil},
	{"100KB-nested-cast", `SELECT ` + nest("CAST(", "1", " AS INTEGER)", 4950) + ` AS v FROM todos`, nil},
	{"100KB-nested-division", `SELECT ` + nest("1/(", "1", ")", 24_700) + ` AS v FROM todos`, nil},
	{"100KB-division-chain", `SELECT (` + strings.Repeat("1/", 33_000) + `1) AS v FROM todos`, nil},
	{"doubling-concat", `WITH RECURSIVE r(n, s) AS (SELECT 1, title FROM todos WHERE id = 't1' UNION ALL SELECT n + 1, s || s FROM r WHERE n < 40) SELECT max(length(s)) AS m FROM r`, nil},
	{"derived-doubling-30", derivedNest(`x || x`, `SELECT substr(title, 1, 1) AS x FROM todos WHERE id = 't1'`, 30), []string{"postgres", "mysql"}},
	{"derived-replace-9", derivedNest(`replace(x, 'a', 'aaaaaaaaaa')`, `SELECT 'aaaaaaaaaa' || title AS x FROM todos WHERE id = 't1'`, 9), []string{"mysql"}},
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
}

func TestMeasureAttacks(t *testing.T) {
	capDur := 60 * time.Second
	if v := os.Getenv("AQMEASURE_CAP"); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			capDur = d
		}
	}
	only := os.Getenv("AQMEASURE_DRIVERS")
	targets := []target{
		{"sqlite", sqlite.Driver{}, func(t *testing.T) string { return t.TempDir() }, nil},
		{"postgres", postgres.Driver{}, func(t *testing.T) string { return testdb.PostgresServer(t) }, pgWatch},
		{"mysql", mysql.Driver{}, func(t *testing.T) string { return testdb.MySQLServer(t) }, mysqlWatch},
		{"d1http", d1http.Driver{}, func(t *testing.T) string {
			srv := d1test.NewServer("tok")
			t.Cleanup(srv.Close)
			return "d1://acct?token=tok&endpoint=" + srv.URL
		}, nil},
	}
	if mf := os.Getenv("SYNCSTORE_TEST_D1_MINIFLARE"); mf != "" {
		targets = append(targets, target{"d1http-miniflare", d1http.Driver{}, func(t *testing.T) string {
			return "d1://acct?token=syncstore-test&endpoint=" + mf
		}, nil})
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
		seed(t, conn)
		aq := conn.(driver.AuthoritativeQueryConn)
		var watch *serverWatch
		if tg.watch != nil {
			watch = tg.watch(base, dsn)
		}
		for _, a := range attacks {
			if slices.Contains(a.unsafe, tg.name) && os.Getenv("AQMEASURE_UNSAFE") != "1" {
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
				res, err := aq.AuthoritativeQuery(ctx, "p1", driver.Query{SQL: a.sql, Tables: []string{"todos"}})
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
					what = string(driver.CodeOf(o.err))
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

func seed(t *testing.T, conn driver.Conn) {
	ctx := t.Context()
	if err := conn.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	var changes []driver.Change
	for i, title := range []string{"one", "two", "three"} {
		id := "t" + strconv.Itoa(i+1)
		r := driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"project": "alpha", "owner": "u1"},
			Values: driver.Values{"id": id, "title": title, "done": false, "project_id": "alpha", "owner_id": "u1", "updated_at": int64(10)}}
		if err := tx.UpsertRow(ctx, "todos", r); err != nil {
			t.Fatal(err)
		}
		changes = append(changes, driver.Change{Table: "todos", RowID: id, Op: driver.OpUpsert, Scopes: r.Scopes, Values: r.Values, RowVersion: 1})
	}
	if _, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "cc1", ActorID: "a1", CreatedAtMs: 1, Changes: changes}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}
