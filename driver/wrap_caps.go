package driver

import "context"

// Forwarders of the optional interfaces, one type per interface. Each holds
// the core wrapper and asserts the wrapped value's interface at call time;
// the combination types of wrap_gen.go embed exactly the forwarders whose
// interface the wrapped value implements, so the assertion cannot fail.

// ---- Conn halves ----

type wReactionsConn struct{ w *wconn }

func (f wReactionsConn) ClaimReactions(ctx context.Context, partition string, req ClaimRequest) (_ []Reaction, err error) {
	ctx, end := f.w.hooks.start(ctx, "ReactionsConn.ClaimReactions", partition)
	defer func() { end(err) }()
	return f.w.conn.(ReactionsConn).ClaimReactions(ctx, partition, req)
}

func (f wReactionsConn) CompleteReaction(ctx context.Context, partition, key, owner string, nowMs int64) (_ bool, err error) {
	ctx, end := f.w.hooks.start(ctx, "ReactionsConn.CompleteReaction", partition)
	defer func() { end(err) }()
	return f.w.conn.(ReactionsConn).CompleteReaction(ctx, partition, key, owner, nowMs)
}

func (f wReactionsConn) ExtendReactionLease(ctx context.Context, partition, key, owner string, nowMs, leaseMs int64) (_ bool, err error) {
	ctx, end := f.w.hooks.start(ctx, "ReactionsConn.ExtendReactionLease", partition)
	defer func() { end(err) }()
	return f.w.conn.(ReactionsConn).ExtendReactionLease(ctx, partition, key, owner, nowMs, leaseMs)
}

func (f wReactionsConn) FailReaction(ctx context.Context, partition, key, owner string, req FailRequest) (_ bool, err error) {
	ctx, end := f.w.hooks.start(ctx, "ReactionsConn.FailReaction", partition)
	defer func() { end(err) }()
	return f.w.conn.(ReactionsConn).FailReaction(ctx, partition, key, owner, req)
}

func (f wReactionsConn) RetryReaction(ctx context.Context, partition, key string, nowMs int64) (_ bool, err error) {
	ctx, end := f.w.hooks.start(ctx, "ReactionsConn.RetryReaction", partition)
	defer func() { end(err) }()
	return f.w.conn.(ReactionsConn).RetryReaction(ctx, partition, key, nowMs)
}

func (f wReactionsConn) GetReaction(ctx context.Context, partition, key string) (_ Reaction, _ bool, err error) {
	ctx, end := f.w.hooks.start(ctx, "ReactionsConn.GetReaction", partition)
	defer func() { end(err) }()
	return f.w.conn.(ReactionsConn).GetReaction(ctx, partition, key)
}

func (f wReactionsConn) ListReactions(ctx context.Context, partition string, q ReactionListQuery) (_ []Reaction, err error) {
	ctx, end := f.w.hooks.start(ctx, "ReactionsConn.ListReactions", partition)
	defer func() { end(err) }()
	return f.w.conn.(ReactionsConn).ListReactions(ctx, partition, q)
}

func (f wReactionsConn) PruneReactions(ctx context.Context, partition string, req ReactionPruneRequest) (_ map[ReactionStatus]int64, err error) {
	ctx, end := f.w.hooks.start(ctx, "ReactionsConn.PruneReactions", partition)
	defer func() { end(err) }()
	return f.w.conn.(ReactionsConn).PruneReactions(ctx, partition, req)
}

type wAuthoritativeQueryConn struct{ w *wconn }

func (f wAuthoritativeQueryConn) AuthoritativeQuery(ctx context.Context, partition string, q Query) (_ QueryResult, err error) {
	ctx, end := f.w.hooks.start(ctx, "AuthoritativeQueryConn.AuthoritativeQuery", partition)
	defer func() { end(err) }()
	return f.w.conn.(AuthoritativeQueryConn).AuthoritativeQuery(ctx, partition, q)
}

type wIndexLookupConn struct{ w *wconn }

func (f wIndexLookupConn) ScanRowsByIndex(ctx context.Context, partition string, q IndexQuery) (_ []Row, err error) {
	ctx, end := f.w.hooks.start(ctx, "IndexLookupConn.ScanRowsByIndex", partition)
	defer func() { end(err) }()
	return f.w.conn.(IndexLookupConn).ScanRowsByIndex(ctx, partition, q)
}

type wBlobRefsConn struct{ w *wconn }

func (f wBlobRefsConn) ListRowsReferencingBlob(ctx context.Context, partition, blobID string, limit int) (_ []BlobRowRef, err error) {
	ctx, end := f.w.hooks.start(ctx, "BlobRefsConn.ListRowsReferencingBlob", partition)
	defer func() { end(err) }()
	return f.w.conn.(BlobRefsConn).ListRowsReferencingBlob(ctx, partition, blobID, limit)
}

