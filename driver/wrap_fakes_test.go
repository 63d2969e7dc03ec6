package driver

import (
	"context"
	gosync "sync"
)

// The fakes of wrap_test.go. They record every call they receive;
// wrap_gen_test.go (go generate) builds from them one fake per combination
// of optional interfaces.

type ctxKey struct{}

// received is one call a fake received.
type received struct {
	op, partition string
	marker        any // the ctxKey value of the context the call carried
	err           error
}

// fconn is a fake Conn; txSet selects the optional interfaces of its Tx values.
type fconn struct {
	mu    gosync.Mutex
	got   []received
	txSet uint
}

func (f *fconn) record(ctx context.Context, op, partition string, err error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, received{op: op, partition: partition, marker: ctx.Value(ctxKey{}), err: err})
	return err
}

// fail records the call and returns a fresh error the test can identify.
func (f *fconn) fail(ctx context.Context, op, partition string) error {
	return f.record(ctx, op, partition, Errorf(CodeInternal, "fake %s", op))
}

func (f *fconn) last() received {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.got) == 0 {
		return received{}
	}
	return f.got[len(f.got)-1]
}

func (f *fconn) EnsureSchema(ctx context.Context, _ Schema) error {
	return f.fail(ctx, "Conn.EnsureSchema", "")
}
func (f *fconn) Begin(ctx context.Context, p string) (Tx, error) {
	f.record(ctx, "Conn.Begin", p, nil)
	return fakeTx(&ftx{f: f, partition: p}, f.txSet), nil
}
func (f *fconn) MaxCommitSeq(ctx context.Context, p string) (int64, error) {
	return 0, f.fail(ctx, "Conn.MaxCommitSeq", p)
}
func (f *fconn) ReadCommitWindow(ctx context.Context, p string, _ WindowQuery) ([]Commit, error) {
	return nil, f.fail(ctx, "Conn.ReadCommitWindow", p)
}
func (f *fconn) CommitSeqBefore(ctx context.Context, p string, _ int64) (int64, error) {
	return 0, f.fail(ctx, "Conn.CommitSeqBefore", p)
}
func (f *fconn) GetRow(ctx context.Context, p, _, _ string) (Row, bool, error) {
	return Row{}, false, f.fail(ctx, "Conn.GetRow", p)
}
func (f *fconn) ScanRows(ctx context.Context, p string, _ ScanQuery) ([]Row, error) {
	return nil, f.fail(ctx, "Conn.ScanRows", p)
}
func (f *fconn) GetPushResult(ctx context.Context, p, _, _ string) (PushResult, bool, error) {
	return PushResult{}, false, f.fail(ctx, "Conn.GetPushResult", p)
}
func (f *fconn) HorizonSeq(ctx context.Context, p string) (int64, error) {
	return 0, f.fail(ctx, "Conn.HorizonSeq", p)
}
func (f *fconn) SetHorizonSeq(ctx context.Context, p string, _ int64) error {
	return f.fail(ctx, "Conn.SetHorizonSeq", p)
}
func (f *fconn) PruneCommitsThrough(ctx context.Context, p string, _ int64) (int64, error) {
	return 0, f.fail(ctx, "Conn.PruneCommitsThrough", p)
}
func (f *fconn) DeletePushResultsBefore(ctx context.Context, p string, _ int64, _ int) (int64, error) {
	return 0, f.fail(ctx, "Conn.DeletePushResultsBefore", p)
}
func (f *fconn) DeleteClientRecordsBefore(ctx context.Context, p string, _ int64, _ int) (int64, error) {
	return 0, f.fail(ctx, "Conn.DeleteClientRecordsBefore", p)
}
func (f *fconn) MinClientCursor(ctx context.Context, p string, _, _ int64) (int64, bool, error) {
	return 0, false, f.fail(ctx, "Conn.MinClientCursor", p)
}
func (f *fconn) GetClientRecord(ctx context.Context, p, _ string) (ClientRecord, bool, error) {
	return ClientRecord{}, false, f.fail(ctx, "Conn.GetClientRecord", p)
}
func (f *fconn) PutClientRecord(ctx context.Context, p string, _ ClientRecord) error {
	return f.fail(ctx, "Conn.PutClientRecord", p)
}
func (f *fconn) ListClientCursors(ctx context.Context, p, _ string, _ int) ([]ClientCursor, error) {
	return nil, f.fail(ctx, "Conn.ListClientCursors", p)
}
func (f *fconn) TouchPartition(ctx context.Context, p string, _ int64, _ string) (PartitionEntry, error) {
	return PartitionEntry{}, f.fail(ctx, "Conn.TouchPartition", p)
}
func (f *fconn) RotatePartitionLogEpoch(ctx context.Context, p, _ string, _ int64) (PartitionEntry, error) {
	return PartitionEntry{}, f.fail(ctx, "Conn.RotatePartitionLogEpoch", p)
}
func (f *fconn) ListPartitionRegistry(ctx context.Context, _ string, _ int) ([]PartitionEntry, error) {
	return nil, f.fail(ctx, "Conn.ListPartitionRegistry", "")
}
func (f *fconn) ListPartitions(ctx context.Context, _ string, _ int) ([]string, error) {
	return nil, f.fail(ctx, "Conn.ListPartitions", "")
}
func (f *fconn) Close() error { return f.fail(context.Background(), "Conn.Close", "") }

