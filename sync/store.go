package sync

import (
	"context"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/syncstore/syncstore/driver"
)

// Store is an open store. Its engine calls are what a host serves clients
// with: [Store.Push], [Store.PushWith], [Store.PushCommand], [Store.Pull],
// [Store.PullTo], [Store.Prune], [Store.SubscribeCommits],
// [Store.ReadCommits], [Store.AckClientCursor], with [Store.EnsureSchema]
// and [NewWorker]. Its other methods are primitives and admin calls, each
// saying so in its first line (the package doc groups them).
//
// A Store is a driver.Conn behind the validation of
// docs/contract.md group V. It has the methods of driver.Conn with the same
// signatures; each checks its input first, in argument order (partition,
// then table, then the rest), and calls the driver only when the input is
// valid, so bad input writes nothing (V-9) and every engine rejects it the
// same way. Table names are checked against the schema this Store ensured
// (EnsureSchema); before that every table is unknown (SCH-8).
//
// A Store is safe for concurrent use.
type Store struct {
	conn   driver.Conn
	name   string
	schema atomic.Pointer[compiledSchema]
	retry  atomic.Pointer[RetryPolicy]
	push   atomic.Pointer[PushOptions]
	hooks  atomic.Pointer[Hooks]
	// replica serves the reads marked by AllowReplica (replica.go).
	replica atomic.Pointer[Store]
	// registered holds partitions this Store has registered, with its
	// last touch of each (REG-4, PULL-13, partitions.go).
	registered partitionSet
	// recordRefresh is Pull's record refresh age in ms (PULL-13).
	recordRefresh atomic.Int64
	// queries holds the authoritative-query slots (AQ-7, query_concurrency.go).
	queries atomic.Pointer[queryLimiter]
	// closed is closed by Close: waits for a query slot end with
	// CodeClosed (ERR-4) rather than their Timeout.
	closed    chan struct{}
	closeOnce gosync.Once
}

// OpenConn returns a Store over an already-open driver.Conn, for hosts and
// tests that open the driver themselves. DriverName is then "". The Store
// owns conn: Close closes it. No schema is ensured yet.
func OpenConn(conn driver.Conn) *Store {
	if conn == nil {
		panic("sync: OpenConn called with a nil driver.Conn")
	}
	s := &Store{conn: conn, closed: make(chan struct{})}
	s.recordRefresh.Store(DefaultRetentionPolicy.RecordRefresh().Milliseconds())
	return s
}

// SetRecordRefresh sets how long Pull may leave an unchanged client
// record as it is (PULL-13): a pull whose record would change in nothing
// but its time writes it only when the stored updatedAtMs is d or more
// older than the pull's time. A client's stored updatedAtMs is then never
// more than d behind its last pull, so it is active for a Prune whose
// ActiveWindow exceeds d by the time since that pull (RET-1): set d to
// pol.RecordRefresh() for the policy pol you prune with, right after
// Open (each Prune also lowers it to its policy's, but records written
// before that lag by up to the age they were written under). Whole
// milliseconds; 0 or negative: every pull writes its record. Default:
// DefaultRetentionPolicy.RecordRefresh(). Safe for concurrent use.
func (s *Store) SetRecordRefresh(d time.Duration) {
	s.recordRefresh.Store(max(d.Milliseconds(), 0))
}

// lowerRecordRefresh lowers the Store's record refresh age to pol's
// (PULL-13) when that is shorter, so that the pulls after a Prune keep
// RET-1 for the window that Prune used without the host calling
// SetRecordRefresh. It never raises it.
func (s *Store) lowerRecordRefresh(pol RetentionPolicy) {
	r := pol.RecordRefresh().Milliseconds()
	for {
		cur := s.recordRefresh.Load()
		if cur <= r || s.recordRefresh.CompareAndSwap(cur, r) {
			return
		}
	}
}

// Conn returns the driver.Conn under the Store. Calls made on it directly
// skip validation: the caller then owns V-1…V-10.
func (s *Store) Conn() driver.Conn { return s.conn }

