package conformance

import (
	"context"
	"math"
	"slices"
	"strings"

	"github.com/syncstore/syncstore/driver"
)

// ROW cases: rows are created and fully replaced by UpsertRow, keep the
// given serverVersion, vanish with DeleteRow, and read as not-found when
// missing. VAL-1 (value fidelity) is in core_values.go.

// rowKinds returns a kinds row in group grp with every value column NULL
// except those in set.
func rowKinds(id, grp string, version int64, set driver.Values) driver.Row {
	v := driver.Values{"id": id, "grp": grp, "s": nil, "i": nil, "f": nil, "b": nil, "j": nil, "x": nil}
	for k, x := range set {
		v[k] = x
	}
	return driver.Row{ID: id, ServerVersion: version, Scopes: driver.Scopes{"grp": grp}, Values: v}
}

// rowReader is what Conn and Tx have in common for reading rows, with the
// partition bound.
type rowReader struct {
	name string
	get  func(ctx context.Context, table, id string) (driver.Row, bool, error)
	scan func(ctx context.Context, q driver.ScanQuery) ([]driver.Row, error)
}

func rowConnReader(conn driver.Conn, partition string) rowReader {
	return rowReader{name: "Conn",
		get: func(ctx context.Context, table, id string) (driver.Row, bool, error) {
			return conn.GetRow(ctx, partition, table, id)
		},
		scan: func(ctx context.Context, q driver.ScanQuery) ([]driver.Row, error) {
			return conn.ScanRows(ctx, partition, q)
		},
	}
}

