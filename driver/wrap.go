package driver

import "context"

//go:generate go run ./internal/wrapgen -o wrap_gen.go
//go:generate go run ./internal/wrapgen -fakes -o wrap_gen_test.go

// Call describes one call made through a Conn or Tx returned by WrapConn.
type Call struct {
	// Op names the interface and method: "Conn.GetRow", "Tx.Commit",
	// "ReactionsConn.ClaimReactions", "IndexLookupTx.ScanRowsByIndex",
	// "EngineVersioner.EngineVersion". Stable; use it as a metric label.
	Op string
	// Partition is the partition the call reads or writes, "" for calls
	// that have none (Conn.EnsureSchema, Conn.ListPartitions, Conn.Close,
	// CommitFanoutConn.SubscribeCommits). It is a partition name: never
	// put it in an error message (V-10); whether it may become a metric
	// label or a span attribute is the host's choice.
	Partition string
}

// Hooks observe the calls made through a wrapped Conn and its Tx values,
// for tracing, metrics or logging. The zero value observes nothing.
type Hooks struct {
	// Start, if set, is called before every call with the call's context
	// (context.Background() for Conn.Close and Tx.Partition, which take
	// none). The context it returns (nil = unchanged) is the one passed to
	// the wrapped method, so a tracer can start a span in it; end (nil =
	// none) is called once when the method returns, with its error (nil on
	// success). Start must be safe for concurrent use. Hooks observe: they
	// cannot change arguments, results or errors.
	Start func(ctx context.Context, c Call) (next context.Context, end func(err error))
}

// WrapConn returns a Conn that forwards every call to conn, reporting each
// one to hooks. The result implements exactly the optional interfaces conn
// implements — every capability's Conn half (ReactionsConn,
// AuthoritativeQueryConn, IndexLookupConn, BlobRefsConn, AdminConn,
// CommitFanoutConn) and EngineVersioner — no more and no fewer; and every
// Tx its Begin returns implements exactly the Tx halves (ReactionsTx,
// IndexLookupTx, BlobRefsTx) of the Tx conn's Begin returned. So wrapping
// never changes what a driver declares, and never repairs a driver that
// declares half a capability either (ERR-3). Errors are
// returned unchanged (ERR-1). The wrapper adds no state: it is safe for
// concurrent use exactly when conn is. A nil conn returns nil.
//
// Unwrap the result with UnwrapConn to reach the driver's own Conn.
func WrapConn(conn Conn, hooks Hooks) Conn {
	if conn == nil {
		return nil
	}
	return combineConn(&wconn{conn: conn, hooks: hooks})
}

// UnwrapConn returns the Conn that WrapConn wrapped, peeling every layer
// of wrapping, or conn itself when it is not a wrapper.
func UnwrapConn(conn Conn) Conn {
	for {
		u, ok := conn.(interface{ Unwrap() Conn })
		if !ok {
			return conn
		}
		conn = u.Unwrap()
	}
}

// start runs hooks.Start and returns the context to pass on and the end
// function, never nil.
func (h Hooks) start(ctx context.Context, op, partition string) (context.Context, func(error)) {
	if h.Start == nil {
		return ctx, func(error) {}
	}
	next, end := h.Start(ctx, Call{Op: op, Partition: partition})
	if next == nil {
		next = ctx
	}
	if end == nil {
		end = func(error) {}
	}
	return next, end
}

// wconn wraps the core Conn methods. The generated combination types of
// wrap_gen.go embed it beside the forwarders of wrap_caps.go.
type wconn struct {
	conn  Conn
	hooks Hooks
}

// Unwrap returns the wrapped Conn.
func (c *wconn) Unwrap() Conn { return c.conn }

func (c *wconn) EnsureSchema(ctx context.Context, schema Schema) (err error) {
	ctx, end := c.hooks.start(ctx, "Conn.EnsureSchema", "")
	defer func() { end(err) }()
	return c.conn.EnsureSchema(ctx, schema)
}

func (c *wconn) Begin(ctx context.Context, partition string) (_ Tx, err error) {
	ctx, end := c.hooks.start(ctx, "Conn.Begin", partition)
	defer func() { end(err) }()
	tx, err := c.conn.Begin(ctx, partition)
	if err != nil || tx == nil {
		return tx, err
	}
	return combineTx(&wtx{tx: tx, hooks: c.hooks}), nil
}

func (c *wconn) MaxCommitSeq(ctx context.Context, partition string) (_ int64, err error) {
	ctx, end := c.hooks.start(ctx, "Conn.MaxCommitSeq", partition)
	defer func() { end(err) }()
	return c.conn.MaxCommitSeq(ctx, partition)
}

