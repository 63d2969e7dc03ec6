package driver

import (
	"context"
	"fmt"
	gosync "sync"
	"testing"
)

// The optional interfaces in the bit order of wrap_gen.go. implementsConn
// and implementsTx check them with explicit type assertions, independent
// of the generator.
var (
	connIfaces = []string{"ReactionsConn", "AuthoritativeQueryConn", "IndexLookupConn", "BlobRefsConn",
		"AdminConn", "CommitFanoutConn", "EngineVersioner"}
	txIfaces = []string{"ReactionsTx", "IndexLookupTx", "BlobRefsTx"}
)

func implementsConn(x any, iface string) bool {
	var ok bool
	switch iface {
	case "ReactionsConn":
		_, ok = x.(ReactionsConn)
	case "AuthoritativeQueryConn":
		_, ok = x.(AuthoritativeQueryConn)
	case "IndexLookupConn":
		_, ok = x.(IndexLookupConn)
	case "BlobRefsConn":
		_, ok = x.(BlobRefsConn)
	case "AdminConn":
		_, ok = x.(AdminConn)
	case "CommitFanoutConn":
		_, ok = x.(CommitFanoutConn)
	case "EngineVersioner":
		_, ok = x.(EngineVersioner)
	default:
		panic("unknown interface " + iface)
	}
	return ok
}

func implementsTx(x any, iface string) bool {
	var ok bool
	switch iface {
	case "ReactionsTx":
		_, ok = x.(ReactionsTx)
	case "IndexLookupTx":
		_, ok = x.(IndexLookupTx)
	case "BlobRefsTx":
		_, ok = x.(BlobRefsTx)
	default:
		panic("unknown interface " + iface)
	}
	return ok
}

// method is one method of an interface, called through x with ctx.
type method struct {
	iface string // "Conn", "Tx" or an optional interface
	op    string
	part  bool // the call names partition "part-7"
	noCtx bool // Close: the method takes no context
	call  func(ctx context.Context, x any) error
}

const part = "part-7"

