package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// ERR cases: errors are typed with stable codes (ERR-1), a missing
// capability is reported as unsupported (ERR-2), and capabilities come in
// whole pairs, as the harness expects them (ERR-3).

// errCodes lists every code with its sentinel and whether it is retryable.
var errCodes = []struct {
	code      driver.Code
	sentinel  *driver.Error
	retryable bool
}{
	{driver.CodeInvalidArgument, driver.ErrInvalidArgument, false},
	{driver.CodeInvalidValue, driver.ErrInvalidValue, false},
	{driver.CodeInvalidLimit, driver.ErrInvalidLimit, false},
	{driver.CodeScanRequiresScope, driver.ErrScanRequiresScope, false},
	{driver.CodeInvalidClientID, driver.ErrInvalidClientID, false},
	{driver.CodeSchemaInvalid, driver.ErrSchemaInvalid, false},
	{driver.CodeSchemaMismatch, driver.ErrSchemaMismatch, false},
	{driver.CodeSchemaNewer, driver.ErrSchemaNewer, false},
	{driver.CodeSchemaMigrationUnsupported, driver.ErrSchemaMigrationUnsupported, false},
	{driver.CodeUnknownTable, driver.ErrUnknownTable, false},
	{driver.CodeConstraintViolation, driver.ErrConstraintViolation, false},
	{driver.CodeTxFinished, driver.ErrTxFinished, false},
	{driver.CodeWriteConflict, driver.ErrWriteConflict, true},
	{driver.CodeIdempotencyCacheMiss, driver.ErrIdempotencyCacheMiss, true},
	{driver.CodeInvalidHorizon, driver.ErrInvalidHorizon, false},
	{driver.CodeUnavailable, driver.ErrUnavailable, true},
	{driver.CodeUnsupported, driver.ErrUnsupported, false},
	{driver.CodeDuplicateReactionKey, driver.ErrDuplicateReactionKey, false},
	{driver.CodeQueryInvalid, driver.ErrQueryInvalid, false},
	{driver.CodeQueryLimit, driver.ErrQueryLimit, false},
	{driver.CodeIndexNotFound, driver.ErrIndexNotFound, false},
	{driver.CodeIndexValueCountMismatch, driver.ErrIndexValueCountMismatch, false},
	{driver.CodeCommitOutcomeUnknown, driver.ErrCommitOutcomeUnknown, true},
	{driver.CodeCursorExpired, driver.ErrCursorExpired, false},
	{driver.CodeCursorAhead, driver.ErrCursorAhead, false},
	{driver.CodeClientActorMismatch, driver.ErrClientActorMismatch, false},
	{driver.CodeClosed, driver.ErrClosed, false},
	{driver.CodeInternal, driver.ErrInternal, false},
}

// errExpectTyped checks that err is (or wraps) a *driver.Error with code,
// matches code's sentinel and no other, says whether it is retryable, and
// names neither the partition nor the secret value (V-10).
func errExpectTyped(t T, what string, err error, code driver.Code, secrets ...string) {
	t.Helper()
	var e *driver.Error
	if !errors.As(err, &e) {
		t.Errorf("ERR-1: %s: got %T %v; want a *driver.Error with code %s", what, err, err, code)
		return
	}
	if e.Code != code {
		t.Errorf("ERR-1: %s: code %q, want %q (error %v)", what, e.Code, code, err)
		return
	}
	for _, c := range errCodes {
		if got, want := errors.Is(err, c.sentinel), c.code == code; got != want {
			t.Errorf("ERR-1: %s: errors.Is(err, sentinel of %s) = %v, want %v", what, c.code, got, want)
		}
		if c.code != code {
			continue
		}
		if e.Retryable() != c.retryable || driver.IsRetryable(err) != c.retryable {
			t.Errorf("ERR-1: %s: Retryable() = %v, want %v", what, e.Retryable(), c.retryable)
		}
		if !errors.Is(fmt.Errorf("host: %w", err), c.sentinel) {
			t.Errorf("ERR-1: %s: the error wrapped by a host no longer matches its sentinel", what)
		}
	}
	msg := err.Error()
	if !strings.Contains(msg, string(code)) {
		t.Errorf("ERR-1: %s: message %q does not carry its code", what, msg)
	}
	for _, s := range secrets {
		if strings.Contains(msg, s) {
			t.Errorf("V-10: %s: message %q contains %q (a partition name or value)", what, msg, s)
		}
	}
}

