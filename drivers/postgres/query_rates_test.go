package postgres

import (
	"os"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/aqrates"
)

// TestAQCallRates measures, through AuthoritativeQuery on the PostgreSQL
// of the test's own, the time one call or operator takes over a stored
// 4 MiB value (the per-byte rate a static row-work rule needs). It
// asserts nothing; run with:
//
//	SYNCSTORE_TEST_RATES=1 SYNCSTORE_TEST_POSTGRES_AQ="$(.ci/postgres-aq.sh start)" go test -run TestAQCallRates -v ./drivers/postgres
//	.ci/postgres-aq.sh stop
func TestAQCallRates(t *testing.T) {
	if os.Getenv("SYNCSTORE_TEST_RATES") != "1" {
		t.Skip("SYNCSTORE_TEST_RATES is not 1")
	}
	conn, _ := ownServerStore(t, aqrates.Titles())
	aqrates.Measure(t, conn.(driver.AuthoritativeQueryConn), "p1")
}
