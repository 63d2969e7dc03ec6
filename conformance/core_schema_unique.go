package conformance

import (
	"context"
	"errors"
	"strings"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// SCH-9 (declared indexes are per partition, index names per table) and
// SCH-10 (a unique collision fails the write and alters nothing).

// schUniqueSchema has two tables that both declare indexes named uniq
// (unique) and by_k on their column k.
func schUniqueSchema() driver.Schema {
	table := func(name string) driver.Table {
		return driver.Table{Name: name,
			Columns:    []driver.Column{{Name: "id", Type: driver.TypeString}, {Name: "grp", Type: driver.TypeString}, {Name: "k", Type: driver.TypeString}},
			PrimaryKey: "id",
			Scopes:     []driver.Scope{{Variable: "grp", Column: "grp"}},
			Indexes:    []driver.Index{{Name: "uniq", Columns: []string{"k"}, Unique: true}, {Name: "by_k", Columns: []string{"k"}}},
		}
	}
	return driver.Schema{Version: 1, Tables: []driver.Table{table("alpha"), table("beta")}}
}

// Distinctive partition names, so a message that leaks one is caught (V-10).
const (
	schP  = "tenant-5e2b"
	schP2 = "tenant-91d7"
)

func schKRow(id, k string) driver.Row {
	return driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"grp": "g"}, Values: driver.Values{"id": id, "grp": "g", "k": k}}
}

// schExpectConstraint checks a unique collision's error: the code, the
// sentinel, and a message free of the colliding value and the partition
// name (V-10).
func schExpectConstraint(t T, what string, err error, value, partition string) {
	t.Helper()
	expectCode(t, what, err, driver.CodeConstraintViolation)
	if err == nil {
		return
	}
	if !errors.Is(err, driver.ErrConstraintViolation) {
		t.Errorf("%s: errors.Is(err, ErrConstraintViolation) = false", what)
	}
	if msg := err.Error(); strings.Contains(msg, value) || strings.Contains(msg, partition) {
		t.Errorf("V-10: %s: message %q contains the colliding value or the partition name", what, msg)
	}
}

// schRejected is the rejected push result the SCH-10 cases store.
func schRejected() driver.PushResult {
	return driver.PushResult{Status: driver.PushRejected, RecordedAtMs: 1700000000123, CacheIdentity: "ci",
		Ops: []driver.OpResult{{Status: driver.OpError, Code: "app.duplicate_email", Message: "email taken"}}}
}

