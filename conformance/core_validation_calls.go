package conformance

import (
	"context"
	"math"
	"strings"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// The catalog of bad calls of rule group V: every public Store and Tx
// method with input that breaks one rule, and the code sync must answer.
// Every call is otherwise valid and aimed at the case's partition, so a
// sync that let it through would write something the V-9 snapshot sees.
// Row values, scope values and partition names carry vdSecret, which no
// error message may contain (V-10).

// vdSecret marks every row value, scope value and partition name.
const vdSecret = "vd-secret"

// The names the catalog uses: a valid partition, client, commit and
// actor ids, scope values (all probed by vdSnapshot).
const (
	vdP        = vdSecret + "-partition"
	vdClient   = "vd-client"
	vdCommit   = "vd-commit"
	vdActor    = "vd-actor"
	vdRowID    = vdSecret + "-row"
	vdProject  = vdSecret + "-proj"
	vdOwner    = vdSecret + "-owner"
	vdGroup    = vdSecret + "-grp"
	vdOrg      = vdSecret + "-org"
	vdOther    = vdSecret + "-other"
	vdThrough  = int64(1) << 40
	vdRemoteID = `["remote-command","vd"]`
)

// vdLong returns an n-byte string of vdSecret repeats.
func vdLong(n int) string { return strings.Repeat(vdSecret+"/", n/10+1)[:n] }

// vdBad is one malformed string argument.
type vdBad struct{ name, s string }

// vdBadStrings break V-1/V-2: empty, invalid UTF-8, NUL, one byte too long.
func vdBadStrings(max int) []vdBad {
	return []vdBad{{"empty", ""}, {"invalid UTF-8", vdSecret + "\xff\xfe"}, {"NUL", vdSecret + "\x00x"},
		{"surrogate half", vdSecret + "\xed\xa0\x80"}, {"too long", vdLong(max + 1)}}
}

// vdCall is one bad call: a Store call, or a Tx call made inside one Tx on
// vdP. finishes marks a call that would end the Tx if sync let it
// through; those run last.
type vdCall struct {
	name     string
	code     driver.Code
	column   string // for CodeInvalidValue: the column the error must name ("" = unchecked)
	finishes bool
	store    func(ctx context.Context, s *syncstore.Store) error
	tx       func(ctx context.Context, tx *syncstore.Tx) error
}

func vdS(name string, code driver.Code, f func(ctx context.Context, s *syncstore.Store) error) vdCall {
	return vdCall{name: "Store." + name, code: code, store: f}
}

func vdT(name string, code driver.Code, f func(ctx context.Context, tx *syncstore.Tx) error) vdCall {
	return vdCall{name: "Tx." + name, code: code, tx: f}
}

func (c vdCall) col(column string) vdCall { c.column = column; return c }
func (c vdCall) last() vdCall             { c.finishes = true; return c }

// vdEnv says which optional halves the driver has, so capability calls
// are only made where they are validated rather than unsupported.
type vdEnv struct{ ixl, ixlTx bool }

// Valid building blocks.

func vdTodo(id string) driver.Row {
	r := todo(id, vdProject, vdOwner)
	r.Values["title"] = vdSecret + "-title"
	return r
}

func vdKinds(id string) driver.Row {
	return driver.Row{ID: id, ServerVersion: 1, Scopes: driver.Scopes{"grp": vdGroup}, Values: driver.Values{
		"id": id, "grp": vdGroup, "s": vdSecret + "-s", "i": int64(7), "f": 1.5, "b": true,
		"j": driver.JSON(`{"` + vdSecret + `":1}`), "x": []byte(vdSecret + "-x")}}
}

func vdScan(table string) driver.ScanQuery {
	return driver.ScanQuery{Table: table, Filter: vdFilter(table), Limit: 100}
}

func vdWindow(table string) driver.WindowQuery {
	return driver.WindowQuery{Table: table, Filter: vdFilter(table), ThroughSeq: vdThrough, LimitChanges: 100}
}

// vdFilter selects every scope value the catalog uses.
func vdFilter(table string) driver.ScopeFilter {
	vals := []string{vdProject, vdOwner, vdGroup, vdOrg, vdOther}
	switch table {
	case tKinds:
		return driver.ScopeFilter{"grp": vals}
	case tUsers:
		return driver.ScopeFilter{"org": vals}
	}
	return driver.ScopeFilter{"project": vals}
}

func vdRecord(clientID string) driver.ClientRecord {
	return driver.ClientRecord{ClientID: clientID, ActorID: vdActor, WireVersion: 1, Cursor: 3, UpdatedAtMs: 1000,
		Subscriptions: []driver.Subscription{{ID: "s1", Table: tTodos, Scopes: driver.ScopeFilter{"project": {vdProject}}}}}
}

func vdRejected() driver.PushResult {
	return driver.PushResult{Status: driver.PushRejected, RecordedAtMs: 1000, CacheIdentity: "ci",
		Ops: []driver.OpResult{{Status: driver.OpError, Code: "app.rejected", Message: "no"}}}
}

func vdCommitIn(changes ...driver.Change) driver.CommitInput {
	return driver.CommitInput{ClientID: vdClient, ClientCommitID: vdCommit + "-2", ActorID: vdActor, CreatedAtMs: 1, Changes: changes}
}

func vdIndexQ() driver.IndexQuery {
	return driver.IndexQuery{Table: tTodos, Index: "by_owner", Values: []any{vdOwner}, Limit: 10}
}

// vdCallsV1: every partition-taking Store method with a bad partition.
func vdCallsV1(env vdEnv) []vdCall {
	var out []vdCall
	inv := driver.CodeInvalidArgument
	for _, b := range vdBadStrings(255) {
		p, n := b.s, " partition "+b.name
		out = append(out,
			vdS("Begin"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				tx, err := s.Begin(ctx, p)
				if err == nil {
					_ = tx.Rollback(context.Background())
				}
				return err
			}),
			vdS("RunInTx"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				return s.RunInTx(ctx, p, func(ctx context.Context, tx *syncstore.Tx) error {
					_, err := tx.AppendCommit(ctx, vdCommitIn())
					return err
				})
			}),
			vdS("MaxCommitSeq"+n, inv, func(ctx context.Context, s *syncstore.Store) error { _, err := s.MaxCommitSeq(ctx, p); return err }),
			vdS("ReadCommitWindow"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				_, err := s.ReadCommitWindow(ctx, p, vdWindow(tTodos))
				return err
			}),
			vdS("CommitSeqBefore"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				_, err := s.CommitSeqBefore(ctx, p, 1)
				return err
			}),
			vdS("GetRow"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				_, _, err := s.GetRow(ctx, p, tTodos, vdRowID)
				return err
			}),
			vdS("ScanRows"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				_, err := s.ScanRows(ctx, p, vdScan(tTodos))
				return err
			}),
			vdS("GetPushResult"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				_, _, err := s.GetPushResult(ctx, p, vdClient, vdCommit)
				return err
			}),
			vdS("HorizonSeq"+n, inv, func(ctx context.Context, s *syncstore.Store) error { _, err := s.HorizonSeq(ctx, p); return err }),
			vdS("SetHorizonSeq"+n, inv, func(ctx context.Context, s *syncstore.Store) error { return s.SetHorizonSeq(ctx, p, 0) }),
			vdS("PruneCommitsThrough"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				_, err := s.PruneCommitsThrough(ctx, p, 0)
				return err
			}),
			vdS("GetClientRecord"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				_, _, err := s.GetClientRecord(ctx, p, vdClient)
				return err
			}),
			vdS("PutClientRecord"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				return s.PutClientRecord(ctx, p, vdRecord(vdClient))
			}),
			vdS("ListClientCursors"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				_, err := s.ListClientCursors(ctx, p, "", 10)
				return err
			}),
			vdS("TouchPartition"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				_, err := s.TouchPartition(ctx, p, 1, "e1")
				return err
			}),
			vdS("RotatePartitionLogEpoch"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				_, err := s.RotatePartitionLogEpoch(ctx, p, "e2", 1)
				return err
			}),
		)
		out = append(out, vdCallsRetentionV1(p, n)...)
		out = append(out, vdCallsReadsV1(p, n)...)
		if p != "" { // "" is a valid afterPartition: from the start
			out = append(out,
				vdS("ListPartitionRegistry afterPartition "+b.name, inv, func(ctx context.Context, s *syncstore.Store) error {
					_, err := s.ListPartitionRegistry(ctx, p, 10)
					return err
				}),
				vdS("ListPartitions afterPartition "+b.name, inv, func(ctx context.Context, s *syncstore.Store) error {
					_, err := s.ListPartitions(ctx, p, 10)
					return err
				}),
			)
		}
		if env.ixl {
			out = append(out, vdS("ScanRowsByIndex"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				_, err := s.ScanRowsByIndex(ctx, p, vdIndexQ())
				return err
			}))
		}
	}
	return out
}

