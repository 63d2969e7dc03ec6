package sqlite

import (
	"context"
	"fmt"
	"testing"

	"github.com/syncstore/syncstore/driver"
	"github.com/syncstore/syncstore/internal/sqlitesql"
)

// TestPlansEngineReads pins the plans of the reads the SSP2 server makes
// on its hot paths, on an analyzed store of several partitions: a
// whole-commit read (LOG-4) walks the changes' primary key from the
// cursor, its bound too, and fetches each commit by primary key; an ack
// (CR-6) finds the record and the partition's head by primary key; an
// admin row page (ADM-3) walks the table's primary key. Never a scan, of
// the log or of a table.
func TestPlansEngineReads(t *testing.T) {
	ctx := context.Background()
	c, _ := openTest(t)
	for _, p := range []string{"A", "P", "Z"} {
		for i := range 40 {
			pushRows(t, c, p, todoRow(fmt.Sprintf("r%02d", i), fmt.Sprintf("p%d", i%3), "o1"), todoRow(fmt.Sprintf("s%02d", i), "p1", "o2"))
		}
		for i := range 500 {
			rec := driver.ClientRecord{ClientID: fmt.Sprintf("c-%04d", i), ActorID: "a", Cursor: int64(i % 40), UpdatedAtMs: int64(i)}
			if err := c.PutClientRecord(ctx, p, rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := c.w.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	x, err := c.state.Table("todos")
	if err != nil {
		t.Fatal(err)
	}
	checkPlans(t, c, []planCase{
		{name: "whole commits by seq range (LOG-4)", query: sqlitesql.ReadCommits, args: []any{"P", 10, 1 << 40, 25},
			want: []string{"SEARCH ch USING PRIMARY KEY (partition=? AND seq>? AND seq<?)",
				"SEARCH c USING PRIMARY KEY (partition=? AND seq=?)",
				"SEARCH b USING PRIMARY KEY (partition=? AND seq>? AND seq<?)"},
			forbidden: []string{"SCAN", "TEMP B-TREE"}},
		{name: "ack a client cursor (CR-6)", query: sqlitesql.AckClient, args: []any{"P", "c-0100", "a", 5, 1000},
			want: []string{"SEARCH _sync_clients USING PRIMARY KEY (partition=? AND client_id=?)",
				"SEARCH _sync_partitions USING PRIMARY KEY (partition=?)"},
			forbidden: []string{"SCAN"}},
		{name: "admin rows, first page (ADM-3)", query: x.ListRows(), args: []any{"P", "", 10},
			want:      []string{"SEARCH todos USING INDEX sqlite_autoindex_todos_1 (_sync_partition=? AND id>?)"},
			forbidden: []string{"SCAN", "TEMP B-TREE"}},
		{name: "admin rows, next page (ADM-3)", query: x.ListRows(), args: []any{"P", "r20", 10},
			want:      []string{"SEARCH todos USING INDEX sqlite_autoindex_todos_1 (_sync_partition=? AND id>?)"},
			forbidden: []string{"SCAN", "TEMP B-TREE"}},
	})
}
