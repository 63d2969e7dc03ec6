//go:build aqmeasure

package aqmeasure

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http"
	"github.com/syncstore/syncstore/drivers/d1http/d1test"
	"github.com/syncstore/syncstore/drivers/sqlite"
	syncstore "github.com/syncstore/syncstore/sync"
)

// TestMeasureNeighbours measures AQ-7 per driver: partition p2's push and
// pull latency (p50/p99) quiet, then while partition p1 runs 8 hostile
// long-CPU queries (each bounded by the default 5 s Timeout, restarted as
// soon as it ends), under the Store's default QueryConcurrency. It asserts
// nothing:
//
//	go test -tags aqmeasure -run TestMeasureNeighbours -v -timeout 30m ./internal/aqmeasure
//
// AQMEASURE_DRIVERS picks drivers; AQMEASURE_OPS (default 500) is the
// number of pushes and of pulls per phase, one of each every 10 ms or
// slower; a phase under attack also stops after AQMEASURE_PHASE
// (default 60 s).
func TestMeasureNeighbours(t *testing.T) {
	only := os.Getenv("AQMEASURE_DRIVERS")
	ops := 500
	if v, err := strconv.Atoi(os.Getenv("AQMEASURE_OPS")); err == nil && v > 0 {
		ops = v
	}
	phase := 60 * time.Second
	if d, err := time.ParseDuration(os.Getenv("AQMEASURE_PHASE")); err == nil {
		phase = d
	}
	targets := []target{{name: "sqlite", d: sqlite.Driver{}, base: func(t *testing.T) string { return t.TempDir() }}}
	targets = append(targets, serverTargets()...) // own servers when SYNCSTORE_TEST_POSTGRES_AQ / _MARIADB_AQ are set
	targets = append(targets, target{name: "d1http", d: d1http.Driver{}, base: func(t *testing.T) string {
		srv := d1test.NewServer("tok")
		t.Cleanup(srv.Close)
		return "d1://acct?token=tok&endpoint=" + srv.URL
	}})
	var report []string
	for _, tg := range targets {
		if only != "" && !slices.Contains(strings.Split(only, ","), tg.name) {
			continue
		}
		dsn, drop, err := tg.d.(driver.Provisioner).Provision(t.Context(), tg.base(t))
		if err != nil {
			t.Fatalf("%s: provision: %v", tg.name, err)
		}
		conn, err := tg.d.Open(t.Context(), dsn)
		if err != nil {
			t.Fatalf("%s: open: %v", tg.name, err)
		}
		seed(t, conn)
		store := syncstore.OpenConn(conn)
		if err := store.EnsureSchema(t.Context(), conformance.TestSchema()); err != nil {
			t.Fatal(err)
		}
		per := func(name string) int { v, _ := strconv.Atoi(os.Getenv(name)); return v }
		if err := store.SetQueryConcurrency(syncstore.QueryConcurrency{PerStore: per("AQMEASURE_PER_STORE"), PerPartition: per("AQMEASURE_PER_PARTITION")}); err != nil {
			t.Fatal(err)
		}
		n := &neighbour{store: store}
		quietPush, quietPull := n.run(t, ops, time.Hour)
		stop := hostile(store, 8)
		time.Sleep(500 * time.Millisecond)
		busyPush, busyPull := n.run(t, ops, phase)
		queries := stop()
		line := fmt.Sprintf("| %s | %s | %s | %s | %s | %s |", tg.name, pct(quietPush), pct(busyPush), pct(quietPull), pct(busyPull), queries)
		t.Log(line)
		report = append(report, line)
		_ = store.Close()
		dctx, dcancel := context.WithTimeout(context.Background(), time.Minute)
		_ = drop(dctx)
		dcancel()
	}
	fmt.Println("| driver | p2 push p50 / p99 quiet | under 8 hostile queries on p1 | p2 pull p50 / p99 quiet | under 8 hostile queries on p1 | p1's queries |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, l := range report {
		fmt.Println(l)
	}
}

// neighbour pushes to and pulls from p2.
type neighbour struct {
	store  *syncstore.Store
	k      int
	cursor int64
}

// run makes up to ops pushes and ops pulls (alternating) within budget
// and returns their latencies.
func (n *neighbour) run(t *testing.T, ops int, budget time.Duration) (push, pull []time.Duration) {
	ctx := t.Context()
	end := time.Now().Add(budget)
	for i := 0; i < ops && time.Now().Before(end); i++ {
		n.k++
		id := "n" + strconv.Itoa(n.k)
		start := time.Now()
		_, err := n.store.Push(ctx, "p2", syncstore.PushRequest{ClientID: "w", ClientCommitID: "c" + id, ActorID: "a",
			Ops: []syncstore.PushOp{{Table: "todos", RowID: id, Op: syncstore.OpUpsert, BaseVersion: syncstore.Version(0),
				Values: syncstore.Values{"id": id, "title": "t", "done": false, "project_id": "alpha", "owner_id": "u1", "updated_at": int64(1)}}}})
		if err != nil {
			t.Fatalf("push: %v", err)
		}
		push = append(push, time.Since(start))
		start = time.Now()
		resp, err := n.store.Pull(ctx, "p2", syncstore.PullRequest{ClientID: "r", ActorID: "a",
			Subscriptions: []syncstore.PullSubscription{{ID: "s", Table: "todos", Scopes: syncstore.ScopeFilter{"project": {"alpha"}}, Cursor: n.cursor, LimitRows: 100}}})
		if err != nil {
			t.Fatalf("pull: %v", err)
		}
		pull = append(pull, time.Since(start))
		n.cursor = resp.Subscriptions[0].NextCursor
		time.Sleep(10 * time.Millisecond) // a client's pace, so a phase spans the hostile queries' turnover
	}
	return push, pull
}

// hostile runs k loops of the long-CPU query on p1 until the returned func
// is called; that func reports how the queries ended.
func hostile(store *syncstore.Store, k int) func() string {
	ctx, cancel := context.WithCancel(context.Background())
	var mu gosync.Mutex
	outcomes := map[string]int{}
	var wg gosync.WaitGroup
	for range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_, err := store.AuthoritativeQuery(ctx, "p1", driver.Query{SQL: attacks[3].sql, Tables: []string{"todos"}})
				if ctx.Err() != nil {
					return
				}
				what := "ok"
				if err != nil {
					what = string(driver.CodeOf(err))
					if b := limitBound(err); b != "" {
						what += " (" + b + ")"
					} else if os.Getenv("AQMEASURE_VERBOSE") != "" {
						fmt.Println("p1 query:", err)
					}
				}
				mu.Lock()
				outcomes[what]++
				mu.Unlock()
			}
		}()
	}
	return func() string {
		cancel()
		wg.Wait()
		var parts []string
		for what, c := range outcomes {
			parts = append(parts, fmt.Sprintf("%d× %s", c, strings.TrimPrefix(what, "sync.storage.")))
		}
		slices.Sort(parts)
		return strings.Join(parts, ", ")
	}
}

// pct formats the p50 and p99 of ds.
func pct(ds []time.Duration) string {
	if len(ds) == 0 {
		return "—"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return fmt.Sprintf("%s / %s (n=%d)", ms(at(0.50)), ms(at(0.99)), len(s))
}

func ms(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
}