var connMethods = []method{
	{"Conn", "Conn.EnsureSchema", false, false, func(ctx context.Context, x any) error { return x.(Conn).EnsureSchema(ctx, Schema{}) }},
	{"Conn", "Conn.MaxCommitSeq", true, false, func(ctx context.Context, x any) error { _, err := x.(Conn).MaxCommitSeq(ctx, part); return err }},
	{"Conn", "Conn.ReadCommitWindow", true, false, func(ctx context.Context, x any) error {
		_, err := x.(Conn).ReadCommitWindow(ctx, part, WindowQuery{})
		return err
	}},
	{"Conn", "Conn.CommitSeqBefore", true, false, func(ctx context.Context, x any) error { _, err := x.(Conn).CommitSeqBefore(ctx, part, 1); return err }},
	{"Conn", "Conn.GetRow", true, false, func(ctx context.Context, x any) error { _, _, err := x.(Conn).GetRow(ctx, part, "t", "r"); return err }},
	{"Conn", "Conn.ScanRows", true, false, func(ctx context.Context, x any) error {
		_, err := x.(Conn).ScanRows(ctx, part, ScanQuery{})
		return err
	}},
	{"Conn", "Conn.GetPushResult", true, false, func(ctx context.Context, x any) error {
		_, _, err := x.(Conn).GetPushResult(ctx, part, "c", "k")
		return err
	}},
	{"Conn", "Conn.HorizonSeq", true, false, func(ctx context.Context, x any) error { _, err := x.(Conn).HorizonSeq(ctx, part); return err }},
	{"Conn", "Conn.SetHorizonSeq", true, false, func(ctx context.Context, x any) error { return x.(Conn).SetHorizonSeq(ctx, part, 1) }},
	{"Conn", "Conn.PruneCommitsThrough", true, false, func(ctx context.Context, x any) error {
		_, err := x.(Conn).PruneCommitsThrough(ctx, part, 1)
		return err
	}},
	{"Conn", "Conn.DeletePushResultsBefore", true, false, func(ctx context.Context, x any) error {
		_, err := x.(Conn).DeletePushResultsBefore(ctx, part, 1, 1)
		return err
	}},
	{"Conn", "Conn.DeleteClientRecordsBefore", true, false, func(ctx context.Context, x any) error {
		_, err := x.(Conn).DeleteClientRecordsBefore(ctx, part, 1, 1)
		return err
	}},
	{"Conn", "Conn.MinClientCursor", true, false, func(ctx context.Context, x any) error {
		_, _, err := x.(Conn).MinClientCursor(ctx, part, 1, 0)
		return err
	}},
	{"Conn", "Conn.GetClientRecord", true, false, func(ctx context.Context, x any) error {
		_, _, err := x.(Conn).GetClientRecord(ctx, part, "c")
		return err
	}},
	{"Conn", "Conn.PutClientRecord", true, false, func(ctx context.Context, x any) error {
		return x.(Conn).PutClientRecord(ctx, part, ClientRecord{})
	}},
	{"Conn", "Conn.ListClientCursors", true, false, func(ctx context.Context, x any) error {
		_, err := x.(Conn).ListClientCursors(ctx, part, "", 1)
		return err
	}},
	{"Conn", "Conn.TouchPartition", true, false, func(ctx context.Context, x any) error {
		_, err := x.(Conn).TouchPartition(ctx, part, 1, "e")
		return err
	}},
	{"Conn", "Conn.RotatePartitionLogEpoch", true, false, func(ctx context.Context, x any) error {
		_, err := x.(Conn).RotatePartitionLogEpoch(ctx, part, "e", 1)
		return err
	}},
	{"Conn", "Conn.ListPartitionRegistry", false, false, func(ctx context.Context, x any) error {
		_, err := x.(Conn).ListPartitionRegistry(ctx, "", 1)
		return err
	}},
	{"Conn", "Conn.ListPartitions", false, false, func(ctx context.Context, x any) error { _, err := x.(Conn).ListPartitions(ctx, "", 1); return err }},
	{"Conn", "Conn.Close", false, true, func(_ context.Context, x any) error { return x.(Conn).Close() }},

	{"ReactionsConn", "ReactionsConn.ClaimReactions", true, false, func(ctx context.Context, x any) error {
		_, err := x.(ReactionsConn).ClaimReactions(ctx, part, ClaimRequest{})
		return err
	}},
	{"ReactionsConn", "ReactionsConn.CompleteReaction", true, false, func(ctx context.Context, x any) error {
		_, err := x.(ReactionsConn).CompleteReaction(ctx, part, "k", "o", 1)
		return err
	}},
	{"ReactionsConn", "ReactionsConn.ExtendReactionLease", true, false, func(ctx context.Context, x any) error {
		_, err := x.(ReactionsConn).ExtendReactionLease(ctx, part, "k", "o", 1, 2)
		return err
	}},
	{"ReactionsConn", "ReactionsConn.FailReaction", true, false, func(ctx context.Context, x any) error {
		_, err := x.(ReactionsConn).FailReaction(ctx, part, "k", "o", FailRequest{})
		return err
	}},
	{"ReactionsConn", "ReactionsConn.RetryReaction", true, false, func(ctx context.Context, x any) error {
		_, err := x.(ReactionsConn).RetryReaction(ctx, part, "k", 1)
		return err
	}},
	{"ReactionsConn", "ReactionsConn.GetReaction", true, false, func(ctx context.Context, x any) error {
		_, _, err := x.(ReactionsConn).GetReaction(ctx, part, "k")
		return err
	}},
	{"ReactionsConn", "ReactionsConn.ListReactions", true, false, func(ctx context.Context, x any) error {
		_, err := x.(ReactionsConn).ListReactions(ctx, part, ReactionListQuery{})
		return err
	}},
	{"ReactionsConn", "ReactionsConn.PruneReactions", true, false, func(ctx context.Context, x any) error {
		_, err := x.(ReactionsConn).PruneReactions(ctx, part, ReactionPruneRequest{})
		return err
	}},
	{"AuthoritativeQueryConn", "AuthoritativeQueryConn.AuthoritativeQuery", true, false, func(ctx context.Context, x any) error {
		_, err := x.(AuthoritativeQueryConn).AuthoritativeQuery(ctx, part, Query{})
		return err
	}},
	{"IndexLookupConn", "IndexLookupConn.ScanRowsByIndex", true, false, func(ctx context.Context, x any) error {
		_, err := x.(IndexLookupConn).ScanRowsByIndex(ctx, part, IndexQuery{})
		return err
	}},
	{"BlobRefsConn", "BlobRefsConn.ListRowsReferencingBlob", true, false, func(ctx context.Context, x any) error {
		_, err := x.(BlobRefsConn).ListRowsReferencingBlob(ctx, part, "b", 1)
		return err
	}},
	{"BlobRefsConn", "BlobRefsConn.ListReferencedBlobIDs", true, false, func(ctx context.Context, x any) error {
		_, err := x.(BlobRefsConn).ListReferencedBlobIDs(ctx, part, "", 1)
		return err
	}},
	{"AdminConn", "AdminConn.ListClientRecords", true, false, func(ctx context.Context, x any) error {
		_, err := x.(AdminConn).ListClientRecords(ctx, part, ClientRecordQuery{Limit: 1})
		return err
	}},
	{"AdminConn", "AdminConn.ListCommitMeta", true, false, func(ctx context.Context, x any) error {
		_, err := x.(AdminConn).ListCommitMeta(ctx, part, 0, 1)
		return err
	}},
	{"AdminConn", "AdminConn.ScopeActivity", true, false, func(ctx context.Context, x any) error {
		_, err := x.(AdminConn).ScopeActivity(ctx, part, "t", ScopeFilter{"v": {"a"}}, 0, 1)
		return err
	}},
	{"AdminConn", "AdminConn.RowScopes", true, false, func(ctx context.Context, x any) error {
		_, _, err := x.(AdminConn).RowScopes(ctx, part, "t", "r")
		return err
	}},
	{"CommitFanoutConn", "CommitFanoutConn.SubscribeCommits", false, false, func(ctx context.Context, x any) error {
		_, err := x.(CommitFanoutConn).SubscribeCommits(ctx)
		return err
	}},
	{"EngineVersioner", "EngineVersioner.EngineVersion", false, false, func(ctx context.Context, x any) error {
		_, err := x.(EngineVersioner).EngineVersion(ctx)
		return err
	}},
}