func (c *wconn) ReadCommitWindow(ctx context.Context, partition string, q WindowQuery) (_ []Commit, err error) {
	ctx, end := c.hooks.start(ctx, "Conn.ReadCommitWindow", partition)
	defer func() { end(err) }()
	return c.conn.ReadCommitWindow(ctx, partition, q)
}

func (c *wconn) CommitSeqBefore(ctx context.Context, partition string, atMs int64) (_ int64, err error) {
	ctx, end := c.hooks.start(ctx, "Conn.CommitSeqBefore", partition)
	defer func() { end(err) }()
	return c.conn.CommitSeqBefore(ctx, partition, atMs)
}

func (c *wconn) GetRow(ctx context.Context, partition, table, id string) (_ Row, _ bool, err error) {
	ctx, end := c.hooks.start(ctx, "Conn.GetRow", partition)
	defer func() { end(err) }()
	return c.conn.GetRow(ctx, partition, table, id)
}

func (c *wconn) ScanRows(ctx context.Context, partition string, q ScanQuery) (_ []Row, err error) {
	ctx, end := c.hooks.start(ctx, "Conn.ScanRows", partition)
	defer func() { end(err) }()
	return c.conn.ScanRows(ctx, partition, q)
}

func (c *wconn) GetPushResult(ctx context.Context, partition, clientID, clientCommitID string) (_ PushResult, _ bool, err error) {
	ctx, end := c.hooks.start(ctx, "Conn.GetPushResult", partition)
	defer func() { end(err) }()
	return c.conn.GetPushResult(ctx, partition, clientID, clientCommitID)
}

func (c *wconn) HorizonSeq(ctx context.Context, partition string) (_ int64, err error) {
	ctx, end := c.hooks.start(ctx, "Conn.HorizonSeq", partition)
	defer func() { end(err) }()
	return c.conn.HorizonSeq(ctx, partition)
}

func (c *wconn) SetHorizonSeq(ctx context.Context, partition string, seq int64) (err error) {
	ctx, end := c.hooks.start(ctx, "Conn.SetHorizonSeq", partition)
	defer func() { end(err) }()
	return c.conn.SetHorizonSeq(ctx, partition, seq)
}

func (c *wconn) PruneCommitsThrough(ctx context.Context, partition string, seq int64) (_ int64, err error) {
	ctx, end := c.hooks.start(ctx, "Conn.PruneCommitsThrough", partition)
	defer func() { end(err) }()
	return c.conn.PruneCommitsThrough(ctx, partition, seq)
}

func (c *wconn) DeletePushResultsBefore(ctx context.Context, partition string, beforeMs int64, limit int) (_ int64, err error) {
	ctx, end := c.hooks.start(ctx, "Conn.DeletePushResultsBefore", partition)
	defer func() { end(err) }()
	return c.conn.DeletePushResultsBefore(ctx, partition, beforeMs, limit)
}

func (c *wconn) DeleteClientRecordsBefore(ctx context.Context, partition string, beforeMs int64, limit int) (_ int64, err error) {
	ctx, end := c.hooks.start(ctx, "Conn.DeleteClientRecordsBefore", partition)
	defer func() { end(err) }()
	return c.conn.DeleteClientRecordsBefore(ctx, partition, beforeMs, limit)
}

func (c *wconn) MinClientCursor(ctx context.Context, partition string, updatedSinceMs, atLeast int64) (_ int64, _ bool, err error) {
	ctx, end := c.hooks.start(ctx, "Conn.MinClientCursor", partition)
	defer func() { end(err) }()
	return c.conn.MinClientCursor(ctx, partition, updatedSinceMs, atLeast)
}

func (c *wconn) GetClientRecord(ctx context.Context, partition, clientID string) (_ ClientRecord, _ bool, err error) {
	ctx, end := c.hooks.start(ctx, "Conn.GetClientRecord", partition)
	defer func() { end(err) }()
	return c.conn.GetClientRecord(ctx, partition, clientID)
}

func (c *wconn) PutClientRecord(ctx context.Context, partition string, rec ClientRecord) (err error) {
	ctx, end := c.hooks.start(ctx, "Conn.PutClientRecord", partition)
	defer func() { end(err) }()
	return c.conn.PutClientRecord(ctx, partition, rec)
}

func (c *wconn) ListClientCursors(ctx context.Context, partition, afterClientID string, limit int) (_ []ClientCursor, err error) {
	ctx, end := c.hooks.start(ctx, "Conn.ListClientCursors", partition)
	defer func() { end(err) }()
	return c.conn.ListClientCursors(ctx, partition, afterClientID, limit)
}

