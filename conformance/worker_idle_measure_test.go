package conformance_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/drivers/d1http"
	"github.com/syncstore/syncstore/drivers/d1http/d1test"
	"github.com/syncstore/syncstore/drivers/mysql"
	"github.com/syncstore/syncstore/drivers/postgres"
	"github.com/syncstore/syncstore/drivers/sqlite"
	"github.com/syncstore/syncstore/internal/testdb"
)

// TestMeasureWorkerIdleCost measures what an idle reaction Worker costs
// the engine (docs/reactions.md, RX-12): for 10, 1,000 and 10,000
// partitions, each with one reaction scheduled far in the future (so none
// is due), the time and the statements of one polling round, before (one
// ClaimReactions per partition) and after (one ClaimDueReactions), and
// the statements per second of a Worker at its default PollInterval of
// 1 s (a round, then the wait). A measurement, not a test: it runs only
// with SYNCSTORE_MEASURE_WORKER=1 and prints a Markdown table.
//
//	SYNCSTORE_MEASURE_WORKER=1 go test -run TestMeasureWorkerIdleCost -v -timeout 30m ./conformance
func TestMeasureWorkerIdleCost(t *testing.T) {
	if os.Getenv("SYNCSTORE_MEASURE_WORKER") != "1" {
		t.Skip("a measurement: set SYNCSTORE_MEASURE_WORKER=1 to run it")
	}
	// Statements per idle claim, read from each driver's claim code
	// (BEGIN and COMMIT not counted; d1http: HTTP requests).
	type engine struct {
		name        string
		drv         driver.Driver
		base        func(t *testing.T) string
		per, across int
	}
	engines := []engine{
		{"sqlite", sqlite.Driver{}, func(t *testing.T) string { return t.TempDir() }, 2, 2},
		{"postgres", postgres.Driver{}, func(t *testing.T) string { return testdb.PostgresServer(t) }, 1, 1},
		{"mysql", mysql.Driver{}, func(t *testing.T) string { return testdb.MySQLServer(t) }, 2, 1},
		{"d1http (double)", d1http.Driver{}, func(t *testing.T) string {
			srv := d1test.NewServer("tok")
			t.Cleanup(srv.Close)
			return "d1://acct?token=tok&endpoint=" + srv.URL
		}, 1, 1},
	}
	if only := os.Getenv("SYNCSTORE_MEASURE_ENGINES"); only != "" {
		var keep []engine
		for _, e := range engines {
			if strings.Contains(only, strings.Fields(e.name)[0]) {
				keep = append(keep, e)
			}
		}
		engines = keep
	}
	const poll = time.Second
	var table []string
	for _, e := range engines {
		t.Run(strings.Fields(e.name)[0], func(t *testing.T) {
			ctx := context.Background()
			dsn, drop, err := e.drv.(driver.Provisioner).Provision(ctx, e.base(t))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = drop(context.Background()) }()
			conn, err := e.drv.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			rc, ac := conn.(driver.ReactionsConn), conn.(driver.ReactionsAcrossConn)
			req := driver.ClaimRequest{Owner: "w", Types: []string{"mail"}, NowMs: time.Now().UnixMilli(), LeaseMs: 30_000, Limit: 4}
			have := 0
			for _, n := range []int{10, 1000, 10000} {
				for ; have < n; have++ {
					p := fmt.Sprintf("tenant-%05d", have)
					tx, err := conn.Begin(ctx, p)
					if err != nil {
						t.Fatal(err)
					}
					in := driver.ReactionInput{Key: "later", Type: "mail", Payload: "{}", MaxAttempts: 3, CreatedAtMs: 1 << 50}
					if err := tx.(driver.ReactionsTx).EnqueueReactions(ctx, 0, []driver.ReactionInput{in}); err != nil {
						t.Fatal(err)
					}
					if err := tx.Commit(ctx); err != nil {
						t.Fatal(err)
					}
				}
				round := func(rounds int, one func() error) time.Duration {
					var ds []time.Duration
					for range rounds {
						start := time.Now()
						if err := one(); err != nil {
							t.Fatal(err)
						}
						ds = append(ds, time.Since(start))
					}
					sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
					return ds[len(ds)/2]
				}
				before := round(3, func() error {
					for i := range n {
						rs, err := rc.ClaimReactions(ctx, fmt.Sprintf("tenant-%05d", i), req)
						if err != nil || len(rs) != 0 {
							return fmt.Errorf("idle claim: %d rows, %v", len(rs), err)
						}
					}
					return nil
				})
				after := round(21, func() error {
					rs, err := ac.ClaimDueReactions(ctx, driver.DueClaimRequest{ClaimRequest: req})
					if err != nil || len(rs) != 0 {
						return fmt.Errorf("idle claim across: %d rows, %v", len(rs), err)
					}
					return nil
				})
				perSec := func(stmts int, d time.Duration) float64 { return float64(stmts) / (d + poll).Seconds() }
				row := fmt.Sprintf("| %s | %d | %d in %s | %.0f | %d in %s | %.1f |", e.name, n,
					n*e.per, before.Round(time.Millisecond), perSec(n*e.per, before),
					e.across, after.Round(10*time.Microsecond), perSec(e.across, after))
				t.Log(row)
				table = append(table, row)
			}
		})
	}
	t.Log("\n| driver | partitions | before: statements a round, in | before: statements/s | after: statements a round, in | after: statements/s |\n| --- | --- | --- | --- | --- | --- |\n" +
		strings.Join(table, "\n"))
}