func (f wBlobRefsConn) ListReferencedBlobIDs(ctx context.Context, partition, afterBlobID string, limit int) (_ []string, err error) {
	ctx, end := f.w.hooks.start(ctx, "BlobRefsConn.ListReferencedBlobIDs", partition)
	defer func() { end(err) }()
	return f.w.conn.(BlobRefsConn).ListReferencedBlobIDs(ctx, partition, afterBlobID, limit)
}

type wAdminConn struct{ w *wconn }

func (f wAdminConn) ListClientRecords(ctx context.Context, partition string, q ClientRecordQuery) (_ []ClientRecord, err error) {
	ctx, end := f.w.hooks.start(ctx, "AdminConn.ListClientRecords", partition)
	defer func() { end(err) }()
	return f.w.conn.(AdminConn).ListClientRecords(ctx, partition, q)
}

func (f wAdminConn) ListCommitMeta(ctx context.Context, partition string, beforeSeq int64, limit int) (_ []CommitMeta, err error) {
	ctx, end := f.w.hooks.start(ctx, "AdminConn.ListCommitMeta", partition)
	defer func() { end(err) }()
	return f.w.conn.(AdminConn).ListCommitMeta(ctx, partition, beforeSeq, limit)
}

func (f wAdminConn) ScopeActivity(ctx context.Context, partition, table string, filter ScopeFilter, afterSeq, throughSeq int64) (_ ScopeActivity, err error) {
	ctx, end := f.w.hooks.start(ctx, "AdminConn.ScopeActivity", partition)
	defer func() { end(err) }()
	return f.w.conn.(AdminConn).ScopeActivity(ctx, partition, table, filter, afterSeq, throughSeq)
}

func (f wAdminConn) RowScopes(ctx context.Context, partition, table, rowID string) (_ Scopes, _ bool, err error) {
	ctx, end := f.w.hooks.start(ctx, "AdminConn.RowScopes", partition)
	defer func() { end(err) }()
	return f.w.conn.(AdminConn).RowScopes(ctx, partition, table, rowID)
}

type wCommitFanoutConn struct{ w *wconn }

func (f wCommitFanoutConn) SubscribeCommits(ctx context.Context) (_ <-chan CommitWake, err error) {
	ctx, end := f.w.hooks.start(ctx, "CommitFanoutConn.SubscribeCommits", "")
	defer func() { end(err) }()
	return f.w.conn.(CommitFanoutConn).SubscribeCommits(ctx)
}

type wEngineVersioner struct{ w *wconn }

func (f wEngineVersioner) EngineVersion(ctx context.Context) (_ string, err error) {
	ctx, end := f.w.hooks.start(ctx, "EngineVersioner.EngineVersion", "")
	defer func() { end(err) }()
	return f.w.conn.(EngineVersioner).EngineVersion(ctx)
}

// ---- Tx halves ----

type wReactionsTx struct{ w *wtx }

func (f wReactionsTx) EnqueueReactions(ctx context.Context, sourceCommitSeq int64, reactions []ReactionInput) (err error) {
	ctx, end := f.w.hooks.start(ctx, "ReactionsTx.EnqueueReactions", f.w.tx.Partition())
	defer func() { end(err) }()
	return f.w.tx.(ReactionsTx).EnqueueReactions(ctx, sourceCommitSeq, reactions)
}

type wIndexLookupTx struct{ w *wtx }

func (f wIndexLookupTx) ScanRowsByIndex(ctx context.Context, q IndexQuery) (_ []Row, err error) {
	ctx, end := f.w.hooks.start(ctx, "IndexLookupTx.ScanRowsByIndex", f.w.tx.Partition())
	defer func() { end(err) }()
	return f.w.tx.(IndexLookupTx).ScanRowsByIndex(ctx, q)
}

type wBlobRefsTx struct{ w *wtx }

func (f wBlobRefsTx) SetBlobRefs(ctx context.Context, table, rowID string, blobIDs []string) (err error) {
	ctx, end := f.w.hooks.start(ctx, "BlobRefsTx.SetBlobRefs", f.w.tx.Partition())
	defer func() { end(err) }()
	return f.w.tx.(BlobRefsTx).SetBlobRefs(ctx, table, rowID, blobIDs)
}

// Every forwarder implements its interface in full (a method added to an
// interface without its forwarder fails to compile here).
var (
	_ ReactionsConn          = wReactionsConn{}
	_ AuthoritativeQueryConn = wAuthoritativeQueryConn{}
	_ IndexLookupConn        = wIndexLookupConn{}
	_ BlobRefsConn           = wBlobRefsConn{}
	_ AdminConn              = wAdminConn{}
	_ CommitFanoutConn       = wCommitFanoutConn{}
	_ EngineVersioner        = wEngineVersioner{}
	_ ReactionsTx            = wReactionsTx{}
	_ IndexLookupTx          = wIndexLookupTx{}
	_ BlobRefsTx             = wBlobRefsTx{}
	_ Conn                   = (*wconn)(nil)
	_ Tx                     = (*wtx)(nil)
)
