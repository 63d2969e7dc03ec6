package d1sql

import (
	"fmt"
	"strings"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// wideTable returns a table of n float columns (the longest D1Param) plus
// its id and scope.
func wideTable(n int) *sqlitesql.Table {
	cols := []driver.Column{{Name: "id", Type: driver.TypeString}, {Name: "g", Type: driver.TypeString}}
	for i := range n {
		cols = append(cols, driver.Column{Name: fmt.Sprintf("f%03d", i), Type: driver.TypeFloat, Nullable: true})
	}
	return sqlitesql.NewTable(driver.Table{Name: "wide", Columns: cols, PrimaryKey: "id",
		Scopes: []driver.Scope{{Variable: "g", Column: "g"}}})
}

// TestD1UpsertsBounds: every size fits D1's 100 parameters and 100,000
// bytes, and MaxRows is the largest size that does.
func TestD1UpsertsBounds(t *testing.T) {
	for _, width := range []int{1, 20, 100, 400, 2000} {
		x := wideTable(width)
		u := NewD1Upserts(x)
		m := u.MaxRows()
		if m < 1 || m > D1MaxParams-1 {
			t.Fatalf("width %d: MaxRows %d outside 1…%d", width, m, D1MaxParams-1)
		}
		q := u.SQL(m)
		if got := strings.Count(q, "(?1, "); got != m {
			t.Fatalf("width %d: SQL(%d) has %d tuples", width, m, got)
		}
		if want := fmt.Sprintf("?%d ", m+1); !strings.Contains(q, want) || strings.Contains(q, fmt.Sprintf("?%d ", m+2)) {
			t.Fatalf("width %d: SQL(%d) does not bind exactly ?1…?%d", width, m, m+1)
		}
		if m > 1 && len(q) > D1MaxStatementBytes {
			t.Fatalf("width %d: SQL(%d) is %d bytes, over %d", width, m, len(q), D1MaxStatementBytes)
		}
		next := len(q) + len(", ") + len(u.tuple(fmt.Sprintf("?%d", m+2)))
		if m < D1MaxParams-1 && next <= D1MaxStatementBytes {
			t.Fatalf("width %d: MaxRows %d, but %d rows would fit (%d bytes)", width, m, m+1, next)
		}
		t.Logf("width %d: MaxRows %d, SQL(MaxRows) %d bytes", width, m, len(q))
	}
	if m := NewD1Upserts(wideTable(1)).MaxRows(); m != D1MaxParams-1 {
		t.Fatalf("a narrow table takes %d rows per statement, want %d", m, D1MaxParams-1)
	}
}

// TestD1UpsertIsOneRow: the single-row statement is the one-row size of
// the multi-row one (written once).
func TestD1UpsertIsOneRow(t *testing.T) {
	x := wideTable(3)
	one := D1Upsert(x)
	if got := NewD1Upserts(x).SQL(1); got != one {
		t.Fatalf("SQL(1) = %q, D1Upsert = %q", got, one)
	}
	if !strings.HasPrefix(one, `INSERT INTO "wide" AS _sync_t (`) || !strings.Contains(one, `ON CONFLICT ("_sync_partition", "id") DO UPDATE SET`) ||
		strings.Contains(one, "?3") {
		t.Fatalf("D1Upsert = %q", one)
	}
	two := NewD1Upserts(x).SQL(2)
	if !strings.Contains(two, "(?3 ->> 0)") || strings.Count(two, "ON CONFLICT") != 1 {
		t.Fatalf("SQL(2) = %q", two)
	}
}