// vdCallsV2: every id argument malformed (V-2), and the empty epoch (REG-1).
func vdCallsV2(vdEnv) []vdCall {
	var out []vdCall
	inv := driver.CodeInvalidArgument
	for _, b := range vdBadStrings(255) {
		id, n := b.s, " "+b.name
		row := vdTodo(vdRowID)
		row.ID, row.Values["id"] = id, id
		out = append(out, vdCallsReadsV2(id, n)...)
		rec := func(f func(r *driver.ClientRecord)) driver.ClientRecord { r := vdRecord(vdClient); f(&r); return r }
		if id != "" { // "" is a valid afterClientID: from the first
			out = append(out, vdS("ListClientCursors afterClientID"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				_, err := s.ListClientCursors(ctx, vdP, id, 10)
				return err
			}))
		}
		out = append(out,
			vdS("GetRow row id"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				_, _, err := s.GetRow(ctx, vdP, tTodos, id)
				return err
			}),
			vdS("GetPushResult client id"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				_, _, err := s.GetPushResult(ctx, vdP, id, vdCommit)
				return err
			}),
			vdS("GetPushResult client commit id"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				_, _, err := s.GetPushResult(ctx, vdP, vdClient, id)
				return err
			}),
			vdS("GetClientRecord client id"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				_, _, err := s.GetClientRecord(ctx, vdP, id)
				return err
			}),
			vdS("PutClientRecord client id"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				return s.PutClientRecord(ctx, vdP, rec(func(r *driver.ClientRecord) { r.ClientID = id }))
			}),
			vdS("PutClientRecord actor id"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				return s.PutClientRecord(ctx, vdP, rec(func(r *driver.ClientRecord) { r.ActorID = id }))
			}),
			vdS("PutClientRecord subscription id"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				return s.PutClientRecord(ctx, vdP, rec(func(r *driver.ClientRecord) { r.Subscriptions[0].ID = id }))
			}),
			vdS("TouchPartition epoch"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				_, err := s.TouchPartition(ctx, vdP, 5, id)
				return err
			}),
			vdS("RotatePartitionLogEpoch epoch"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
				_, err := s.RotatePartitionLogEpoch(ctx, vdP, id, 5)
				return err
			}),
			vdT("GetRow row id"+n, inv, func(ctx context.Context, tx *syncstore.Tx) error { _, _, err := tx.GetRow(ctx, tTodos, id); return err }),
			vdT("DeleteRow row id"+n, inv, func(ctx context.Context, tx *syncstore.Tx) error { return tx.DeleteRow(ctx, tTodos, id) }),
			vdT("UpsertRow row id"+n, inv, func(ctx context.Context, tx *syncstore.Tx) error { return tx.UpsertRow(ctx, tTodos, row) }),
			vdT("GetPushResult client id"+n, inv, func(ctx context.Context, tx *syncstore.Tx) error {
				_, _, err := tx.GetPushResult(ctx, id, vdCommit)
				return err
			}),
			vdT("GetPushResult client commit id"+n, inv, func(ctx context.Context, tx *syncstore.Tx) error {
				_, _, err := tx.GetPushResult(ctx, vdClient, id)
				return err
			}),
			vdT("PutPushResult client id"+n, inv, func(ctx context.Context, tx *syncstore.Tx) error {
				return tx.PutPushResult(ctx, id, vdCommit, vdRejected())
			}),
			vdT("PutPushResult client commit id"+n, inv, func(ctx context.Context, tx *syncstore.Tx) error {
				return tx.PutPushResult(ctx, vdClient, id, vdRejected())
			}),
			vdT("AppendCommit change row id"+n, inv, func(ctx context.Context, tx *syncstore.Tx) error {
				_, err := tx.AppendCommit(ctx, vdCommitIn(deleteChange(tTodos, row)))
				return err
			}),
			vdT("CommitRejected client id"+n, inv, func(ctx context.Context, tx *syncstore.Tx) error {
				return tx.CommitRejected(ctx, id, vdCommit, vdRejected())
			}).last(),
			vdT("CommitRejected client commit id"+n, inv, func(ctx context.Context, tx *syncstore.Tx) error {
				return tx.CommitRejected(ctx, vdClient, id, vdRejected())
			}).last(),
		)
		if id != "" { // "" is allowed: a commit made by the server, a scan from the start
			out = append(out,
				vdS("ScanRows afterRowID"+n, inv, func(ctx context.Context, s *syncstore.Store) error {
					q := vdScan(tTodos)
					q.AfterRowID = id
					_, err := s.ScanRows(ctx, vdP, q)
					return err
				}),
				vdT("AppendCommit client id"+n, inv, func(ctx context.Context, tx *syncstore.Tx) error {
					c := vdCommitIn()
					c.ClientID = id
					_, err := tx.AppendCommit(ctx, c)
					return err
				}),
				vdT("AppendCommit client commit id"+n, inv, func(ctx context.Context, tx *syncstore.Tx) error {
					c := vdCommitIn()
					c.ClientCommitID = id
					_, err := tx.AppendCommit(ctx, c)
					return err
				}),
				vdT("AppendCommit actor id"+n, inv, func(ctx context.Context, tx *syncstore.Tx) error {
					c := vdCommitIn()
					c.ActorID = id
					_, err := tx.AppendCommit(ctx, c)
					return err
				}),
			)
		}
	}
	return out
}

