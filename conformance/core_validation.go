package conformance

import (
	"context"
	"errors"
	"strings"

	"github.com/syncstore/syncstore/driver"
	syncstore "github.com/syncstore/syncstore/sync"
)

// Rule group V: input validation, enforced once by sync before a driver
// is called (docs/contract.md V-1…V-10), and SCH-8 as sync checks it. Each case
// wraps the case's store in a sync.Store with TestSchema ensured and runs
// part of the catalog of bad calls (core_validation_calls.go), asserting
// the exact code; V-9 runs the whole catalog between two snapshots of the
// store, V-10 checks every message. The cases that valid edge input works
// end to end are in core_validation_edges.go.

func init() {
	register(
		// Catches: a sync that lets an empty, non-UTF-8, NUL-holding or
		// 256-byte partition reach the driver, or answers another code.
		Case{Name: "V-1/partition-bounds", Run: vdRuleCase("V-1", vdCallsV1)},
		// Catches: malformed row, client, commit, actor, subscription ids
		// or epochs passed through (or an empty epoch, REG-1).
		Case{Name: "V-2/id-bounds", Run: vdRuleCase("V-2", vdCallsV2)},
		// Catches: coerced or unchecked values (int for int64, NaN, nil
		// bytes, bad JSON, NULL in a non-nullable column), or an error
		// that does not name the column.
		Case{Name: "V-3/values-typed", Run: vdRuleCase("V-3", vdCallsV3)},
		// Catches: rows or changes whose id or scopes disagree with their
		// values, deletes carrying values, unknown ops.
		Case{Name: "V-4/row-id-and-scopes", Run: vdRuleCase("V-4", vdCallsV4)},
		// Catches: limits outside 1…10,000 (index lookups 1…1,000) or
		// negative sequences passed through.
		Case{Name: "V-5/limits", Run: vdRuleCase("V-5", vdCallsV5)},
		// Catches: an unscoped read turned into a full scan, or filter text
		// that is not valid passed through.
		Case{Name: "V-6/filter-requires-scope", Run: vdRuleCase("V-6", vdCallsV6)},
		// Catches: a server-command client id accepted by any client-id input.
		Case{Name: "V-7/remote-command-client-ids", Run: vdRuleCase("V-7", vdCallsV7)},
		// Catches: push results with an unknown status, a commitSeq that
		// contradicts it, malformed op codes, details or server rows.
		Case{Name: "V-8/push-result-validated", Run: vdRuleCase("V-8", vdCallsV8)},
		// Catches: any bad call that writes (rows, commits, results,
		// clients, horizon, registry), even one later committed.
		Case{Name: "V-9/bad-input-writes-nothing", Run: vdBadInputWritesNothing},
		// Catches: a message that quotes a row value, scope value or
		// partition name, or an error that is not a *driver.Error.
		Case{Name: "V-10/messages-hide-values", Run: vdMessagesHideValues},
		// Catches: a table outside the ensured schema passed to the driver.
		Case{Name: "SCH-8/sync-rejects-unknown-tables", Run: vdRuleCase("SCH-8", vdCallsSCH8)},
		// Catches: a Store that validates against a schema it never
		// ensured (or none at all), or forgets the one it ensured.
		Case{Name: "SCH-8/sync-store-without-schema", Run: vdStoreWithoutSchema},
	)
}

// vdStore returns the case's store and a sync.Store over it with
// TestSchema ensured.
func vdStore(t T, h Harness) (driver.Conn, *syncstore.Store) {
	t.Helper()
	conn := openStore(t, h)
	s := syncstore.OpenConn(conn)
	must(t, "setup: Store.EnsureSchema(TestSchema)", s.EnsureSchema(t.Context(), TestSchema()))
	return conn, s
}

// vdEnvOf reports which index-lookup halves conn declares.
func vdEnvOf(t T, conn driver.Conn) vdEnv {
	t.Helper()
	tx := begin(t, conn, vdP)
	env := vdEnv{ixl: driver.ConnHas(conn, driver.CapIndexLookup), ixlTx: driver.TxHas(tx, driver.CapIndexLookup)}
	must(t, "setup: Rollback", tx.Rollback(t.Context()))
	return env
}