func init() {
	register(
		// Catches a driver whose unique indexes span partitions (the
		// engine index lacks the partition column).
		Case{Name: "SCH-9/unique-value-in-two-partitions", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			a, b := user("u1", "org", "same@example.com"), user("u2", "org", "same@example.com")
			push(t, conn, schP, tUsers, a)
			push(t, conn, schP2, tUsers, b)
			push(t, conn, "p3", tUsers, a)
			schExpectRow(t, "SCH-9: p1 row", conn, schP, tUsers, a)
			schExpectRow(t, "SCH-9: p2 row with the same unique email", conn, schP2, tUsers, b)
			schExpectRow(t, "SCH-9: p3 row with the same id and email", conn, "p3", tUsers, a)
			tx := begin(t, conn, schP2)
			defer tx.Rollback(context.Background())
			schExpectConstraint(t, "SCH-9: the index still holds inside p2",
				tx.UpsertRow(t.Context(), tUsers, user("u3", "org", "same@example.com")), "same@example.com", schP2)
		}},
		// Catches a driver that names engine indexes by index name alone,
		// so a second table's "uniq" collides with (or silently reuses)
		// the first table's.
		Case{Name: "SCH-9/index-names-are-per-table", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := h.Open(t)
			must(t, "SCH-9: Store.EnsureSchema of two tables with the same index names",
				syncstore.OpenConn(conn).EnsureSchema(ctx, schUniqueSchema()))
			tx := begin(t, conn, schP)
			defer tx.Rollback(context.Background())
			must(t, "SCH-9: UpsertRow(alpha)", tx.UpsertRow(ctx, "alpha", schKRow("r1", "val-v1")))
			must(t, "SCH-9: UpsertRow(beta) with alpha's unique value", tx.UpsertRow(ctx, "beta", schKRow("r1", "val-v1")))
			must(t, "SCH-9: UpsertRow(beta) with another id", tx.UpsertRow(ctx, "beta", schKRow("r2", "val-w2")))
			schExpectConstraint(t, "SCH-9: unique uniq of alpha", tx.UpsertRow(ctx, "alpha", schKRow("r3", "val-v1")), "val-v1", schP)
			schExpectConstraint(t, "SCH-9: unique uniq of beta", tx.UpsertRow(ctx, "beta", schKRow("r3", "val-w2")), "val-w2", schP)
			commit(t, tx)
			for _, table := range []string{"alpha", "beta"} {
				got, err := conn.ScanRows(ctx, schP, driver.ScanQuery{Table: table, Filter: driver.ScopeFilter{"grp": {"g"}}, Limit: 10})
				must(t, "ScanRows", err)
				want := []driver.Row{schKRow("r1", "val-v1")}
				if table == "beta" {
					want = append(want, schKRow("r2", "val-w2"))
				}
				expectEqual(t, "SCH-9: rows of "+table, want, rowsByID(got))
			}
		}},
		// Catches a driver that resolves a unique collision by replacing
		// the other row (INSERT OR REPLACE, ON CONFLICT on the wrong key),
		// writes the colliding row anyway, or poisons the Tx.
		Case{Name: "SCH-10/collision-fails-and-alters-nothing", Run: func(t T, h Harness) {
			ctx := t.Context()
			const p = "tenant-7f3a9c"
			conn := openStore(t, h)
			u1, u2 := user("u1", "org", "a@example.com"), user("u2", "org", "b@example.com")
			push(t, conn, p, tUsers, u1, u2)
			tx := begin(t, conn, p)
			defer tx.Rollback(context.Background())
			schExpectConstraint(t, "SCH-10: new row with u1's email",
				tx.UpsertRow(ctx, tUsers, user("u3", "org", "a@example.com")), "a@example.com", p)
			_, found, err := tx.GetRow(ctx, tUsers, "u3")
			if err != nil || found {
				t.Errorf("SCH-10: Tx.GetRow of the colliding row = found %v, err %v; want not found", found, err)
			}
			got, _, err := tx.GetRow(ctx, tUsers, "u1")
			must(t, "SCH-10: Tx.GetRow(u1)", err)
			expectEqual(t, "SCH-10: the other row inside the Tx", u1, got)
			u4 := user("u4", "org", "c@example.com")
			must(t, "SCH-10: UpsertRow after the collision (the Tx stays usable)", tx.UpsertRow(ctx, tUsers, u4))
			seq, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "cc2", CreatedAtMs: 2,
				Changes: []driver.Change{upsertChange(tUsers, u4)}})
			must(t, "SCH-10: AppendCommit after the collision", err)
			expectEqual(t, "SCH-10: seq of the commit after the collision", int64(2), seq)
			commit(t, tx)
			rows, err := conn.ScanRows(ctx, p, driver.ScanQuery{Table: tUsers, Filter: driver.ScopeFilter{"org": {"org"}}, Limit: 10})
			must(t, "ScanRows", err)
			expectEqual(t, "SCH-10: rows after the Tx (no u3, u1 unchanged)", []driver.Row{u1, u2, u4}, rowsByID(rows))
		}},
		// Catches a driver that replaces on the unique key instead of the
		// primary key, or keeps a replaced row's old index entry.
		Case{Name: "SCH-10/upsert-replaces-only-its-own-row", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			u1, u2 := user("u1", "org", "a@example.com"), user("u2", "org", "b@example.com")
			push(t, conn, schP, tUsers, u1, u2)
			u1c := user("u1", "org", "c@example.com")
			push(t, conn, schP, tUsers, u1c)
			schExpectRow(t, "SCH-10: u1 after changing its email", conn, schP, tUsers, u1c)
			schExpectRow(t, "SCH-10: u2 after u1 changed its email", conn, schP, tUsers, u2)
			u3 := user("u3", "org", "a@example.com")
			push(t, conn, schP, tUsers, u3) // u1's old email is free again
			schExpectRow(t, "SCH-10: new row with u1's former email", conn, schP, tUsers, u3)

			tx := begin(t, conn, schP)
			defer tx.Rollback(context.Background())
			schExpectConstraint(t, "SCH-10: u1 taking u2's email", tx.UpsertRow(ctx, tUsers, user("u1", "org", "b@example.com")), "b@example.com", schP)
			got, _, err := tx.GetRow(ctx, tUsers, "u1")
			must(t, "SCH-10: Tx.GetRow(u1)", err)
			expectEqual(t, "SCH-10: u1 after its failed replacement", u1c, got)
			// A swap through a free value inside one Tx sees the staged rows.
			must(t, "SCH-10: u1 moves to d@", tx.UpsertRow(ctx, tUsers, user("u1", "org", "d@example.com")))
			must(t, "SCH-10: u2 takes u1's staged-free c@", tx.UpsertRow(ctx, tUsers, user("u2", "org", "c@example.com")))
			schExpectConstraint(t, "SCH-10: u3 taking u1's staged d@", tx.UpsertRow(ctx, tUsers, user("u3", "org", "d@example.com")), "d@example.com", schP)
			commit(t, tx)
			rows, err := conn.ScanRows(ctx, schP, driver.ScanQuery{Table: tUsers, Filter: driver.ScopeFilter{"org": {"org"}}, Limit: 10})
			must(t, "ScanRows", err)
			expectEqual(t, "SCH-10: rows after the swap", []driver.Row{user("u1", "org", "d@example.com"),
				user("u2", "org", "c@example.com"), u3}, rowsByID(rows))
		}},
		// Catches a driver that checks uniqueness only against committed
		// rows, missing a collision with a row staged in the same Tx.
		Case{Name: "SCH-10/collision-with-staged-row", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			u5, u6 := user("u5", "org", "e@example.com"), user("u6", "org", "e@example.com")
			tx := begin(t, conn, schP)
			defer tx.Rollback(context.Background())
			must(t, "SCH-10: UpsertRow(u5)", tx.UpsertRow(ctx, tUsers, u5))
			schExpectConstraint(t, "SCH-10: u6 with u5's staged email", tx.UpsertRow(ctx, tUsers, u6), "e@example.com", schP)
			commit(t, tx)
			schExpectRow(t, "SCH-10: staged row kept", conn, schP, tUsers, u5)
			_, found, err := conn.GetRow(ctx, schP, tUsers, "u6")
			if err != nil || found {
				t.Errorf("SCH-10: colliding row = found %v, err %v; want not found", found, err)
			}
		}},
		// Catches a driver whose Tx is poisoned by a constraint error, so
		// CommitRejected fails or commits the staged writes (TX-8).
		Case{Name: "SCH-10/commit-rejected-after-collision", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			push(t, conn, schP, tUsers, user("u1", "org", "a@example.com"))
			tx := begin(t, conn, schP)
			defer tx.Rollback(context.Background())
			must(t, "SCH-10: UpsertRow(u7)", tx.UpsertRow(ctx, tUsers, user("u7", "org", "f@example.com")))
			_, err := tx.AppendCommit(ctx, driver.CommitInput{ClientID: "c1", ClientCommitID: "cc-r", CreatedAtMs: 3})
			must(t, "SCH-10: AppendCommit", err)
			schExpectConstraint(t, "SCH-10: u8 with u1's email", tx.UpsertRow(ctx, tUsers, user("u8", "org", "a@example.com")), "a@example.com", schP)
			must(t, "SCH-10/TX-8: CommitRejected after the collision", tx.CommitRejected(ctx, "c1", "cc-r", schRejected()))
			res, found, err := conn.GetPushResult(ctx, schP, "c1", "cc-r")
			if err != nil || !found {
				t.Fatalf("SCH-10/TX-8: GetPushResult after CommitRejected = found %v, err %v", found, err)
			}
			expectEqual(t, "SCH-10/TX-8: stored rejected result", schRejected(), res)
			_, found, err = conn.GetRow(ctx, schP, tUsers, "u7")
			if err != nil || found {
				t.Errorf("SCH-10/TX-8: staged row after CommitRejected = found %v, err %v; want discarded", found, err)
			}
			expectEqual(t, "SCH-10/TX-8: seq of the next commit (CommitRejected consumed none)", int64(2), push(t, conn, schP, tUsers, user("u9", "org", "g@example.com")))
		}},
	)
}