// vdBadValue is one value that breaks V-3 in column col of table.
type vdBadValue struct {
	name, table, col string
	v                any
}

// vdBadValues: a wrong Go type, non-finite floats, bad text, bad JSON,
// nil bytes, NULL in a non-nullable column.
func vdBadValues() []vdBadValue {
	type myString string
	return []vdBadValue{
		{"string as int64", tKinds, "s", int64(1)},
		{"string invalid UTF-8", tKinds, "s", vdSecret + "\xff"},
		{"string with NUL", tKinds, "s", vdSecret + "\x00"},
		{"string as JSON", tKinds, "s", driver.JSON(`"` + vdSecret + `"`)},
		{"string named type", tKinds, "s", myString(vdSecret)},
		{"integer as int", tKinds, "i", 7},
		{"integer as int32", tKinds, "i", int32(7)},
		{"integer as uint64", tKinds, "i", uint64(7)},
		{"integer as float64", tKinds, "i", 7.0},
		{"integer as string", tKinds, "i", "7"},
		{"float NaN", tKinds, "f", math.NaN()},
		{"float +Inf", tKinds, "f", math.Inf(1)},
		{"float -Inf", tKinds, "f", math.Inf(-1)},
		{"float as float32", tKinds, "f", float32(1.5)},
		{"float as int64", tKinds, "f", int64(1)},
		{"boolean as string", tKinds, "b", "true"},
		{"boolean as int64", tKinds, "b", int64(1)},
		{"json invalid", tKinds, "j", driver.JSON(`{"` + vdSecret + `":`)},
		{"json empty", tKinds, "j", driver.JSON("")},
		{"json trailing text", tKinds, "j", driver.JSON(`{} ` + vdSecret)},
		{"json invalid UTF-8", tKinds, "j", driver.JSON(`"` + vdSecret + "\xff\"")},
		{"json as string", tKinds, "j", `{"` + vdSecret + `":1}`},
		{"bytes nil", tKinds, "x", []byte(nil)},
		{"bytes as string", tKinds, "x", vdSecret},
		{"bytes as JSON", tKinds, "x", driver.JSON(`"x"`)},
		{"NULL in non-nullable string", tTodos, "title", nil},
		{"NULL in non-nullable boolean", tTodos, "done", nil},
		{"NULL in non-nullable integer", tTodos, "updated_at", nil},
	}
}