// As is the escape hatch to the engine handle under the Store (gocloud
// style, driver.Aser): when target is a pointer to a handle type the
// driver documents, As sets *target to the pool the driver runs on and
// returns true; otherwise it returns false and leaves *target alone. It
// never panics. The Store keeps owning the handle (whether the driver
// opened it or the host brought it): do not close it while the Store is
// open. Writes made through it are outside every Tx: to write with a
// commit, use Tx.As.
//
// Targets per bundled driver: postgres **pgxpool.Pool; mysql **sql.DB;
// sqlite and d1http none (As returns false; see their docs).
func (s *Store) As(target any) bool { return driver.AsOf(s.conn, target) }

// DriverName returns the name the Store was opened with (Open), or "" for
// OpenConn.
func (s *Store) DriverName() string { return s.name }

// Close closes the driver.Conn, rolling back its open Txs. Every call
// afterwards fails with CodeClosed (ErrClosed, not retryable), and a
// second Close is a no-op (as the driver's, ERR-4).
func (s *Store) Close() (err error) {
	ctx := context.Background()
	defer s.observe(&ctx, "Store.Close", "").done(&err)
	s.closeOnce.Do(func() { close(s.closed) })
	return s.conn.Close()
}

// Capabilities lists the optional capabilities the driver's Conn
// implements, in driver.AllCapabilities order (detected by type
// assertion, never by name).
func (s *Store) Capabilities() []Capability { return driver.ConnCapabilities(s.conn) }

// Supports reports whether the driver's Conn implements capability c.
func (s *Store) Supports(c Capability) bool { return driver.ConnHas(s.conn, c) }

// EnsureSchema compiles schema (CompileSchema: SCH-1, SCH-2 →
// CodeSchemaInvalid, the driver not called), then makes the store match it
// through the driver (SCH-3…SCH-7). On success the Store validates table
// names and values against this schema from then on; on failure the
// previously ensured schema, if any, stays in force.
func (s *Store) EnsureSchema(ctx context.Context, schema Schema) (err error) {
	defer s.observe(&ctx, "Store.EnsureSchema", "").done(&err)
	if err := checkCtx(ctx, "EnsureSchema"); err != nil {
		return err
	}
	compiled, err := CompileSchema(schema)
	if err != nil {
		return err
	}
	if err := s.conn.EnsureSchema(ctx, compiled); err != nil {
		return err
	}
	s.schema.Store(newCompiledSchema(compiled))
	return nil
}

// Schema returns a copy of the schema this Store ensured, and false when
// EnsureSchema has not succeeded on it yet.
func (s *Store) Schema() (Schema, bool) {
	cs := s.schema.Load()
	if cs == nil {
		return Schema{}, false
	}
	return copySchema(cs.schema), true
}

// Begin is a primitive (TX): hosts write client commits with [Store.Push],
// which begins its own Tx.
//
// Begin starts a write transaction on partition (TX-1), validated per V-1.
// The Tx validates its input against the schema ensured when it began.
func (s *Store) Begin(ctx context.Context, partition string) (_ *Tx, err error) {
	defer s.observe(&ctx, "Store.Begin", partition).done(&err)
	if err := checkCtx(ctx, "Begin"); err != nil {
		return *new(*Tx), err
	}
	if err := idPartition.check("Begin", partition); err != nil {
		return nil, err
	}
	return s.begin(ctx, partition)
}

// begin is Begin on a valid partition, unobserved: Push and RunInTx begin
// their Txs with it (their Call covers it).
func (s *Store) begin(ctx context.Context, partition string) (*Tx, error) {
	dtx, err := s.conn.Begin(ctx, partition)
	if err != nil {
		return nil, err
	}
	return s.newTx(dtx), nil
}

// newTx wraps a driver.Tx the Store's driver began.
func (s *Store) newTx(dtx driver.Tx) *Tx {
	return &Tx{tx: dtx, schema: s.schema.Load(), store: s}
}

