package conformance

import (
	"context"
	gosync "sync"

	"github.com/syncstore/syncstore/driver"
)

// ERR-3, wrapping: a wrapper for tracing or metrics (driver.WrapConn) must
// keep every capability of what it wraps, Conn and Tx halves alike
// ("a wrapper must keep the capabilities of what it wraps"). The case wraps the harness's Conn, so it checks the
// wrapper against every driver's real combination of interfaces.

// wrapCalls are hooks that count the calls through a wrapped Conn.
type wrapCalls struct {
	mu    gosync.Mutex
	calls map[string]int
	errs  int
}

func (w *wrapCalls) hooks() driver.Hooks {
	return driver.Hooks{Start: func(ctx context.Context, c driver.Call) (context.Context, func(error)) {
		return ctx, func(err error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.calls[c.Op]++
			if err != nil {
				w.errs++
			}
		}
	}}
}

func (w *wrapCalls) errCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.errs
}

func (w *wrapCalls) count(op string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls[op]
}

func init() {
	register(
		// Catches a wrapper that drops an optional interface (a capability
		// silently lost) or adds one (a capability claimed but not
		// implemented), on the Conn or on the Tx, and one that breaks a
		// basic push and read.
		Case{Name: "ERR-3/wrapping-keeps-capabilities", Run: func(t T, h Harness) {
			ctx := t.Context()
			conn := openStore(t, h)
			rec := &wrapCalls{calls: map[string]int{}}
			wrapped := driver.WrapConn(conn, rec.hooks())
			expectEqual(t, "ERR-3: capabilities of the wrapped Conn (-driver's Conn +wrapper)",
				errSet(driver.ConnCapabilities(conn)), errSet(driver.ConnCapabilities(wrapped)))
			_, rawV := conn.(driver.EngineVersioner)
			_, wrapV := wrapped.(driver.EngineVersioner)
			expectEqual(t, "ERR-3: wrapper implements EngineVersioner like the driver's Conn", rawV, wrapV)

			rawTx := begin(t, conn, "p1")
			rawHalves := wrapTxHalves(rawTx)
			must(t, "Rollback", rawTx.Rollback(ctx))
			wrapTx := begin(t, wrapped, "p1")
			expectEqual(t, "ERR-3: Tx halves of the wrapped Conn's Tx (-driver's Tx +wrapper's)", rawHalves, wrapTxHalves(wrapTx))
			must(t, "Rollback", wrapTx.Rollback(ctx))

			// A push and reads through the wrapper behave as the driver does.
			row := todo("t1", "p7", "o1")
			must(t, "EnsureSchema through the wrapper", wrapped.EnsureSchema(ctx, TestSchema()))
			before, err := conn.MaxCommitSeq(ctx, "p1")
			must(t, "MaxCommitSeq", err)
			seq := push(t, wrapped, "p1", tTodos, row)
			expectEqual(t, "ERR-3: seq of a commit through the wrapper (max + 1)", before+1, seq)
			got, found, err := wrapped.GetRow(ctx, "p1", tTodos, "t1")
			must(t, "GetRow through the wrapper", err)
			expectEqual(t, "ROW-1: row read through the wrapper", true, found)
			expectEqual(t, "ROW-1: row read through the wrapper", row, got)
			direct, _, err := conn.GetRow(ctx, "p1", tTodos, "t1")
			must(t, "GetRow on the driver's Conn", err)
			expectEqual(t, "ROW-1: row read on the driver's Conn", row, direct)
			win, err := wrapped.ReadCommitWindow(ctx, "p1", driver.WindowQuery{Table: tTodos,
				Filter: driver.ScopeFilter{"project": {"p7"}}, ThroughSeq: seq, LimitChanges: 10})
			must(t, "ReadCommitWindow through the wrapper", err)
			expectEqual(t, "ERR-3: seqs read through the wrapper", []int64{seq}, seqs(win))
			_, _, err = wrapped.GetRow(ctx, "p1", "nope", "t1")
			expectCode(t, "SCH-8/ERR-1: an error through the wrapper keeps its code", err, driver.CodeUnknownTable)
			if rec.errCount() == 0 {
				t.Errorf("ERR-3: the wrapper's hooks did not see the GetRow error")
			}

			for _, op := range []string{"Conn.Begin", "Tx.UpsertRow", "Tx.AppendCommit", "Tx.Commit", "Conn.GetRow", "Conn.ReadCommitWindow"} {
				if rec.count(op) == 0 {
					t.Errorf("ERR-3: the wrapper's hooks did not see %s", op)
				}
			}
		}},
	)
}

// wrapTxHalves returns the capabilities whose Tx half tx implements.
func wrapTxHalves(tx driver.Tx) []string {
	var out []string
	for _, c := range driver.AllCapabilities {
		if c.HasTxHalf() && driver.TxHas(tx, c) {
			out = append(out, string(c))
		}
	}
	return out
}