// vdRun makes the Store calls of calls (with no Tx open, so a call that
// wrongly reached the driver cannot wait for the case's own Tx), then the
// Tx calls inside one Tx on vdP — those that would end the Tx last — and
// commits that Tx: after only rejected calls the commit writes nothing.
// check sees every call's error.
func vdRun(t T, s *syncstore.Store, calls []vdCall, check func(c vdCall, err error)) {
	t.Helper()
	ctx := t.Context()
	var inTx, finishing []vdCall
	for _, c := range calls {
		switch {
		case c.store != nil:
			check(c, c.store(ctx, s))
		case c.finishes:
			finishing = append(finishing, c)
		default:
			inTx = append(inTx, c)
		}
	}
	if len(inTx)+len(finishing) == 0 {
		return
	}
	tx, err := s.Begin(ctx, vdP)
	if err != nil {
		t.Fatalf("setup: Store.Begin: %v", err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	for _, c := range append(inTx, finishing...) {
		check(c, c.tx(ctx, tx))
	}
	if err := tx.Commit(ctx); err != nil {
		t.Errorf("V-9: Commit of a Tx whose every call was rejected: %v (a rejected call must leave the Tx usable)", err)
	}
}

// vdExpect checks a call's code and, for CodeInvalidValue, its column.
func vdExpect(t T, rule string, c vdCall, err error) {
	t.Helper()
	expectCode(t, rule+": "+c.name, err, c.code)
	if c.column == "" || driver.CodeOf(err) != c.code {
		return
	}
	var e *driver.Error
	if errors.As(err, &e) && e.Column != c.column {
		t.Errorf("%s: %s: error names column %q, want %q (%v)", rule, c.name, e.Column, c.column, err)
	}
}

// vdRuleCase runs calls and checks each code.
func vdRuleCase(rule string, calls func(vdEnv) []vdCall) func(t T, h Harness) {
	return func(t T, h Harness) {
		conn, s := vdStore(t, h)
		env := vdEnvOf(t, conn)
		vdRun(t, s, calls(env), func(c vdCall, err error) { vdExpect(t, rule, c, err) })
	}
}

// vdSeed writes one of everything into vdP through core operations.
func vdSeed(t T, conn driver.Conn) {
	t.Helper()
	ctx := t.Context()
	push(t, conn, vdP, tTodos, vdTodo(vdSecret+"-t1"))
	push(t, conn, vdP, tKinds, vdKinds(vdSecret+"-k1"))
	seq := push(t, conn, vdP, tUsers, user(vdSecret+"-u1", vdOrg, vdSecret+"@example.com"))
	tx := begin(t, conn, vdP)
	defer func() { _ = tx.Rollback(context.Background()) }()
	must(t, "setup: PutPushResult", tx.PutPushResult(ctx, vdClient, vdCommit, driver.PushResult{Status: driver.PushApplied,
		CommitSeq: seq, RecordedAtMs: 1000, CacheIdentity: "ci", Ops: []driver.OpResult{{Status: driver.OpApplied}}}))
	commit(t, tx)
	must(t, "setup: PutClientRecord", conn.PutClientRecord(ctx, vdP, vdRecord(vdClient)))
	must(t, "setup: SetHorizonSeq", conn.SetHorizonSeq(ctx, vdP, 1))
	_, err := conn.TouchPartition(ctx, vdP, 1000, "e1")
	must(t, "setup: TouchPartition", err)
}

// vdSnap is what core reads show of the store: the whole log and every
// row under the catalog's scope values, the rows, results and client
// records the catalog names, the horizon and the registry.
type vdSnap struct {
	MaxSeq     int64
	Horizon    int64
	Windows    map[string][]driver.Commit
	Scans      map[string][]driver.Row
	Rows       map[string]driver.Row
	Results    map[string]driver.PushResult
	Cursors    []driver.ClientCursor
	Client     driver.ClientRecord
	Registry   []driver.PartitionEntry
	Partitions []string
}

// vdSnapshot reads vdSnap through the driver.
func vdSnapshot(t T, conn driver.Conn) vdSnap {
	t.Helper()
	ctx := t.Context()
	var s vdSnap
	var err error
	s.MaxSeq, err = conn.MaxCommitSeq(ctx, vdP)
	must(t, "snapshot: MaxCommitSeq", err)
	s.Horizon, err = conn.HorizonSeq(ctx, vdP)
	must(t, "snapshot: HorizonSeq", err)
	s.Windows, s.Scans, s.Rows, s.Results = map[string][]driver.Commit{}, map[string][]driver.Row{}, map[string]driver.Row{}, map[string]driver.PushResult{}
	for _, table := range []string{tTodos, tKinds, tUsers} {
		q := vdWindow(table)
		q.AfterSeq, q.LimitChanges = s.Horizon, 10000 // from the horizon: below it is cursor_expired (HZ-4)
		s.Windows[table], err = conn.ReadCommitWindow(ctx, vdP, q)
		must(t, "snapshot: ReadCommitWindow", err)
		sq := vdScan(table)
		sq.Limit = 10000
		s.Scans[table], err = conn.ScanRows(ctx, vdP, sq)
		must(t, "snapshot: ScanRows", err)
		for _, id := range []string{vdRowID, vdSecret + "-x", vdSecret + "-t1", vdSecret + "-k1", vdSecret + "-u1"} {
			if r, ok, err := conn.GetRow(ctx, vdP, table, id); err != nil {
				t.Fatalf("snapshot: GetRow: %v", err)
			} else if ok {
				s.Rows[table+"/"+id] = r
			}
		}
	}
	for _, key := range []string{vdCommit, vdCommit + "-2"} {
		if r, ok, err := conn.GetPushResult(ctx, vdP, vdClient, key); err != nil {
			t.Fatalf("snapshot: GetPushResult: %v", err)
		} else if ok {
			s.Results[key] = r
		}
	}
	s.Cursors, err = conn.ListClientCursors(ctx, vdP, "", winAll)
	must(t, "snapshot: ListClientCursors", err)
	s.Client, _, err = conn.GetClientRecord(ctx, vdP, vdClient)
	must(t, "snapshot: GetClientRecord", err)
	s.Registry, err = conn.ListPartitionRegistry(ctx, "", 10000)
	must(t, "snapshot: ListPartitionRegistry", err)
	s.Partitions, err = conn.ListPartitions(ctx, "", 10000)
	must(t, "snapshot: ListPartitions", err)
	return s
}

func vdBadInputWritesNothing(t T, h Harness) {
	conn, s := vdStore(t, h)
	vdSeed(t, conn)
	env := vdEnvOf(t, conn)
	before := vdSnapshot(t, conn)
	if before.MaxSeq != 3 || len(before.Results) != 1 || len(before.Registry) != 1 {
		t.Fatalf("setup: seeded store reads max seq %d, %d results, %d registry entries; want 3, 1, 1",
			before.MaxSeq, len(before.Results), len(before.Registry))
	}
	vdRun(t, s, vdAllCalls(env), func(c vdCall, err error) {
		if err == nil {
			t.Errorf("V-9: %s accepted bad input", c.name)
		}
	})
	expectEqual(t, "V-9: store after every bad call (and a commit of the Tx they were made in)", before, vdSnapshot(t, conn))
}

func vdMessagesHideValues(t T, h Harness) {
	conn, s := vdStore(t, h)
	env := vdEnvOf(t, conn)
	vdRun(t, s, vdAllCalls(env), func(c vdCall, err error) {
		var e *driver.Error
		switch {
		case err == nil:
			t.Errorf("V-10: %s accepted bad input", c.name)
		case !errors.As(err, &e):
			t.Errorf("V-10 (ERR-1): %s returned %T, not a *driver.Error: %v", c.name, err, err)
		case strings.Contains(err.Error(), vdSecret):
			t.Errorf("V-10: %s: message contains a row value, scope value or partition name: %q", c.name, err.Error())
		}
	})
}

func vdStoreWithoutSchema(t T, h Harness) {
	ctx := t.Context()
	conn := openStore(t, h) // the driver has TestSchema; this Store has not ensured it
	push(t, conn, vdP, tTodos, vdTodo(vdRowID))
	s := syncstore.OpenConn(conn)
	if _, ok := s.Schema(); ok {
		t.Errorf("SCH-8: Store.Schema() of a new Store reports a schema")
	}
	_, _, err := s.GetRow(ctx, vdP, tTodos, vdRowID)
	expectCode(t, "SCH-8: Store.GetRow before Store.EnsureSchema", err, driver.CodeUnknownTable)
	_, err = s.ScanRows(ctx, vdP, vdScan(tTodos))
	expectCode(t, "SCH-8: Store.ScanRows before Store.EnsureSchema", err, driver.CodeUnknownTable)
	_, err = s.ReadCommitWindow(ctx, vdP, vdWindow(tTodos))
	expectCode(t, "SCH-8: Store.ReadCommitWindow before Store.EnsureSchema", err, driver.CodeUnknownTable)
	err = s.RunInTx(ctx, vdP, func(ctx context.Context, tx *syncstore.Tx) error {
		return tx.UpsertRow(ctx, tTodos, vdTodo(vdSecret+"-x"))
	})
	expectCode(t, "SCH-8: Tx.UpsertRow before Store.EnsureSchema", err, driver.CodeUnknownTable)

	must(t, "SCH-8: Store.EnsureSchema", s.EnsureSchema(ctx, TestSchema()))
	got, ok, err := s.GetRow(ctx, vdP, tTodos, vdRowID)
	must(t, "SCH-8: Store.GetRow after EnsureSchema", err)
	if !ok {
		t.Fatalf("SCH-8: Store.GetRow after EnsureSchema: row not found")
	}
	expectEqual(t, "SCH-8: row read through the Store", vdTodo(vdRowID), got)
	_, ok, err = s.GetRow(ctx, vdP, tTodos, vdSecret+"-x")
	must(t, "SCH-8: Store.GetRow of the rejected row", err)
	expectEqual(t, "SCH-8: the upsert rejected before EnsureSchema was not written", false, ok)
	if sc, ok := s.Schema(); !ok {
		t.Errorf("SCH-8: Store.Schema() after EnsureSchema reports none")
	} else {
		expectEqual(t, "SCH-8: Store.Schema()", TestSchema(), sc)
	}
}
