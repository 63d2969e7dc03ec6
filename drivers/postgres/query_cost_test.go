package postgres

import (
	"testing"
	"time"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/querylang"
)

// FuzzRewriteCost rewrites query texts of up to 100 KB and fails when one takes
// longer than a generous 10 s — a cost target, not only a crash one
// (AQ-6). Its seeds are sd.CostlyQueries (100 KB texts shaped against
// rewriters), so plain `go test` rewrites each of them and logs its time
// (milliseconds); before the depth limit and the linear rewrites,
// 4,950 nested CASTs took the postgres rewriter 161 s and 24,700 nested
// divisions the mysql one over 13 minutes. Fuzz with
// go test -fuzz FuzzRewriteCost -run '^$'.
func FuzzRewriteCost(f *testing.F) {
	for _, sql := range querylang.CostlyQueries() {
		f.Add(sql)
	}
	cols := map[string][]string{"todos": {"id", "title"}}
	f.Fuzz(func(t *testing.T, sql string) {
		if len(sql) > 100_000 {
			return
		}
		start := time.Now()
		text, err := querylang.CheckQueryText(sql)
		if err == nil {
			// One (nil) bind value per parameter, as AdmitQueryArgs
			// guarantees on the real path.
			_, err = rewriteQuery(text.SQL, make([]any, text.Params), "s", []string{"todos"}, cols, "p1", nil)
		}
		took := time.Since(start)
		if took > 100*time.Millisecond {
			t.Logf("%d bytes: %v (%v)", len(sql), took, driver.CodeOf(err))
		}
		if err != nil && driver.CodeOf(err) == "" {
			t.Errorf("untyped error %v", err)
		}
		if took > 10*time.Second {
			t.Errorf("rewriting %d bytes took %v", len(sql), took)
		}
	})
}