// MaxCommitSeq is a primitive (SEQ-5): [Store.Pull] reads the head for
// every subscription it serves.
//
// MaxCommitSeq is driver.Conn's, after V-1.
func (s *Store) MaxCommitSeq(ctx context.Context, partition string) (_ int64, err error) {
	defer s.observe(&ctx, "Store.MaxCommitSeq", partition).done(&err)
	if err := checkCtx(ctx, "MaxCommitSeq"); err != nil {
		return *new(int64), err
	}
	if err := idPartition.check("MaxCommitSeq", partition); err != nil {
		return 0, err
	}
	return s.reader(ctx).MaxCommitSeq(ctx, partition)
}

// ReadCommitWindow is a primitive (WIN): hosts serve incremental pulls with
// [Store.Pull], which reads the windows itself.
//
// ReadCommitWindow is driver.Conn's, after V-1; a known table (SCH-8);
// LimitChanges 1…10,000 (V-5); 0 ≤ AfterSeq ≤ ThroughSeq
// (CodeInvalidArgument, WIN-8); a filter with ≥ 1 key (V-6). The driver
// then checks the cursor in the snapshot of the read: AfterSeq below the
// horizon → CodeCursorExpired (HZ-4: the client must bootstrap again),
// beyond the head → CodeCursorAhead (WIN-8); no commit is returned with
// either. A filter key with an empty value list matches nothing, but the
// read still goes to the driver, so its cursor is checked like any other.
func (s *Store) ReadCommitWindow(ctx context.Context, partition string, q WindowQuery) (_ []Commit, err error) {
	defer s.observe(&ctx, "Store.ReadCommitWindow", partition).done(&err)
	if err := checkCtx(ctx, "ReadCommitWindow"); err != nil {
		return *new([]Commit), err
	}
	if err := s.checkWindow("ReadCommitWindow", partition, q); err != nil {
		return nil, err
	}
	if r := s.reader(ctx); r != s.conn {
		commits, err := r.ReadCommitWindow(ctx, partition, q)
		if CodeOf(err) != CodeCursorAhead {
			return commits, err
		}
		// The replica trails the client's cursor: the primary serves it,
		// so the cursor never goes backwards (REP-3).
	}
	return s.conn.ReadCommitWindow(ctx, partition, q)
}

func (s *Store) checkWindow(op, partition string, q WindowQuery) error {
	if err := idPartition.check(op, partition); err != nil {
		return err
	}
	if _, err := s.schema.Load().table(op, q.Table); err != nil {
		return err
	}
	if err := checkLimit(op, "limitChanges", q.LimitChanges, MaxLimit); err != nil {
		return err
	}
	if err := checkSeq(op, "afterSeq", q.AfterSeq, "WIN-8"); err != nil {
		return err
	}
	if q.ThroughSeq < q.AfterSeq {
		return argErr(op, "WIN-8", "afterSeq is above throughSeq")
	}
	_, err := checkFilter(op, q.Filter)
	return err
}

// CommitSeqBefore is a primitive (HZ-3): hosts apply retention with
// [Store.Prune], which uses it for the force age.
//
// CommitSeqBefore is driver.Conn's, after V-1 (atMs is any int64).
func (s *Store) CommitSeqBefore(ctx context.Context, partition string, atMs int64) (_ int64, err error) {
	defer s.observe(&ctx, "Store.CommitSeqBefore", partition).done(&err)
	if err := checkCtx(ctx, "CommitSeqBefore"); err != nil {
		return *new(int64), err
	}
	if err := idPartition.check("CommitSeqBefore", partition); err != nil {
		return 0, err
	}
	return s.conn.CommitSeqBefore(ctx, partition, atMs)
}

// GetRow is a primitive (ROW): clients get rows through [Store.Pull];
// GetRow is for the host's own reads.
//
// GetRow is driver.Conn's, after V-1, SCH-8 and V-2 on id.
func (s *Store) GetRow(ctx context.Context, partition, table, id string) (_ Row, _ bool, err error) {
	defer s.observe(&ctx, "Store.GetRow", partition).done(&err)
	if err := checkCtx(ctx, "GetRow"); err != nil {
		return *new(Row), *new(bool), err
	}
	const op = "GetRow"
	if err := idPartition.check(op, partition); err != nil {
		return Row{}, false, err
	}
	if err := checkGetRow(op, s.schema.Load(), table, id); err != nil {
		return Row{}, false, err
	}
	return s.reader(ctx).GetRow(ctx, partition, table, id)
}