var txMethods = []method{
	{"Tx", "Tx.GetRow", true, false, func(ctx context.Context, x any) error { _, _, err := x.(Tx).GetRow(ctx, "t", "r"); return err }},
	{"Tx", "Tx.ScanRows", true, false, func(ctx context.Context, x any) error { _, err := x.(Tx).ScanRows(ctx, ScanQuery{}); return err }},
	{"Tx", "Tx.GetPushResult", true, false, func(ctx context.Context, x any) error { _, _, err := x.(Tx).GetPushResult(ctx, "c", "k"); return err }},
	{"Tx", "Tx.UpsertRow", true, false, func(ctx context.Context, x any) error { return x.(Tx).UpsertRow(ctx, "t", Row{}) }},
	{"Tx", "Tx.DeleteRow", true, false, func(ctx context.Context, x any) error { return x.(Tx).DeleteRow(ctx, "t", "r") }},
	{"Tx", "Tx.AppendCommit", true, false, func(ctx context.Context, x any) error { _, err := x.(Tx).AppendCommit(ctx, CommitInput{}); return err }},
	{"Tx", "Tx.PutPushResult", true, false, func(ctx context.Context, x any) error { return x.(Tx).PutPushResult(ctx, "c", "k", PushResult{}) }},
	{"Tx", "Tx.CommitRejected", true, false, func(ctx context.Context, x any) error { return x.(Tx).CommitRejected(ctx, "c", "k", PushResult{}) }},
	{"Tx", "Tx.Commit", true, false, func(ctx context.Context, x any) error { return x.(Tx).Commit(ctx) }},
	{"Tx", "Tx.Rollback", true, false, func(ctx context.Context, x any) error { return x.(Tx).Rollback(ctx) }},
	{"ReactionsTx", "ReactionsTx.EnqueueReactions", true, false, func(ctx context.Context, x any) error {
		return x.(ReactionsTx).EnqueueReactions(ctx, 1, nil)
	}},
	{"IndexLookupTx", "IndexLookupTx.ScanRowsByIndex", true, false, func(ctx context.Context, x any) error {
		_, err := x.(IndexLookupTx).ScanRowsByIndex(ctx, IndexQuery{})
		return err
	}},
	{"BlobRefsTx", "BlobRefsTx.SetBlobRefs", true, false, func(ctx context.Context, x any) error {
		return x.(BlobRefsTx).SetBlobRefs(ctx, "t", "r", nil)
	}},
}