type fReactionsConn struct{ f *fconn }

func (x fReactionsConn) ClaimReactions(ctx context.Context, p string, _ ClaimRequest) ([]Reaction, error) {
	return nil, x.f.fail(ctx, "ReactionsConn.ClaimReactions", p)
}
func (x fReactionsConn) CompleteReaction(ctx context.Context, p, _, _ string, _ int64) (bool, error) {
	return false, x.f.fail(ctx, "ReactionsConn.CompleteReaction", p)
}
func (x fReactionsConn) ExtendReactionLease(ctx context.Context, p, _, _ string, _, _ int64) (bool, error) {
	return false, x.f.fail(ctx, "ReactionsConn.ExtendReactionLease", p)
}
func (x fReactionsConn) FailReaction(ctx context.Context, p, _, _ string, _ FailRequest) (bool, error) {
	return false, x.f.fail(ctx, "ReactionsConn.FailReaction", p)
}
func (x fReactionsConn) RetryReaction(ctx context.Context, p, _ string, _ int64) (bool, error) {
	return false, x.f.fail(ctx, "ReactionsConn.RetryReaction", p)
}
func (x fReactionsConn) GetReaction(ctx context.Context, p, _ string) (Reaction, bool, error) {
	return Reaction{}, false, x.f.fail(ctx, "ReactionsConn.GetReaction", p)
}
func (x fReactionsConn) ListReactions(ctx context.Context, p string, _ ReactionListQuery) ([]Reaction, error) {
	return nil, x.f.fail(ctx, "ReactionsConn.ListReactions", p)
}
func (x fReactionsConn) PruneReactions(ctx context.Context, p string, _ ReactionPruneRequest) (map[ReactionStatus]int64, error) {
	return nil, x.f.fail(ctx, "ReactionsConn.PruneReactions", p)
}

type fAuthoritativeQueryConn struct{ f *fconn }

func (x fAuthoritativeQueryConn) AuthoritativeQuery(ctx context.Context, p string, _ Query) (QueryResult, error) {
	return QueryResult{}, x.f.fail(ctx, "AuthoritativeQueryConn.AuthoritativeQuery", p)
}

type fIndexLookupConn struct{ f *fconn }

func (x fIndexLookupConn) ScanRowsByIndex(ctx context.Context, p string, _ IndexQuery) ([]Row, error) {
	return nil, x.f.fail(ctx, "IndexLookupConn.ScanRowsByIndex", p)
}

type fBlobRefsConn struct{ f *fconn }

func (x fBlobRefsConn) ListRowsReferencingBlob(ctx context.Context, p, _ string, _ int) ([]BlobRowRef, error) {
	return nil, x.f.fail(ctx, "BlobRefsConn.ListRowsReferencingBlob", p)
}
func (x fBlobRefsConn) ListReferencedBlobIDs(ctx context.Context, p, _ string, _ int) ([]string, error) {
	return nil, x.f.fail(ctx, "BlobRefsConn.ListReferencedBlobIDs", p)
}