func checkGetRow(op string, cs *compiledSchema, table, id string) error {
	if _, err := cs.table(op, table); err != nil {
		return err
	}
	return idRow.check(op, id)
}

// ScanRows is a primitive (SCAN): hosts bootstrap subscriptions with
// [Store.Pull], which scans page by page itself.
//
// ScanRows is driver.Conn's, after V-1; a known table (SCH-8); Limit
// 1…10,000 (V-5); a filter with ≥ 1 key (V-6); AfterRowID "" or V-2. A
// filter key with an empty value list matches nothing: the result is empty
// and the driver is not called.
func (s *Store) ScanRows(ctx context.Context, partition string, q ScanQuery) (_ []Row, err error) {
	defer s.observe(&ctx, "Store.ScanRows", partition).done(&err)
	if err := checkCtx(ctx, "ScanRows"); err != nil {
		return *new([]Row), err
	}
	const op = "ScanRows"
	if err := idPartition.check(op, partition); err != nil {
		return nil, err
	}
	empty, err := checkScan(op, s.schema.Load(), q)
	if err != nil || empty {
		return nil, err
	}
	return s.reader(ctx).ScanRows(ctx, partition, q)
}

func checkScan(op string, cs *compiledSchema, q ScanQuery) (empty bool, err error) {
	if _, err := cs.table(op, q.Table); err != nil {
		return false, err
	}
	if err := checkLimit(op, "limit", q.Limit, MaxLimit); err != nil {
		return false, err
	}
	empty, err = checkFilter(op, q.Filter)
	if err != nil {
		return false, err
	}
	return empty, idAfterRow.checkOptional(op, q.AfterRowID)
}

// GetPushResult is a primitive (PR): [Store.Push] answers a retried commit
// from its stored result itself.
//
// GetPushResult is driver.Conn's, after V-1, V-2 and V-7.
func (s *Store) GetPushResult(ctx context.Context, partition, clientID, clientCommitID string) (_ PushResult, _ bool, err error) {
	defer s.observe(&ctx, "Store.GetPushResult", partition).done(&err)
	if err := checkCtx(ctx, "GetPushResult"); err != nil {
		return *new(PushResult), *new(bool), err
	}
	const op = "GetPushResult"
	if err := firstErr(idPartition.check(op, partition), checkClientID(op, clientID),
		idClientCommit.check(op, clientCommitID)); err != nil {
		return PushResult{}, false, err
	}
	return s.conn.GetPushResult(ctx, partition, clientID, clientCommitID)
}

// HorizonSeq is a primitive (HZ): hosts apply retention with [Store.Prune],
// which moves the horizon.
//
// HorizonSeq is driver.Conn's, after V-1.
func (s *Store) HorizonSeq(ctx context.Context, partition string) (_ int64, err error) {
	defer s.observe(&ctx, "Store.HorizonSeq", partition).done(&err)
	if err := checkCtx(ctx, "HorizonSeq"); err != nil {
		return *new(int64), err
	}
	if err := idPartition.check("HorizonSeq", partition); err != nil {
		return 0, err
	}
	return s.conn.HorizonSeq(ctx, partition)
}

// SetHorizonSeq is a primitive (HZ-1): hosts apply retention with
// [Store.Prune], which moves the horizon.
//
// SetHorizonSeq is driver.Conn's, after V-1 and seq ≥ 0
// (CodeInvalidArgument); HZ-1's bounds are the driver's.
func (s *Store) SetHorizonSeq(ctx context.Context, partition string, seq int64) (err error) {
	defer s.observe(&ctx, "Store.SetHorizonSeq", partition).done(&err)
	if err := checkCtx(ctx, "SetHorizonSeq"); err != nil {
		return err
	}
	const op = "SetHorizonSeq"
	if err := firstErr(idPartition.check(op, partition), checkSeq(op, "seq", seq, "HZ-1")); err != nil {
		return err
	}
	return s.conn.SetHorizonSeq(ctx, partition, seq)
}