// vdRowFor returns a valid row of table.
func vdRowFor(table, id string) driver.Row {
	if table == tKinds {
		return vdKinds(id)
	}
	return vdTodo(id)
}

// vdCallsV3: every bad value through UpsertRow and an upsert change, and
// missing and unknown columns.
func vdCallsV3(vdEnv) []vdCall {
	var out []vdCall
	iv := driver.CodeInvalidValue
	add := func(name, table, column string, row driver.Row) {
		out = append(out,
			vdT("UpsertRow "+name, iv, func(ctx context.Context, tx *syncstore.Tx) error { return tx.UpsertRow(ctx, table, row) }).col(column),
			vdT("AppendCommit upsert change "+name, iv, func(ctx context.Context, tx *syncstore.Tx) error {
				_, err := tx.AppendCommit(ctx, vdCommitIn(upsertChange(table, row)))
				return err
			}).col(column),
		)
	}
	for _, b := range vdBadValues() {
		row := vdRowFor(b.table, vdRowID)
		row.Values[b.col] = b.v
		add(b.name, b.table, b.col, row)
	}
	missing := vdKinds(vdRowID)
	delete(missing.Values, "j")
	add("missing column", tKinds, "j", missing)
	unknown := vdTodo(vdRowID)
	unknown.Values["zz_extra"] = vdSecret
	add("unknown column", tTodos, "zz_extra", unknown)
	noValues := vdTodo(vdRowID)
	noValues.Values = nil
	add("nil values", tTodos, "", noValues)
	return out
}

