package sqlitedialect

import (
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// TestD1RewriteCostIsBounded rewrites the 100 KB costly texts for D1
// (AQ-6): each takes milliseconds (logged), checked only against a
// generous upper bound.
func TestD1RewriteCostIsBounded(t *testing.T) {
	tables := []D1QueryTable{{Name: "todos", Columns: []string{"id", "title"}}}
	for name, sql := range CostlyQueries() {
		start := time.Now()
		text, err := CheckQueryText(sql)
		if err == nil {
			_, err = RewriteD1Query(text.SQL, nil, tables)
		}
		took := time.Since(start)
		t.Logf("%s: %d bytes: %v (%v)", name, len(sql), took, driver.CodeOf(err))
		if c := driver.CodeOf(err); err != nil && c != driver.CodeQueryInvalid {
			t.Errorf("%s: %v, want a rewrite or query_invalid", name, err)
		}
		if took > 20*time.Second {
			t.Errorf("%s: rewriting %d bytes took %v", name, len(sql), took)
		}
	}
}