// PruneCommitsThrough is a primitive (HZ-2): hosts apply retention with
// [Store.Prune], which prunes through the horizon.
//
// PruneCommitsThrough is driver.Conn's, after V-1 and seq ≥ 0
// (CodeInvalidArgument); HZ-2's bound is the driver's.
func (s *Store) PruneCommitsThrough(ctx context.Context, partition string, seq int64) (_ int64, err error) {
	defer s.observe(&ctx, "Store.PruneCommitsThrough", partition).done(&err)
	if err := checkCtx(ctx, "PruneCommitsThrough"); err != nil {
		return *new(int64), err
	}
	const op = "PruneCommitsThrough"
	if err := firstErr(idPartition.check(op, partition), checkSeq(op, "seq", seq, "HZ-2")); err != nil {
		return 0, err
	}
	return s.conn.PruneCommitsThrough(ctx, partition, seq)
}

// GetClientRecord is a primitive (CR): [Store.Pull] writes client records
// and [Store.Prune] reads them.
//
// GetClientRecord is driver.Conn's, after V-1, V-2 and V-7.
func (s *Store) GetClientRecord(ctx context.Context, partition, clientID string) (_ ClientRecord, _ bool, err error) {
	defer s.observe(&ctx, "Store.GetClientRecord", partition).done(&err)
	if err := checkCtx(ctx, "GetClientRecord"); err != nil {
		return *new(ClientRecord), *new(bool), err
	}
	const op = "GetClientRecord"
	if err := firstErr(idPartition.check(op, partition), checkClientID(op, clientID)); err != nil {
		return ClientRecord{}, false, err
	}
	return s.conn.GetClientRecord(ctx, partition, clientID)
}

// PutClientRecord is a primitive (CR): [Store.Pull] writes client records;
// [Store.AckClientCursor] raises a cursor.
//
// PutClientRecord is driver.Conn's, after V-1 and the record's checks:
// client id (V-2, V-7), actor id (V-2), each subscription's id (V-2),
// table (SCH-8) and filter text (V-6).
func (s *Store) PutClientRecord(ctx context.Context, partition string, rec ClientRecord) (err error) {
	defer s.observe(&ctx, "Store.PutClientRecord", partition).done(&err)
	if err := checkCtx(ctx, "PutClientRecord"); err != nil {
		return err
	}
	const op = "PutClientRecord"
	if err := idPartition.check(op, partition); err != nil {
		return err
	}
	if err := s.schema.Load().checkClientRecord(op, rec); err != nil {
		return err
	}
	return s.conn.PutClientRecord(ctx, partition, rec)
}

// ListClientCursors is a primitive (CR-2, CR-3): [Store.Prune] finds the
// active-cursor floor itself.
//
// ListClientCursors is driver.Conn's: one page of the partition's client
// cursors, ascending bytewise by client id after afterClientID (exclusive;
// "" = from the first), at most limit (CR-2, CR-3). Checks: V-1
// partition; afterClientID "" or a valid client id (V-2, V-7); limit
// 1…10,000 (CodeInvalidLimit, V-5).
func (s *Store) ListClientCursors(ctx context.Context, partition, afterClientID string, limit int) (_ []ClientCursor, err error) {
	defer s.observe(&ctx, "Store.ListClientCursors", partition).done(&err)
	if err := checkCtx(ctx, "ListClientCursors"); err != nil {
		return *new([]ClientCursor), err
	}
	const op = "ListClientCursors"
	if err := firstErr(idPartition.check(op, partition), checkAfterClientID(op, afterClientID),
		checkLimit(op, "limit", limit, MaxLimit)); err != nil {
		return nil, err
	}
	return s.conn.ListClientCursors(ctx, partition, afterClientID, limit)
}

