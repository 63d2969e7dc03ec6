package conformance

import (
	"context"
	"math"
	"strings"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// The catalog of bad calls, continued (see core_validation_calls.go):
// limits, filters, reserved client ids, push results, unknown tables.

// vdCallsV5: limits outside their bounds, negative sequences.
func vdCallsV5(env vdEnv) []vdCall {
	var out []vdCall
	lim, inv := driver.CodeInvalidLimit, driver.CodeInvalidArgument
	for _, n := range []int{0, -1, 10001, math.MinInt} {
		out = append(out,
			vdS("ScanRows limit", lim, func(ctx context.Context, s *syncstore.Store) error {
				q := vdScan(tTodos)
				q.Limit = n
				_, err := s.ScanRows(ctx, vdP, q)
				return err
			}),
			vdT("ScanRows limit", lim, func(ctx context.Context, tx *syncstore.Tx) error {
				q := vdScan(tTodos)
				q.Limit = n
				_, err := tx.ScanRows(ctx, q)
				return err
			}),
			vdS("ReadCommitWindow limitChanges", lim, func(ctx context.Context, s *syncstore.Store) error {
				q := vdWindow(tTodos)
				q.LimitChanges = n
				_, err := s.ReadCommitWindow(ctx, vdP, q)
				return err
			}),
			vdS("ListPartitionRegistry limit", lim, func(ctx context.Context, s *syncstore.Store) error {
				_, err := s.ListPartitionRegistry(ctx, "", n)
				return err
			}),
			vdS("ListPartitions limit", lim, func(ctx context.Context, s *syncstore.Store) error {
				_, err := s.ListPartitions(ctx, "", n)
				return err
			}),
			vdS("ListClientCursors limit", lim, func(ctx context.Context, s *syncstore.Store) error {
				_, err := s.ListClientCursors(ctx, vdP, "", n)
				return err
			}),
		)
		out = append(out, vdCallsRetentionV5(n)...)
		out = append(out, vdCallsReadsV5(n)...)
	}
	for _, n := range []int{0, 1001} {
		if env.ixl {
			out = append(out, vdS("ScanRowsByIndex limit", lim, func(ctx context.Context, s *syncstore.Store) error {
				q := vdIndexQ()
				q.Limit = n
				_, err := s.ScanRowsByIndex(ctx, vdP, q)
				return err
			}))
		}
		if env.ixlTx {
			out = append(out, vdT("ScanRowsByIndex limit", lim, func(ctx context.Context, tx *syncstore.Tx) error {
				q := vdIndexQ()
				q.Limit = n
				_, err := tx.ScanRowsByIndex(ctx, q)
				return err
			}))
		}
	}
	window := func(name string, after, through int64) vdCall {
		return vdS("ReadCommitWindow "+name, inv, func(ctx context.Context, s *syncstore.Store) error {
			q := vdWindow(tTodos)
			q.AfterSeq, q.ThroughSeq = after, through
			_, err := s.ReadCommitWindow(ctx, vdP, q)
			return err
		})
	}
	return append(out,
		window("afterSeq -1", -1, 5),
		window("throughSeq below afterSeq", 3, 2),
		window("throughSeq negative", 0, -1),
		vdS("SetHorizonSeq -1", inv, func(ctx context.Context, s *syncstore.Store) error { return s.SetHorizonSeq(ctx, vdP, -1) }),
		vdS("PruneCommitsThrough -1", inv, func(ctx context.Context, s *syncstore.Store) error {
			_, err := s.PruneCommitsThrough(ctx, vdP, -1)
			return err
		}),
	)
}

// vdCallsV6: filters without keys, and keys or values that are not text.
func vdCallsV6(vdEnv) []vdCall {
	var out []vdCall
	for _, f := range []struct {
		name string
		code driver.Code
		f    driver.ScopeFilter
	}{
		{"nil filter", driver.CodeScanRequiresScope, nil},
		{"filter with no keys", driver.CodeScanRequiresScope, driver.ScopeFilter{}},
		{"filter value with NUL", driver.CodeInvalidArgument, driver.ScopeFilter{"project": {vdProject, vdSecret + "\x00"}}},
		{"filter value invalid UTF-8", driver.CodeInvalidArgument, driver.ScopeFilter{"project": {vdSecret + "\xff"}}},
		{"empty filter key", driver.CodeInvalidArgument, driver.ScopeFilter{"": {vdProject}}},
	} {
		out = append(out,
			vdS("ScanRows "+f.name, f.code, func(ctx context.Context, s *syncstore.Store) error {
				_, err := s.ScanRows(ctx, vdP, driver.ScanQuery{Table: tTodos, Filter: f.f, Limit: 10})
				return err
			}),
			vdT("ScanRows "+f.name, f.code, func(ctx context.Context, tx *syncstore.Tx) error {
				_, err := tx.ScanRows(ctx, driver.ScanQuery{Table: tTodos, Filter: f.f, Limit: 10})
				return err
			}),
			vdS("ReadCommitWindow "+f.name, f.code, func(ctx context.Context, s *syncstore.Store) error {
				_, err := s.ReadCommitWindow(ctx, vdP, driver.WindowQuery{Table: tTodos, Filter: f.f, ThroughSeq: vdThrough, LimitChanges: 10})
				return err
			}),
		)
	}
	return out
}

// vdCallsV7: the reserved server-command prefix in every client-id input.
func vdCallsV7(vdEnv) []vdCall {
	cid := driver.CodeInvalidClientID
	return append(vdCallsReadsV7(),
		vdS("PutClientRecord", cid, func(ctx context.Context, s *syncstore.Store) error {
			return s.PutClientRecord(ctx, vdP, vdRecord(vdRemoteID))
		}),
		vdS("GetClientRecord", cid, func(ctx context.Context, s *syncstore.Store) error {
			_, _, err := s.GetClientRecord(ctx, vdP, vdRemoteID)
			return err
		}),
		vdS("ListClientCursors afterClientID", cid, func(ctx context.Context, s *syncstore.Store) error {
			_, err := s.ListClientCursors(ctx, vdP, vdRemoteID, 10)
			return err
		}),
		vdS("GetPushResult", cid, func(ctx context.Context, s *syncstore.Store) error {
			_, _, err := s.GetPushResult(ctx, vdP, vdRemoteID, vdCommit)
			return err
		}),
		vdT("GetPushResult", cid, func(ctx context.Context, tx *syncstore.Tx) error {
			_, _, err := tx.GetPushResult(ctx, vdRemoteID, vdCommit)
			return err
		}),
		vdT("PutPushResult", cid, func(ctx context.Context, tx *syncstore.Tx) error {
			return tx.PutPushResult(ctx, vdRemoteID, vdCommit, vdRejected())
		}),
		vdT("AppendCommit client id", cid, func(ctx context.Context, tx *syncstore.Tx) error {
			c := vdCommitIn()
			c.ClientID = vdRemoteID
			_, err := tx.AppendCommit(ctx, c)
			return err
		}),
		vdT("AppendCommit client id of the bare prefix", cid, func(ctx context.Context, tx *syncstore.Tx) error {
			c := vdCommitIn()
			c.ClientID = `["remote-command",`
			_, err := tx.AppendCommit(ctx, c)
			return err
		}),
		vdT("CommitRejected", cid, func(ctx context.Context, tx *syncstore.Tx) error {
			return tx.CommitRejected(ctx, vdRemoteID, vdCommit, vdRejected())
		}).last(),
	)
}

// vdCallsV8: push results that break V-8, through PutPushResult and
// CommitRejected.
func vdCallsV8(vdEnv) []vdCall {
	inv, iv := driver.CodeInvalidArgument, driver.CodeInvalidValue
	op := func(o driver.OpResult) driver.PushResult {
		r := vdRejected()
		r.Ops = append(r.Ops, o)
		return r
	}
	results := []struct {
		name   string
		code   driver.Code
		column string
		r      driver.PushResult
	}{
		{"empty status", inv, "", driver.PushResult{RecordedAtMs: 1}},
		{"unknown status", inv, "", driver.PushResult{Status: "done", CommitSeq: 1}},
		{"applied without commitSeq", inv, "", driver.PushResult{Status: driver.PushApplied}},
		{"rejected with commitSeq", inv, "", driver.PushResult{Status: driver.PushRejected, CommitSeq: 4}},
		{"unknown op status", inv, "", op(driver.OpResult{Status: "skipped"})},
		{"op code starting with a digit", inv, "", op(driver.OpResult{Status: driver.OpError, Code: "9lives"})},
		{"op code with a space", inv, "", op(driver.OpResult{Status: driver.OpError, Code: "bad code"})},
		{"op code with a slash", inv, "", op(driver.OpResult{Status: driver.OpError, Code: "app/bad"})},
		{"op code of 129 bytes", inv, "", op(driver.OpResult{Status: driver.OpError, Code: "a" + strings.Repeat("b", 128)})},
		{"op details not JSON", inv, "", op(driver.OpResult{Status: driver.OpError, Code: "app.x", Details: driver.JSON(`{"` + vdSecret)})},
		{"server row NaN", iv, "f", op(driver.OpResult{Status: driver.OpConflict, Code: "app.x", ServerRow: driver.Values{"f": math.NaN()}})},
		{"server row int", iv, "i", op(driver.OpResult{Status: driver.OpConflict, Code: "app.x", ServerRow: driver.Values{"i": 1}})},
		{"server row nil bytes", iv, "x", op(driver.OpResult{Status: driver.OpConflict, Code: "app.x", ServerRow: driver.Values{"x": []byte(nil)}})},
	}
	var out []vdCall
	for _, r := range results {
		out = append(out,
			vdT("PutPushResult "+r.name, r.code, func(ctx context.Context, tx *syncstore.Tx) error {
				return tx.PutPushResult(ctx, vdClient, vdCommit+"-2", r.r)
			}).col(r.column),
			vdT("CommitRejected "+r.name, r.code, func(ctx context.Context, tx *syncstore.Tx) error {
				return tx.CommitRejected(ctx, vdClient, vdCommit+"-2", r.r)
			}).col(r.column).last(),
		)
	}
	return append(out, vdT("CommitRejected with an applied result", inv, func(ctx context.Context, tx *syncstore.Tx) error {
		return tx.CommitRejected(ctx, vdClient, vdCommit+"-2", driver.PushResult{Status: driver.PushApplied, CommitSeq: 1})
	}).last())
}

// vdCallsSCH8: tables outside the ensured schema, on every table-taking
// method; and an invalid schema (SCH-2), which must change nothing.
func vdCallsSCH8(env vdEnv) []vdCall {
	ut := driver.CodeUnknownTable
	const nope = "nope"
	bad := vdTodo(vdRowID)
	out := []vdCall{
		vdS("GetRow", ut, func(ctx context.Context, s *syncstore.Store) error {
			_, _, err := s.GetRow(ctx, vdP, nope, vdRowID)
			return err
		}),
		vdS("ScanRows", ut, func(ctx context.Context, s *syncstore.Store) error {
			_, err := s.ScanRows(ctx, vdP, driver.ScanQuery{Table: nope, Filter: vdFilter(tTodos), Limit: 10})
			return err
		}),
		vdS("ReadCommitWindow", ut, func(ctx context.Context, s *syncstore.Store) error {
			q := vdWindow(tTodos)
			q.Table = nope
			_, err := s.ReadCommitWindow(ctx, vdP, q)
			return err
		}),
		vdS("PutClientRecord subscription table", ut, func(ctx context.Context, s *syncstore.Store) error {
			r := vdRecord(vdClient)
			r.Subscriptions[0].Table = nope
			return s.PutClientRecord(ctx, vdP, r)
		}),
		vdS("EnsureSchema invalid (SCH-2)", driver.CodeSchemaInvalid, func(ctx context.Context, s *syncstore.Store) error {
			sc := TestSchema()
			sc.Version = 2
			sc.Tables = append(sc.Tables, driver.Table{Name: "sync_extra", Columns: []driver.Column{{Name: "id", Type: driver.TypeString}},
				PrimaryKey: "id", Scopes: []driver.Scope{{Variable: "v", Column: "id"}}})
			return s.EnsureSchema(ctx, sc)
		}),
		vdT("GetRow", ut, func(ctx context.Context, tx *syncstore.Tx) error {
			_, _, err := tx.GetRow(ctx, nope, vdRowID)
			return err
		}),
		vdT("ScanRows", ut, func(ctx context.Context, tx *syncstore.Tx) error {
			_, err := tx.ScanRows(ctx, driver.ScanQuery{Table: nope, Filter: vdFilter(tTodos), Limit: 10})
			return err
		}),
		vdT("UpsertRow", ut, func(ctx context.Context, tx *syncstore.Tx) error { return tx.UpsertRow(ctx, nope, bad) }),
		vdT("DeleteRow", ut, func(ctx context.Context, tx *syncstore.Tx) error { return tx.DeleteRow(ctx, nope, vdRowID) }),
		vdT("AppendCommit change table", ut, func(ctx context.Context, tx *syncstore.Tx) error {
			_, err := tx.AppendCommit(ctx, vdCommitIn(upsertChange(tTodos, bad), upsertChange(nope, bad)))
			return err
		}),
	}
	if env.ixl {
		out = append(out, vdS("ScanRowsByIndex", ut, func(ctx context.Context, s *syncstore.Store) error {
			q := vdIndexQ()
			q.Table = nope
			_, err := s.ScanRowsByIndex(ctx, vdP, q)
			return err
		}))
	}
	if env.ixlTx {
		out = append(out, vdT("ScanRowsByIndex", ut, func(ctx context.Context, tx *syncstore.Tx) error {
			q := vdIndexQ()
			q.Table = nope
			_, err := tx.ScanRowsByIndex(ctx, q)
			return err
		}))
	}
	return out
}

// vdAllCalls is the whole catalog.
func vdAllCalls(env vdEnv) []vdCall {
	var out []vdCall
	for _, f := range []func(vdEnv) []vdCall{vdCallsV1, vdCallsV2, vdCallsV3, vdCallsV4, vdCallsV5, vdCallsV6, vdCallsV7, vdCallsV8, vdCallsSCH8} {
		out = append(out, f(env)...)
	}
	return out
}