type fAdminConn struct{ f *fconn }

func (x fAdminConn) ListClientRecords(ctx context.Context, p string, _ ClientRecordQuery) ([]ClientRecord, error) {
	return nil, x.f.fail(ctx, "AdminConn.ListClientRecords", p)
}
func (x fAdminConn) ListCommitMeta(ctx context.Context, p string, _ int64, _ int) ([]CommitMeta, error) {
	return nil, x.f.fail(ctx, "AdminConn.ListCommitMeta", p)
}
func (x fAdminConn) ScopeActivity(ctx context.Context, p, _ string, _ ScopeFilter, _, _ int64) (ScopeActivity, error) {
	return ScopeActivity{}, x.f.fail(ctx, "AdminConn.ScopeActivity", p)
}
func (x fAdminConn) RowScopes(ctx context.Context, p, _, _ string) (Scopes, bool, error) {
	return nil, false, x.f.fail(ctx, "AdminConn.RowScopes", p)
}

type fCommitFanoutConn struct{ f *fconn }

func (x fCommitFanoutConn) SubscribeCommits(ctx context.Context) (<-chan CommitWake, error) {
	return nil, x.f.fail(ctx, "CommitFanoutConn.SubscribeCommits", "")
}

type fEngineVersioner struct{ f *fconn }

func (x fEngineVersioner) EngineVersion(ctx context.Context) (string, error) {
	return "", x.f.fail(ctx, "EngineVersioner.EngineVersion", "")
}

// ftx is a fake Tx recording into its fconn.
type ftx struct {
	f         *fconn
	partition string
}

func (t *ftx) Partition() string { return t.partition }
func (t *ftx) GetRow(ctx context.Context, _, _ string) (Row, bool, error) {
	return Row{}, false, t.f.fail(ctx, "Tx.GetRow", t.partition)
}
func (t *ftx) ScanRows(ctx context.Context, _ ScanQuery) ([]Row, error) {
	return nil, t.f.fail(ctx, "Tx.ScanRows", t.partition)
}
func (t *ftx) GetPushResult(ctx context.Context, _, _ string) (PushResult, bool, error) {
	return PushResult{}, false, t.f.fail(ctx, "Tx.GetPushResult", t.partition)
}
func (t *ftx) UpsertRow(ctx context.Context, _ string, _ Row) error {
	return t.f.fail(ctx, "Tx.UpsertRow", t.partition)
}
func (t *ftx) DeleteRow(ctx context.Context, _, _ string) error {
	return t.f.fail(ctx, "Tx.DeleteRow", t.partition)
}
func (t *ftx) AppendCommit(ctx context.Context, _ CommitInput) (int64, error) {
	return 0, t.f.fail(ctx, "Tx.AppendCommit", t.partition)
}
func (t *ftx) PutPushResult(ctx context.Context, _, _ string, _ PushResult) error {
	return t.f.fail(ctx, "Tx.PutPushResult", t.partition)
}
func (t *ftx) CommitRejected(ctx context.Context, _, _ string, _ PushResult) error {
	return t.f.fail(ctx, "Tx.CommitRejected", t.partition)
}
func (t *ftx) Commit(ctx context.Context) error   { return t.f.fail(ctx, "Tx.Commit", t.partition) }
func (t *ftx) Rollback(ctx context.Context) error { return t.f.fail(ctx, "Tx.Rollback", t.partition) }

type fReactionsTx struct{ t *ftx }

func (x fReactionsTx) EnqueueReactions(ctx context.Context, _ int64, _ []ReactionInput) error {
	return x.t.f.fail(ctx, "ReactionsTx.EnqueueReactions", x.t.partition)
}

type fIndexLookupTx struct{ t *ftx }

func (x fIndexLookupTx) ScanRowsByIndex(ctx context.Context, _ IndexQuery) ([]Row, error) {
	return nil, x.t.f.fail(ctx, "IndexLookupTx.ScanRowsByIndex", x.t.partition)
}

type fBlobRefsTx struct{ t *ftx }

func (x fBlobRefsTx) SetBlobRefs(ctx context.Context, _, _ string, _ []string) error {
	return x.t.f.fail(ctx, "BlobRefsTx.SetBlobRefs", x.t.partition)
}