// recorder is Hooks that record every call's start and end and mark the
// context they hand on with the op, so the fake can show it received it.
type recorder struct {
	mu     gosync.Mutex
	starts []Call
	ends   []error
}

func (r *recorder) hooks() Hooks {
	return Hooks{Start: func(ctx context.Context, c Call) (context.Context, func(error)) {
		r.mu.Lock()
		r.starts = append(r.starts, c)
		r.mu.Unlock()
		return context.WithValue(ctx, ctxKey{}, "hooked "+c.Op), func(err error) {
			r.mu.Lock()
			r.ends = append(r.ends, err)
			r.mu.Unlock()
		}
	}}
}

func (r *recorder) reset() (starts []Call, ends []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	starts, ends = r.starts, r.ends
	r.starts, r.ends = nil, nil
	return starts, ends
}

// checkCall calls m through wrapped and checks that the fake received it
// with the hook's context and the call's partition, that the hooks saw one
// start and one end with the same error, and that the error came back
// unchanged.
func checkCall(t *testing.T, f *fconn, rec *recorder, wrapped any, m method) {
	t.Helper()
	rec.reset()
	err := m.call(context.Background(), wrapped)
	got := f.last()
	starts, ends := rec.reset()
	wantPart := ""
	if m.part {
		wantPart = part
	}
	if got.op != m.op || got.partition != wantPart {
		t.Errorf("%s: the wrapped value received %q on partition %q", m.op, got.op, got.partition)
	}
	if want := "hooked " + m.op; !m.noCtx && got.marker != want {
		t.Errorf("%s: the wrapped value got a context marked %v, want the hook's %q", m.op, got.marker, want)
	}
	if len(starts) != 1 || starts[0] != (Call{Op: m.op, Partition: wantPart}) {
		t.Errorf("%s: hook starts %+v, want one Call{%s, %q}", m.op, starts, m.op, wantPart)
	}
	if len(ends) != 1 || ends[0] != got.err {
		t.Errorf("%s: hook ends %v, want one with the wrapped value's error %v", m.op, ends, got.err)
	}
	if err != got.err || (m.op != "Conn.Begin" && err == nil) {
		t.Errorf("%s: returned %v, want the wrapped value's error %v unchanged", m.op, err, got.err)
	}
}

// TestWrapKeepsExactlyTheCapabilities wraps a fake of every combination of
// the 7 optional Conn interfaces (6 capability halves and EngineVersioner)
// with a Tx of each combination of the 3 Tx halves, and checks that the
// wrapper implements exactly what the fake implements, on both halves
// (ERR-3), and forwards every method of each.
func TestWrapKeepsExactlyTheCapabilities(t *testing.T) {
	for set := uint(0); set < 1<<len(connIfaces); set++ {
		txSet := set % (1 << len(txIfaces)) // varied with set; every Tx set is also checked below
		t.Run(fmt.Sprintf("conn-%07b", set), func(t *testing.T) {
			f := &fconn{txSet: txSet}
			inner := fakeConn(f, set)
			rec := &recorder{}
			w := WrapConn(inner, rec.hooks())
			for i, iface := range connIfaces {
				want := set&(1<<i) != 0
				if got := implementsConn(inner, iface); got != want {
					t.Fatalf("fake: implements %s = %v, want %v (regenerate wrap_gen_test.go)", iface, got, want)
				}
				if got := implementsConn(w, iface); got != want {
					t.Errorf("wrapper: implements %s = %v, the wrapped Conn %v", iface, got, want)
				}
			}
			for _, c := range AllCapabilities {
				if ConnHas(w, c) != ConnHas(inner, c) {
					t.Errorf("ConnHas(wrapper, %s) = %v, wrapped %v", c, ConnHas(w, c), ConnHas(inner, c))
				}
			}
			for _, m := range connMethods {
				if m.iface == "Conn" || implementsConn(w, m.iface) {
					checkCall(t, f, rec, w, m)
				}
			}
			rec.reset()
			tx, err := w.Begin(context.Background(), part)
			if err != nil {
				t.Fatalf("Begin: %v", err)
			}
			checkTx(t, f, rec, tx, txSet)
			if UnwrapConn(w) != inner {
				t.Errorf("UnwrapConn did not return the wrapped Conn")
			}
		})
	}
	for txSet := uint(0); txSet < 1<<len(txIfaces); txSet++ {
		t.Run(fmt.Sprintf("tx-%03b", txSet), func(t *testing.T) {
			f := &fconn{txSet: txSet}
			rec := &recorder{}
			tx, err := WrapConn(f, rec.hooks()).Begin(context.Background(), part)
			if err != nil {
				t.Fatalf("Begin: %v", err)
			}
			checkTx(t, f, rec, tx, txSet)
		})
	}
}