// rowsByID returns a copy of rows sorted by id. Cases outside group SCAN
// compare scan contents with it, so a wrong order fails SCAN-1 alone.
func rowsByID(rows []driver.Row) []driver.Row {
	out := slices.Clone(rows)
	slices.SortFunc(out, func(a, b driver.Row) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func rowTxReader(tx driver.Tx) rowReader {
	return rowReader{name: "Tx", get: tx.GetRow, scan: tx.ScanRows}
}

// rowExpect checks that r reads want by id (GetRow) and that scanning
// filter returns exactly wantScan.
func rowExpect(t T, what string, r rowReader, table string, want driver.Row, filter driver.ScopeFilter, wantScan []driver.Row) {
	t.Helper()
	ctx := t.Context()
	got, found, err := r.get(ctx, table, want.ID)
	if err != nil || !found {
		t.Errorf("%s: %s.GetRow(%s, %q) = found %v, err %v; want the row", what, r.name, table, want.ID, found, err)
	} else {
		expectEqual(t, what+": "+r.name+".GetRow", want, got)
	}
	rows, err := r.scan(ctx, driver.ScanQuery{Table: table, Filter: filter, Limit: 100})
	if err != nil {
		t.Errorf("%s: %s.ScanRows: %v", what, r.name, err)
		return
	}
	expectEqual(t, what+": "+r.name+".ScanRows", wantScan, rowsByID(rows))
}

// rowExpectMissing checks that r reads id as not found: a zero Row, false
// and no error (ROW-4).
func rowExpectMissing(t T, what string, r rowReader, table, id string) {
	t.Helper()
	got, found, err := r.get(t.Context(), table, id)
	if err != nil || found {
		t.Errorf("%s: %s.GetRow(%s, %q) = found %v, err %v; want not found, nil error", what, r.name, table, id, found, err)
		return
	}
	expectEqual(t, what+": "+r.name+".GetRow of a missing row returns the zero Row", driver.Row{}, got)
}

func init() {
	register(
		// Catches a driver whose reads inside the Tx miss its own upsert,
		// or whose replacement keeps the old scope-index entry.
		Case{Name: "ROW-1/create-replace-read", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			byProject := driver.ScopeFilter{"project": {"p1"}}
			t1 := todo("t1", "p1", "o1")
			tx := begin(t, conn, "p1")
			defer tx.Rollback(context.Background())
			must(t, "ROW-1: UpsertRow (create)", tx.UpsertRow(ctx, tTodos, t1))
			rowExpect(t, "ROW-1: created row inside the Tx", rowTxReader(tx), tTodos, t1, byProject, []driver.Row{t1})
			_, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "cc1", CreatedAtMs: 1,
				Changes: []driver.Change{upsertChange(tTodos, t1)}})
			must(t, "AppendCommit", err)
			commit(t, tx)
			rowExpect(t, "ROW-1: created row after commit", rowConnReader(conn, "p1"), tTodos, t1, byProject, []driver.Row{t1})

			t1b := todo("t1", "p1", "o2")
			t1b.ServerVersion = 2
			t1b.Values["title"], t1b.Values["done"], t1b.Values["updated_at"] = "renamed", true, int64(1700000009999)
			tx2 := begin(t, conn, "p1")
			defer tx2.Rollback(context.Background())
			must(t, "ROW-1: UpsertRow (replace)", tx2.UpsertRow(ctx, tTodos, t1b))
			rowExpect(t, "ROW-1: replaced row inside the Tx", rowTxReader(tx2), tTodos, t1b, driver.ScopeFilter{"owner": {"o2"}}, []driver.Row{t1b})
			rowExpect(t, "ROW-1: replaced row inside the Tx, old owner", rowTxReader(tx2), tTodos, t1b, driver.ScopeFilter{"owner": {"o1"}}, nil)
			commit(t, tx2)
			conn1 := rowConnReader(conn, "p1")
			rowExpect(t, "ROW-1: replaced row after commit", conn1, tTodos, t1b, driver.ScopeFilter{"owner": {"o2"}}, []driver.Row{t1b})
			rowExpect(t, "ROW-1: replaced row after commit, old owner", conn1, tTodos, t1b, driver.ScopeFilter{"owner": {"o1"}}, nil)
			rowExpect(t, "ROW-1: replaced row after commit, by project", conn1, tTodos, t1b, byProject, []driver.Row{t1b})
		}},
		// Catches a driver that merges a replacement into the old row
		// (NULLs in the new row keep the old values: UPDATE … COALESCE).
		Case{Name: "ROW-1/replace-is-not-a-merge", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			grp := driver.ScopeFilter{"grp": {"g1"}}
			full := rowKinds("k1", "g1", 1, driver.Values{"s": "text", "i": int64(5), "f": 2.5, "b": true,
				"j": driver.JSON(`{"a":1}`), "x": []byte{1, 2, 3}})
			push(t, conn, "p1", tKinds, full)
			empty := rowKinds("k1", "g1", 2, nil)
			partial := rowKinds("k1", "g1", 3, driver.Values{"i": int64(6), "b": false})
			for _, next := range []driver.Row{empty, partial, full} {
				tx := begin(t, conn, "p1")
				defer tx.Rollback(context.Background())
				must(t, "ROW-1: UpsertRow (replace)", tx.UpsertRow(ctx, tKinds, next))
				rowExpect(t, "ROW-1: replacement inside the Tx", rowTxReader(tx), tKinds, next, grp, []driver.Row{next})
				commit(t, tx)
				rowExpect(t, "ROW-1: replacement after commit", rowConnReader(conn, "p1"), tKinds, next, grp, []driver.Row{next})
			}
		}},
		// Catches a driver that appends instead of replacing when one Tx
		// writes a row several times (duplicates in scans, first value wins).
		Case{Name: "ROW-1/replace-twice-in-one-tx", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			versions := []driver.Row{todo("t1", "p1", "o1"), todo("t1", "p2", "o1"), todo("t1", "p1", "o3")}
			for i := range versions {
				versions[i].ServerVersion = int64(i + 1)
				versions[i].Values["title"] = []string{"first", "second", "third"}[i]
			}
			last := versions[2]
			tx := begin(t, conn, "p1")
			defer tx.Rollback(context.Background())
			for _, v := range versions {
				must(t, "ROW-1: UpsertRow", tx.UpsertRow(ctx, tTodos, v))
			}
			rowExpect(t, "ROW-1: third write inside the Tx", rowTxReader(tx), tTodos, last, driver.ScopeFilter{"project": {"p1", "p2"}}, []driver.Row{last})
			commit(t, tx)
			r := rowConnReader(conn, "p1")
			rowExpect(t, "ROW-1: third write after commit", r, tTodos, last, driver.ScopeFilter{"project": {"p1", "p2"}}, []driver.Row{last})
			rowExpect(t, "ROW-1: third write after commit, by owner", r, tTodos, last, driver.ScopeFilter{"owner": {"o1", "o3"}}, []driver.Row{last})
			rowExpect(t, "ROW-1: intermediate scope is gone", r, tTodos, last, driver.ScopeFilter{"project": {"p2"}}, nil)
		}},
		// Catches a driver that clamps, coerces (float64, int32) or
		// "fixes" server versions (monotonic, non-negative).
		Case{Name: "ROW-2/server-version-stored-as-given", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			versions := []int64{0, -1, 1, math.MinInt64, math.MaxInt64, 1<<53 + 1, -(1<<53 + 1), 1 << 32}
			var rows []driver.Row
			for i, v := range versions {
				r := todo(string(rune('a'+i)), "p1", "o1")
				r.ServerVersion = v
				rows = append(rows, r)
			}
			push(t, conn, "p1", tTodos, rows...)
			cr := rowConnReader(conn, "p1")
			for _, r := range rows {
				rowExpect(t, "ROW-2: server version", cr, tTodos, r, driver.ScopeFilter{"project": {"p1"}}, rows)
			}
			// Lower, then the largest, on replacement: stored as given.
			for _, v := range []int64{-7, math.MaxInt64, 3} {
				r := todo("a", "p1", "o1")
				r.ServerVersion = v
				tx := begin(t, conn, "p1")
				defer tx.Rollback(context.Background())
				must(t, "ROW-2: UpsertRow", tx.UpsertRow(ctx, tTodos, r))
				rowExpect(t, "ROW-2: replaced server version inside the Tx", rowTxReader(tx), tTodos, r, driver.ScopeFilter{"owner": {"o1"}}, append([]driver.Row{r}, rows[1:]...))
				commit(t, tx)
				rowExpect(t, "ROW-2: replaced server version", cr, tTodos, r, driver.ScopeFilter{"owner": {"o1"}}, append([]driver.Row{r}, rows[1:]...))
			}
		}},
		// Catches a driver that deletes the row but leaves its scope-index
		// entries (scans still return it, or return a ghost).
		Case{Name: "ROW-3/delete-removes-row-and-scope-entries", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			t1, t2 := todo("t1", "p1", "o1"), todo("t2", "p1", "o1")
			push(t, conn, "p1", tTodos, t1, t2)
			tx := begin(t, conn, "p1")
			defer tx.Rollback(context.Background())
			must(t, "ROW-3: DeleteRow", tx.DeleteRow(ctx, tTodos, "t1"))
			inTx := rowTxReader(tx)
			rowExpectMissing(t, "ROW-3: deleted row inside the Tx", inTx, tTodos, "t1")
			rowExpect(t, "ROW-3: inside the Tx, by project", inTx, tTodos, t2, driver.ScopeFilter{"project": {"p1"}}, []driver.Row{t2})
			rowExpect(t, "ROW-3: inside the Tx, by owner", inTx, tTodos, t2, driver.ScopeFilter{"owner": {"o1"}}, []driver.Row{t2})
			_, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "cc-del", CreatedAtMs: 2,
				Changes: []driver.Change{deleteChange(tTodos, t1)}})
			must(t, "AppendCommit", err)
			commit(t, tx)
			r := rowConnReader(conn, "p1")
			rowExpectMissing(t, "ROW-3: deleted row", r, tTodos, "t1")
			rowExpect(t, "ROW-3: after the delete, by project", r, tTodos, t2, driver.ScopeFilter{"project": {"p1"}}, []driver.Row{t2})
			rowExpect(t, "ROW-3: after the delete, by owner", r, tTodos, t2, driver.ScopeFilter{"owner": {"o1"}}, []driver.Row{t2})
			rowExpect(t, "ROW-3: after the delete, by both keys", r, tTodos, t2, driver.ScopeFilter{"project": {"p1"}, "owner": {"o1"}}, []driver.Row{t2})
		}},
		// Catches a driver that fails (or touches other rows) when
		// deleting a row that does not exist or was deleted already.
		Case{Name: "ROW-3/delete-missing-is-a-no-op", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			t1 := todo("t1", "p1", "o1")
			push(t, conn, "p1", tTodos, t1)
			tx := begin(t, conn, "p1")
			defer tx.Rollback(context.Background())
			must(t, "ROW-3: DeleteRow of a missing id", tx.DeleteRow(ctx, tTodos, "nope"))
			must(t, "ROW-3: DeleteRow of an id of another table", tx.DeleteRow(ctx, tKinds, "t1"))
			must(t, "ROW-3: DeleteRow of a staged new row", tx.UpsertRow(ctx, tTodos, todo("t9", "p1", "o1")))
			must(t, "ROW-3: DeleteRow of a staged new row", tx.DeleteRow(ctx, tTodos, "t9"))
			must(t, "ROW-3: DeleteRow of it again", tx.DeleteRow(ctx, tTodos, "t9"))
			rowExpect(t, "ROW-3: other row inside the Tx", rowTxReader(tx), tTodos, t1, driver.ScopeFilter{"project": {"p1"}}, []driver.Row{t1})
			commit(t, tx)
			r := rowConnReader(conn, "p1")
			rowExpect(t, "ROW-3: other row after no-op deletes", r, tTodos, t1, driver.ScopeFilter{"project": {"p1"}}, []driver.Row{t1})
			rowExpectMissing(t, "ROW-3: row created and deleted in one Tx", r, tTodos, "t9")
		}},
		// Catches a driver that cannot re-create a deleted row in the
		// same Tx (stale tombstone) or keeps the deleted row's scope.
		Case{Name: "ROW-3/delete-then-recreate", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			push(t, conn, "p1", tTodos, todo("t1", "p1", "o1"))
			again := todo("t1", "p2", "o2")
			again.ServerVersion = 9
			tx := begin(t, conn, "p1")
			defer tx.Rollback(context.Background())
			must(t, "ROW-3: DeleteRow", tx.DeleteRow(ctx, tTodos, "t1"))
			must(t, "ROW-3: UpsertRow after DeleteRow", tx.UpsertRow(ctx, tTodos, again))
			rowExpect(t, "ROW-3: re-created row inside the Tx", rowTxReader(tx), tTodos, again, driver.ScopeFilter{"project": {"p1"}}, nil)
			commit(t, tx)
			r := rowConnReader(conn, "p1")
			rowExpect(t, "ROW-3: re-created row, old scope", r, tTodos, again, driver.ScopeFilter{"owner": {"o1"}}, nil)
			rowExpect(t, "ROW-3: re-created row, new scope", r, tTodos, again, driver.ScopeFilter{"owner": {"o2"}}, []driver.Row{again})
		}},
		// Catches a driver that returns an error for a missing row, or
		// matches ids case-insensitively, with padding, after Unicode
		// normalization, or across tables.
		Case{Name: "ROW-4/missing-row-reads-not-found", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			push(t, conn, "p1", tTodos, todo("t1", "p1", "o1"), todo("\u00e9", "p1", "o1"))
			tx := begin(t, conn, "p1")
			defer tx.Rollback(context.Background())
			for _, r := range []rowReader{rowConnReader(conn, "p1"), rowTxReader(tx)} {
				for _, id := range []string{"nope", "T1", "t1 ", " t1", "t", "e\u0301", "E\u0301", "\u00c9"} {
					rowExpectMissing(t, "ROW-4", r, tTodos, id)
				}
				rowExpectMissing(t, "ROW-4: todos id in kinds", r, tKinds, "t1")
				rowExpectMissing(t, "ROW-4: todos id in users", r, tUsers, "t1")
			}
			rowExpectMissing(t, "ROW-4: another partition", rowConnReader(conn, "p2"), tTodos, "t1")
		}},
	)
}