func (c *wconn) TouchPartition(ctx context.Context, partition string, atMs int64, initialEpoch string) (_ PartitionEntry, err error) {
	ctx, end := c.hooks.start(ctx, "Conn.TouchPartition", partition)
	defer func() { end(err) }()
	return c.conn.TouchPartition(ctx, partition, atMs, initialEpoch)
}

func (c *wconn) RotatePartitionLogEpoch(ctx context.Context, partition, epoch string, atMs int64) (_ PartitionEntry, err error) {
	ctx, end := c.hooks.start(ctx, "Conn.RotatePartitionLogEpoch", partition)
	defer func() { end(err) }()
	return c.conn.RotatePartitionLogEpoch(ctx, partition, epoch, atMs)
}

func (c *wconn) ListPartitionRegistry(ctx context.Context, afterPartition string, limit int) (_ []PartitionEntry, err error) {
	ctx, end := c.hooks.start(ctx, "Conn.ListPartitionRegistry", "")
	defer func() { end(err) }()
	return c.conn.ListPartitionRegistry(ctx, afterPartition, limit)
}

func (c *wconn) ListPartitions(ctx context.Context, afterPartition string, limit int) (_ []string, err error) {
	ctx, end := c.hooks.start(ctx, "Conn.ListPartitions", "")
	defer func() { end(err) }()
	return c.conn.ListPartitions(ctx, afterPartition, limit)
}

func (c *wconn) Close() (err error) {
	_, end := c.hooks.start(context.Background(), "Conn.Close", "")
	defer func() { end(err) }()
	return c.conn.Close()
}

// wtx wraps the core Tx methods; see wconn.
type wtx struct {
	tx    Tx
	hooks Hooks
}

// Unwrap returns the wrapped Tx.
func (t *wtx) Unwrap() Tx { return t.tx }

func (t *wtx) Partition() string { return t.tx.Partition() }

func (t *wtx) GetRow(ctx context.Context, table, id string) (_ Row, _ bool, err error) {
	ctx, end := t.hooks.start(ctx, "Tx.GetRow", t.tx.Partition())
	defer func() { end(err) }()
	return t.tx.GetRow(ctx, table, id)
}

func (t *wtx) ScanRows(ctx context.Context, q ScanQuery) (_ []Row, err error) {
	ctx, end := t.hooks.start(ctx, "Tx.ScanRows", t.tx.Partition())
	defer func() { end(err) }()
	return t.tx.ScanRows(ctx, q)
}

func (t *wtx) GetPushResult(ctx context.Context, clientID, clientCommitID string) (_ PushResult, _ bool, err error) {
	ctx, end := t.hooks.start(ctx, "Tx.GetPushResult", t.tx.Partition())
	defer func() { end(err) }()
	return t.tx.GetPushResult(ctx, clientID, clientCommitID)
}

func (t *wtx) UpsertRow(ctx context.Context, table string, row Row) (err error) {
	ctx, end := t.hooks.start(ctx, "Tx.UpsertRow", t.tx.Partition())
	defer func() { end(err) }()
	return t.tx.UpsertRow(ctx, table, row)
}

func (t *wtx) DeleteRow(ctx context.Context, table, id string) (err error) {
	ctx, end := t.hooks.start(ctx, "Tx.DeleteRow", t.tx.Partition())
	defer func() { end(err) }()
	return t.tx.DeleteRow(ctx, table, id)
}

func (t *wtx) AppendCommit(ctx context.Context, c CommitInput) (_ int64, err error) {
	ctx, end := t.hooks.start(ctx, "Tx.AppendCommit", t.tx.Partition())
	defer func() { end(err) }()
	return t.tx.AppendCommit(ctx, c)
}

func (t *wtx) PutPushResult(ctx context.Context, clientID, clientCommitID string, r PushResult) (err error) {
	ctx, end := t.hooks.start(ctx, "Tx.PutPushResult", t.tx.Partition())
	defer func() { end(err) }()
	return t.tx.PutPushResult(ctx, clientID, clientCommitID, r)
}

func (t *wtx) CommitRejected(ctx context.Context, clientID, clientCommitID string, r PushResult) (err error) {
	ctx, end := t.hooks.start(ctx, "Tx.CommitRejected", t.tx.Partition())
	defer func() { end(err) }()
	return t.tx.CommitRejected(ctx, clientID, clientCommitID, r)
}

func (t *wtx) Commit(ctx context.Context) (err error) {
	ctx, end := t.hooks.start(ctx, "Tx.Commit", t.tx.Partition())
	defer func() { end(err) }()
	return t.tx.Commit(ctx)
}

func (t *wtx) Rollback(ctx context.Context) (err error) {
	ctx, end := t.hooks.start(ctx, "Tx.Rollback", t.tx.Partition())
	defer func() { end(err) }()
	return t.tx.Rollback(ctx)
}