// TouchPartition is a primitive (REG-1): [Store.Pull] touches the partition
// it serves.
//
// TouchPartition is driver.Conn's, after V-1 and a non-empty epoch
// (REG-1, V-2 → CodeInvalidArgument).
func (s *Store) TouchPartition(ctx context.Context, partition string, atMs int64, initialEpoch string) (_ PartitionEntry, err error) {
	defer s.observe(&ctx, "Store.TouchPartition", partition).done(&err)
	if err := checkCtx(ctx, "TouchPartition"); err != nil {
		return *new(PartitionEntry), err
	}
	const op = "TouchPartition"
	if err := firstErr(idPartition.check(op, partition), idEpoch.check(op, initialEpoch)); err != nil {
		return PartitionEntry{}, err
	}
	return s.conn.TouchPartition(ctx, partition, atMs, initialEpoch)
}

// RotatePartitionLogEpoch is a primitive (REG-2), an operator's call: no
// engine call rotates an epoch.
// With capability leases, the rotation deletes the partition's auth
// leases in the same step (LEASE-5).
//
// RotatePartitionLogEpoch is driver.Conn's, after V-1 and a non-empty
// epoch (REG-1, V-2 → CodeInvalidArgument).
func (s *Store) RotatePartitionLogEpoch(ctx context.Context, partition, epoch string, atMs int64) (_ PartitionEntry, err error) {
	defer s.observe(&ctx, "Store.RotatePartitionLogEpoch", partition).done(&err)
	if err := checkCtx(ctx, "RotatePartitionLogEpoch"); err != nil {
		return *new(PartitionEntry), err
	}
	const op = "RotatePartitionLogEpoch"
	if err := firstErr(idPartition.check(op, partition), idEpoch.check(op, epoch)); err != nil {
		return PartitionEntry{}, err
	}
	e, err := s.conn.RotatePartitionLogEpoch(ctx, partition, epoch, atMs)
	if err != nil {
		return PartitionEntry{}, err
	}
	s.registered.add(partition, e, atMs) // this Store's pulls answer the new epoch (PULL-13)
	return e, nil
}

// ListPartitionRegistry is a primitive (REG-3): [Store.Push] and
// [Store.Pull] register partitions (REG-4, PULL-8); list them to walk
// every partition.
//
// ListPartitionRegistry is driver.Conn's, after afterPartition "" or V-1
// and limit 1…10,000 (V-5).
func (s *Store) ListPartitionRegistry(ctx context.Context, afterPartition string, limit int) (_ []PartitionEntry, err error) {
	defer s.observe(&ctx, "Store.ListPartitionRegistry", "").done(&err)
	if err := checkCtx(ctx, "ListPartitionRegistry"); err != nil {
		return *new([]PartitionEntry), err
	}
	const op = "ListPartitionRegistry"
	if err := firstErr(idAfterPartition.checkOptional(op, afterPartition), checkLimit(op, "limit", limit, MaxLimit)); err != nil {
		return nil, err
	}
	return s.conn.ListPartitionRegistry(ctx, afterPartition, limit)
}

// ListPartitions is a primitive (REG-3): [Store.Push] and [Store.Pull]
// register partitions (REG-4, PULL-8); list them to run [Store.Prune] or a [Worker] over every partition.
//
// ListPartitions is driver.Conn's, after afterPartition "" or V-1 and
// limit 1…10,000 (V-5).
func (s *Store) ListPartitions(ctx context.Context, afterPartition string, limit int) (_ []string, err error) {
	defer s.observe(&ctx, "Store.ListPartitions", "").done(&err)
	if err := checkCtx(ctx, "ListPartitions"); err != nil {
		return *new([]string), err
	}
	const op = "ListPartitions"
	if err := firstErr(idAfterPartition.checkOptional(op, afterPartition), checkLimit(op, "limit", limit, MaxLimit)); err != nil {
		return nil, err
	}
	return s.conn.ListPartitions(ctx, afterPartition, limit)
}