// checkTx checks a wrapped Tx whose fake implements the Tx halves of txSet.
func checkTx(t *testing.T, f *fconn, rec *recorder, tx Tx, txSet uint) {
	t.Helper()
	for i, iface := range txIfaces {
		want := txSet&(1<<i) != 0
		if got := implementsTx(tx, iface); got != want {
			t.Errorf("wrapped Tx: implements %s = %v, the wrapped Tx %v", iface, got, want)
		}
	}
	if tx.Partition() != part {
		t.Errorf("wrapped Tx: Partition() = %q, want %q", tx.Partition(), part)
	}
	for _, m := range txMethods {
		if m.iface == "Tx" || implementsTx(tx, m.iface) {
			checkCall(t, f, rec, tx, m)
		}
	}
	if inner := tx.(interface{ Unwrap() Tx }).Unwrap(); inner.Partition() != part {
		t.Errorf("wrapped Tx: Unwrap().Partition() = %q", inner.Partition())
	}
}

// TestWrapBegin checks that Begin is reported with its partition and that
// a Begin error comes back unchanged, with no Tx.
func TestWrapBegin(t *testing.T) {
	f := &fconn{}
	rec := &recorder{}
	w := WrapConn(f, rec.hooks())
	checkCall(t, f, rec, w, method{"Conn", "Conn.Begin", true, false, func(ctx context.Context, x any) error {
		_, err := x.(Conn).Begin(ctx, part)
		return err
	}})
	failing := WrapConn(beginFails{f}, Hooks{})
	tx, err := failing.Begin(context.Background(), part)
	if tx != nil || CodeOf(err) != CodeUnavailable {
		t.Errorf("Begin of a failing Conn = %v, %v; want nil, the Conn's CodeUnavailable error", tx, err)
	}
}

type beginFails struct{ *fconn }

func (beginFails) Begin(context.Context, string) (Tx, error) {
	return nil, Errorf(CodeUnavailable, "engine down")
}

// TestWrapHooksOptional checks the zero Hooks, a Start that returns nil
// context and end, nil wrapping, and wrapping a wrapper.
func TestWrapHooksOptional(t *testing.T) {
	if WrapConn(nil, Hooks{}) != nil {
		t.Errorf("WrapConn(nil) is not nil")
	}
	f := &fconn{txSet: 0b111}
	all := fakeConn(f, 1<<len(connIfaces)-1)
	lazy := Hooks{Start: func(context.Context, Call) (context.Context, func(error)) { return nil, nil }}
	for name, h := range map[string]Hooks{"zero": {}, "nil-returning": lazy} {
		w := WrapConn(all, h)
		if _, err := w.MaxCommitSeq(context.Background(), part); err != f.last().err || err == nil {
			t.Errorf("%s hooks: MaxCommitSeq error %v, want the wrapped Conn's %v", name, err, f.last().err)
		}
	}
	rec := &recorder{}
	twice := WrapConn(WrapConn(all, Hooks{}), rec.hooks())
	if got, want := ConnCapabilities(twice), AllCapabilities; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("wrapping a wrapper: capabilities %v, want %v", got, want)
	}
	if UnwrapConn(twice) != all {
		t.Errorf("UnwrapConn did not peel both layers")
	}
	tx, err := twice.Begin(context.Background(), part)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range AllCapabilities {
		if c.HasTxHalf() && !TxHas(tx, c) {
			t.Errorf("wrapping a wrapper: Tx lost %s", c)
		}
	}
}
