package mysql

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/syncstore/syncstore/conformance"
	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/aqrates"
)

// TestAQCallRates measures, through AuthoritativeQuery on the MariaDB of
// the test's own, the time one call or operator takes over a stored
// 4 MiB value (the per-byte rate a static row-work rule needs). It
// asserts nothing; run with:
//
//	SYNCSTORE_TEST_RATES=1 SYNCSTORE_TEST_MARIADB_AQ="$(.ci/mariadb-aq.sh start)" go test -run TestAQCallRates -v ./drivers/mysql
//	.ci/mariadb-aq.sh stop
func TestAQCallRates(t *testing.T) {
	base := os.Getenv("SYNCSTORE_TEST_MARIADB_AQ")
	if os.Getenv("SYNCSTORE_TEST_RATES") != "1" || base == "" {
		t.Skip("SYNCSTORE_TEST_RATES is not 1 or SYNCSTORE_TEST_MARIADB_AQ is not set (.ci/mariadb-aq.sh start)")
	}
	ctx := t.Context()
	dsn, drop, err := Driver{}.Provision(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := drop(dctx); err != nil {
			t.Errorf("DROP DATABASE: %v", err)
		}
	}()
	conn, err := Driver{}.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.EnsureSchema(ctx, conformance.TestSchema()); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	for id, title := range aqrates.Titles() {
		r := driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"project": "alpha", "owner": "u1"},
			Values: driver.Values{"id": id, "title": title, "done": false, "project_id": "alpha", "owner_id": "u1", "updated_at": int64(10)}}
		if err := tx.UpsertRow(ctx, "todos", r); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	aqrates.Measure(t, conn.(driver.AuthoritativeQueryConn), "p1")
}
