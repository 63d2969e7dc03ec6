package sqlite

import (
	"os"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/aqrates"
)

// TestAQCallRates measures, through AuthoritativeQuery on an in-process
// store, the time one call or operator takes over a stored 4 MiB value
// (the per-byte rate a static row-work rule needs). It asserts nothing;
// run with:
//
//	SYNCSTORE_TEST_RATES=1 go test -run TestAQCallRates -v ./drivers/sqlite
func TestAQCallRates(t *testing.T) {
	if os.Getenv("SYNCSTORE_TEST_RATES") != "1" {
		t.Skip("SYNCSTORE_TEST_RATES is not 1")
	}
	c, _ := openTest(t)
	var rows []driver.Row
	for id, title := range aqrates.Titles() {
		r := todoRow(id, "p", "o")
		r.Values["title"] = title
		rows = append(rows, r)
	}
	pushRows(t, c, "p1", rows...)
	aqrates.Measure(t, c, "p1")
}