// vdCallsV4: row ids and scopes that disagree with the values, and
// malformed changes.
func vdCallsV4(vdEnv) []vdCall {
	var out []vdCall
	iv, inv := driver.CodeInvalidValue, driver.CodeInvalidArgument
	row := func(f func(r *driver.Row)) driver.Row { r := vdTodo(vdRowID); f(&r); return r }
	rows := []struct {
		name, column string
		row          driver.Row
	}{
		{"row id differs from primary key", "id", row(func(r *driver.Row) { r.ID = vdSecret + "-x" })},
		{"scope value differs", "project_id", row(func(r *driver.Row) { r.Scopes["project"] = vdOther })},
		{"scope variable missing", "owner_id", row(func(r *driver.Row) { delete(r.Scopes, "owner") })},
		{"scopes nil", "", row(func(r *driver.Row) { r.Scopes = nil })},
		{"extra scope variable", "", row(func(r *driver.Row) { r.Scopes["org"] = vdOrg })},
	}
	for _, r := range rows {
		out = append(out,
			vdT("UpsertRow "+r.name, iv, func(ctx context.Context, tx *syncstore.Tx) error { return tx.UpsertRow(ctx, tTodos, r.row) }).col(r.column),
			vdT("AppendCommit upsert change "+r.name, iv, func(ctx context.Context, tx *syncstore.Tx) error {
				_, err := tx.AppendCommit(ctx, vdCommitIn(upsertChange(tTodos, r.row)))
				return err
			}).col(r.column),
		)
	}
	good := vdTodo(vdRowID)
	change := func(f func(c *driver.Change)) driver.Change {
		c := deleteChange(tTodos, good)
		c.Scopes = driver.Scopes{"project": vdProject, "owner": vdOwner}
		f(&c)
		return c
	}
	changes := []struct {
		name string
		code driver.Code
		c    driver.Change
	}{
		{"unknown op", inv, change(func(c *driver.Change) { c.Op = "insert" })},
		{"empty op", inv, change(func(c *driver.Change) { c.Op = "" })},
		{"delete with values", inv, change(func(c *driver.Change) { c.Values = vdTodo(vdRowID).Values })},
		{"delete with row version", inv, change(func(c *driver.Change) { c.RowVersion = 3 })},
		{"delete missing a scope", iv, change(func(c *driver.Change) { delete(c.Scopes, "owner") })},
		{"delete with an extra scope", iv, change(func(c *driver.Change) { c.Scopes["grp"] = vdGroup })},
		{"delete scope with NUL", iv, change(func(c *driver.Change) { c.Scopes["owner"] = vdSecret + "\x00" })},
		{"upsert row id differs", iv, func() driver.Change { c := upsertChange(tTodos, good); c.RowID = vdSecret + "-x"; return c }()},
	}
	for _, c := range changes {
		out = append(out, vdT("AppendCommit "+c.name, c.code, func(ctx context.Context, tx *syncstore.Tx) error {
			// A valid change first: the bad one must fail the whole call.
			_, err := tx.AppendCommit(ctx, vdCommitIn(upsertChange(tTodos, good), c.c))
			return err
		}))
	}
	return out
}
