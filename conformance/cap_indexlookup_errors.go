package conformance

import (
	"context"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// IXL-2: the errors of an index lookup, in their order. Validation lives
// in sync (group V), so the order is checked through a sync.Store and its
// Tx; the bare driver is checked on valid-but-unknown input, which only
// the engine can judge: a table or index that is not in the ensured schema.

func init() {
	c := driver.CapIndexLookup
	register(
		// Catches: checks made in another order than IXL-2's (each query breaks two rules at once).
		Case{Name: "IXL-2/error-order-through-sync", Capability: c, Run: ixlErrorOrder},
		// Catches: a Tx lookup that validates differently from the Conn lookup.
		Case{Name: "IXL-2/error-order-inside-tx", Capability: c, Run: ixlErrorOrderTx},
		// Catches: a driver that reports an unknown table or index as an empty result or an internal error.
		Case{Name: "IXL-2/driver-unknown-table-and-index", Capability: c, Run: ixlDriverUnknown},
	)
}

// ixlErrCase is one lookup and the code it must fail with.
type ixlErrCase struct {
	what string
	q    driver.IndexQuery
	want driver.Code
}

// ixlErrCases are lookups on p1 of a store with TestSchema: each breaks
// the rule it names and every rule after it, so only the first one in
// IXL-2's order may be reported.
func ixlErrCases() []ixlErrCase {
	return []ixlErrCase{
		{"unknown table, bad limit, unknown index", driver.IndexQuery{Table: "nope", Index: "nope", Values: []any{int64(1), 2}, Limit: 0},
			driver.CodeUnknownTable},
		{"limit 0, unknown index", driver.IndexQuery{Table: tTodos, Index: "nope", Values: []any{1, 2}, Limit: 0},
			driver.CodeInvalidLimit},
		{"limit 1001, unknown index", driver.IndexQuery{Table: tTodos, Index: "nope", Values: nil, Limit: 1001},
			driver.CodeInvalidLimit},
		{"limit -1, wrong count", driver.IndexQuery{Table: tTodos, Index: "by_owner", Values: []any{"a", "b"}, Limit: -1},
			driver.CodeInvalidLimit},
		{"index of another table, wrong count", driver.IndexQuery{Table: tTodos, Index: "by_email", Values: []any{}, Limit: 1000},
			driver.CodeIndexNotFound},
		{"unknown index, wrong type", driver.IndexQuery{Table: tTodos, Index: "by_title", Values: []any{int64(3)}, Limit: 1},
			driver.CodeIndexNotFound},
		{"no values", driver.IndexQuery{Table: tTodos, Index: "by_owner", Values: nil, Limit: 10},
			driver.CodeIndexValueCountMismatch},
		{"two values of the wrong type", driver.IndexQuery{Table: tTodos, Index: "by_owner", Values: []any{int64(1), int64(2)}, Limit: 10},
			driver.CodeIndexValueCountMismatch},
		{"integer for a string column", driver.IndexQuery{Table: tTodos, Index: "by_owner", Values: []any{int64(1)}, Limit: 10},
			driver.CodeInvalidValue},
		{"int (not int64) for a string column", driver.IndexQuery{Table: tUsers, Index: "by_email", Values: []any{7}, Limit: 10},
			driver.CodeInvalidValue},
		{"string with a NUL", driver.IndexQuery{Table: tUsers, Index: "by_email", Values: []any{"a\x00b"}, Limit: 10},
			driver.CodeInvalidValue},
		{"invalid UTF-8", driver.IndexQuery{Table: tUsers, Index: "by_email", Values: []any{"\xff"}, Limit: 10},
			driver.CodeInvalidValue},
	}
}

// ixlSyncStore wraps conn in a sync.Store with TestSchema ensured.
func ixlSyncStore(t T, conn driver.Conn) *syncstore.Store {
	t.Helper()
	s := syncstore.OpenConn(conn)
	must(t, "setup: Store.EnsureSchema", s.EnsureSchema(t.Context(), TestSchema()))
	return s
}

func ixlErrorOrder(t T, h Harness) {
	conn := openStore(t, h)
	push(t, conn, "p1", tTodos, todo("t1", "pa", "u1"))
	s := ixlSyncStore(t, conn)
	for _, c := range ixlErrCases() {
		rows, err := s.ScanRowsByIndex(t.Context(), "p1", c.q)
		expectCode(t, "IXL-2: Store.ScanRowsByIndex, "+c.what, err, c.want)
		if len(rows) != 0 {
			t.Errorf("IXL-2: %s returned %d rows with its error", c.what, len(rows))
		}
	}
	// The bounds themselves are valid.
	for _, limit := range []int{1, 1000} {
		rows, err := s.ScanRowsByIndex(t.Context(), "p1", byOwner("u1", limit))
		must(t, "IXL-2: a lookup with limit at the bound", err)
		expectEqual(t, "IXL-2: lookup with a valid limit", []string{"t1"}, ids(rows))
	}
	_, err := s.ScanRowsByIndex(t.Context(), "", driver.IndexQuery{Table: "nope", Limit: 0})
	expectCode(t, "IXL-2/V-1: an invalid partition comes first", err, driver.CodeInvalidArgument)
}

func ixlErrorOrderTx(t T, h Harness) {
	conn := openStore(t, h)
	s := ixlSyncStore(t, conn)
	tx, err := s.Begin(t.Context(), "p1")
	must(t, "Store.Begin", err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	must(t, "Tx.UpsertRow", tx.UpsertRow(t.Context(), tTodos, todo("t1", "pa", "u1")))
	for _, c := range ixlErrCases() {
		_, err := tx.ScanRowsByIndex(t.Context(), c.q)
		expectCode(t, "IXL-2: Tx.ScanRowsByIndex, "+c.what, err, c.want)
	}
	rows, err := tx.ScanRowsByIndex(t.Context(), byOwner("u1", 1000))
	must(t, "IXL-2: Tx lookup with limit 1000", err)
	expectEqual(t, "IXL-2: the Tx is still usable after the errors", []string{"t1"}, ids(rows))
}

func ixlDriverUnknown(t T, h Harness) {
	conn := openStore(t, h)
	push(t, conn, "p1", tTodos, todo("t1", "pa", "u1"))
	ix := ixlConn(t, conn)
	ctx := t.Context()

	_, err := ix.ScanRowsByIndex(ctx, "p1", driver.IndexQuery{Table: "nope", Index: "by_owner", Values: []any{"u1"}, Limit: 10})
	expectCode(t, "IXL-2/SCH-8: driver lookup on a table not in the schema", err, driver.CodeUnknownTable)
	_, err = ix.ScanRowsByIndex(ctx, "p1", driver.IndexQuery{Table: tTodos, Index: "by_title", Values: []any{"x"}, Limit: 10})
	expectCode(t, "IXL-2: driver lookup on an undeclared index", err, driver.CodeIndexNotFound)
	_, err = ix.ScanRowsByIndex(ctx, "p1", driver.IndexQuery{Table: tTodos, Index: "by_email", Values: []any{"x"}, Limit: 10})
	expectCode(t, "IXL-2: driver lookup on another table's index", err, driver.CodeIndexNotFound)

	bare := h.Open(t) // no schema ensured: every table is unknown (SCH-8)
	_, err = ixlConn(t, bare).ScanRowsByIndex(ctx, "p1", byOwner("u1", 10))
	expectCode(t, "IXL-2/SCH-8: driver lookup before EnsureSchema", err, driver.CodeUnknownTable)

	tx := begin(t, conn, "p1")
	defer func() { _ = tx.Rollback(context.Background()) }()
	txi := ixlTx(t, tx)
	_, err = txi.ScanRowsByIndex(ctx, driver.IndexQuery{Table: "nope", Index: "by_owner", Values: []any{"u1"}, Limit: 10})
	expectCode(t, "IXL-2/SCH-8: Tx lookup on a table not in the schema", err, driver.CodeUnknownTable)
	_, err = txi.ScanRowsByIndex(ctx, driver.IndexQuery{Table: tTodos, Index: "by_title", Values: []any{"x"}, Limit: 10})
	expectCode(t, "IXL-2: Tx lookup on an undeclared index", err, driver.CodeIndexNotFound)
	rows, err := txi.ScanRowsByIndex(ctx, byOwner("u1", 10))
	must(t, "Tx lookup after errors", err)
	expectEqual(t, "IXL-2: the Tx is usable after the errors", []string{"t1"}, ids(rows))
}