// errSet returns the capabilities of cs as a sorted, duplicate-free list.
func errSet(cs []driver.Capability) []string {
	var out []string
	for _, c := range cs {
		out = append(out, string(c))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func init() {
	register(
		// Catches a driver that returns raw engine errors (sql.ErrNoRows,
		// sqlite/pgx errors), the wrong code, or messages naming the
		// partition or the colliding value.
		Case{Name: "ERR-1/driver-errors-are-typed", Run: func(t T, h Harness) {
			ctx := t.Context()
			const p, email = "tenant-err-4c1d", "secret-4c1d@example.com"
			conn := openStore(t, h)
			push(t, conn, p, tUsers, user("u1", "org", email))

			_, _, err := conn.GetRow(ctx, p, "nope", "x")
			errExpectTyped(t, "GetRow of an unknown table", err, driver.CodeUnknownTable, p)
			errExpectTyped(t, "SetHorizonSeq above MaxCommitSeq", conn.SetHorizonSeq(ctx, p, 5), driver.CodeInvalidHorizon, p)
			_, err = conn.PruneCommitsThrough(ctx, p, 1)
			errExpectTyped(t, "PruneCommitsThrough above the horizon", err, driver.CodeInvalidHorizon, p)

			tx := begin(t, conn, p)
			defer tx.Rollback(context.Background())
			errExpectTyped(t, "unique collision", tx.UpsertRow(ctx, tUsers, user("u2", "org", email)), driver.CodeConstraintViolation, p, email)
			commit(t, tx)
			_, _, err = tx.GetRow(ctx, tUsers, "u1")
			errExpectTyped(t, "Tx.GetRow after Commit", err, driver.CodeTxFinished, p)
			errExpectTyped(t, "Tx.Commit after Commit", tx.Commit(ctx), driver.CodeTxFinished, p)
			tx2 := begin(t, conn, p)
			must(t, "Rollback", tx2.Rollback(ctx))
			errExpectTyped(t, "Tx.UpsertRow after Rollback", tx2.UpsertRow(ctx, tUsers, user("u3", "org", "x@example.com")), driver.CodeTxFinished, p)

			mismatch := schEdit(TestSchema(), 1, tUsers, func(tb *driver.Table) { tb.Indexes = nil })
			errExpectTyped(t, "EnsureSchema with a different layout", conn.EnsureSchema(ctx, mismatch), driver.CodeSchemaMismatch)
			errExpectTyped(t, "EnsureSchema with an unsupported change", conn.EnsureSchema(ctx, schUnsupported()[0].schema),
				driver.CodeSchemaMigrationUnsupported)
			must(t, "EnsureSchema(version 2)", conn.EnsureSchema(ctx, schV2()))
			errExpectTyped(t, "EnsureSchema older than stored", conn.EnsureSchema(ctx, TestSchema()), driver.CodeSchemaNewer)

			store := syncstore.OpenConn(conn)
			errExpectTyped(t, "Store.EnsureSchema of an invalid schema", store.EnsureSchema(ctx, driver.Schema{Version: 0}), driver.CodeSchemaInvalid)
		}},
		// Catches a driver that leaks context.Canceled or "sql: database is
		// closed" untyped, or whose second Close fails.
		Case{Name: "ERR-1/cancelled-and-closed", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			cancelled, cancel := context.WithCancel(t.Context())
			cancel()
			_, err := conn.Begin(cancelled, "p1")
			errExpectTyped(t, "Begin with a cancelled context", err, driver.CodeUnavailable)
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("ERR-1: Begin with a cancelled context: %v does not wrap context.Canceled", err)
			}
			if _, _, err := conn.GetRow(cancelled, "p1", tTodos, "t1"); err != nil && driver.CodeOf(err) == "" {
				t.Errorf("ERR-1: GetRow with a cancelled context: untyped %T %v", err, err)
			}
			if _, err := conn.MaxCommitSeq(cancelled, "p1"); err != nil && driver.CodeOf(err) == "" {
				t.Errorf("ERR-1: MaxCommitSeq with a cancelled context: untyped %T %v", err, err)
			}
			push(t, conn, "p1", tTodos, todo("t1", "p1", "o1")) // the Conn still works

			must(t, "ERR-1: Close", conn.Close())
			// After Close the code is sync.storage.closed (ERR-4), never a
			// retryable one: a retry cannot help.
			_, err = conn.MaxCommitSeq(t.Context(), "p1")
			errExpectTyped(t, "ERR-1: MaxCommitSeq after Close", err, driver.CodeClosed)
			tx, err := conn.Begin(t.Context(), "p1")
			if tx != nil {
				_ = tx.Rollback(context.Background())
			}
			errExpectTyped(t, "ERR-1: Begin after Close", err, driver.CodeClosed)
			_, _, err = conn.GetRow(t.Context(), "p1", tTodos, "t1")
			errExpectTyped(t, "ERR-1: GetRow after Close", err, driver.CodeClosed)
			if err := conn.Close(); err != nil {
				t.Errorf("ERR-1: second Close = %v; want nil (no-op)", err)
			}
		}},
		// Catches a change to the code table: a retryable code that stops
		// saying so, or a permanent one that starts to.
		Case{Name: "ERR-1/retryable-codes", Run: func(t T, h Harness) {
			for _, c := range errCodes {
				if c.code.Retryable() != c.retryable || c.sentinel.Retryable() != c.retryable {
					t.Errorf("ERR-1: code %s: Retryable() = %v (sentinel %v), want %v", c.code, c.code.Retryable(), c.sentinel.Retryable(), c.retryable)
				}
				wrapped := fmt.Errorf("outer: %w", driver.Errorf(c.code, "x"))
				if driver.IsRetryable(wrapped) != c.retryable || !errors.Is(wrapped, c.sentinel) {
					t.Errorf("ERR-1: code %s: a wrapped error reports retryable %v, errors.Is %v", c.code, driver.IsRetryable(wrapped), errors.Is(wrapped, c.sentinel))
				}
				if !strings.HasPrefix(string(c.code), "sync.") {
					t.Errorf("ERR-1: code %q lacks the sync. namespace", c.code)
				}
			}
			if driver.IsRetryable(errors.New("plain")) || driver.IsRetryable(nil) {
				t.Errorf("ERR-1: an untyped error or nil reports retryable")
			}
		}},
		// Catches a driver that reports an unreachable engine as a
		// permanent (or untyped) failure, so hosts never retry.
		Case{Name: "ERR-1/unreachable-is-retryable", Run: func(t T, h Harness) {
			if h.Unreachable == nil {
				t.Skipf("ERR-1: needs Harness.Unreachable")
			}
			conn := h.Unreachable(t)
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			tx, err := conn.Begin(ctx, "p1")
			if err == nil {
				_ = tx.Rollback(context.Background())
				t.Fatalf("ERR-1: Begin on an unreachable engine succeeded")
			}
			errExpectTyped(t, "Begin on an unreachable engine", err, driver.CodeUnavailable)
		}},
		// Catches a Store that reports capabilities other than the Conn's.
		Case{Name: "ERR-2/store-reports-conn-capabilities", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			store := syncstore.OpenConn(conn)
			expectEqual(t, "ERR-2: Store.Capabilities()", errSet(driver.ConnCapabilities(conn)), errSet(store.Capabilities()))
			for _, c := range driver.AllCapabilities {
				if store.Supports(c) != driver.ConnHas(conn, c) {
					t.Errorf("ERR-2: Store.Supports(%s) = %v, Conn declares %v", c, store.Supports(c), driver.ConnHas(conn, c))
				}
			}
		}},
		// Catches a Store accessor that panics on a failed type assertion
		// or returns an empty result instead of unsupported.
		Case{Name: "ERR-2/missing-index-lookup-is-unsupported", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			if driver.ConnHas(conn, driver.CapIndexLookup) {
				t.Skipf("ERR-2: the driver declares index-lookup (ERR-2/every-missing-capability-is-unsupported checks every accessor on a core-only view)")
			}
			ctx := t.Context()
			store := syncstore.OpenConn(conn)
			must(t, "Store.EnsureSchema", store.EnsureSchema(ctx, TestSchema()))
			q := driver.IndexQuery{Table: tTodos, Index: "by_owner", Values: []any{"o1"}, Limit: 10}
			check := func(what string, call func() ([]driver.Row, error)) {
				t.Helper()
				var rows []driver.Row
				var err error
				func() {
					defer func() {
						if r := recover(); r != nil {
							err = fmt.Errorf("panic: %v", r)
						}
					}()
					rows, err = call()
				}()
				errExpectTyped(t, what, err, driver.CodeUnsupported)
				var e *driver.Error
				if errors.As(err, &e) && (e.Capability != driver.CapIndexLookup || !strings.Contains(err.Error(), string(driver.CapIndexLookup))) {
					t.Errorf("ERR-2: %s: Capability %q, message %q; want both to name %s", what, e.Capability, err.Error(), driver.CapIndexLookup)
				}
				if rows != nil {
					t.Errorf("ERR-2: %s returned %d rows with the error; want nil", what, len(rows))
				}
			}
			check("Store.ScanRowsByIndex", func() ([]driver.Row, error) { return store.ScanRowsByIndex(ctx, "p1", q) })
			stx, err := store.Begin(ctx, "p1")
			must(t, "Store.Begin", err)
			defer stx.Rollback(context.Background())
			check("Tx.ScanRowsByIndex", func() ([]driver.Row, error) { return stx.ScanRowsByIndex(ctx, q) })
		}},
		// Catches a driver declaring one half of a capability (a Conn half
		// whose Tx lacks its half, or the reverse), and a driver whose
		// declared set differs from what its harness expects (a wrapper
		// that dropped an interface).
		Case{Name: "ERR-3/capability-halves-and-harness-agree", Run: func(t T, h Harness) {
			conn := openStore(t, h)
			expectEqual(t, "ERR-3: declared capabilities (-Harness.Capabilities +found on the Conn)",
				errSet(h.Capabilities), errSet(driver.ConnCapabilities(conn)))
			if h.Reopen != nil {
				expectEqual(t, "ERR-3: capabilities of a second Conn (-first Conn +second)",
					errSet(driver.ConnCapabilities(conn)), errSet(driver.ConnCapabilities(h.Reopen(t, conn))))
			}
			tx := begin(t, conn, "p1")
			defer tx.Rollback(context.Background())
			for _, c := range driver.AllCapabilities {
				if !c.HasTxHalf() {
					continue
				}
				if ch, th := driver.ConnHas(conn, c), driver.TxHas(tx, c); ch != th {
					t.Errorf("ERR-3: capability %s: Conn half implemented %v, Tx half implemented %v; implement both or neither", c, ch, th)
				}
			}
		}},
	)
}
