// Package driver defines the seam between syncstore and a storage engine:
// the interfaces a driver implements, the plain types that cross the seam,
// and the one error type with its stable codes. It imports only the
// standard library, so a third-party driver depends on nothing else.
//
// # Writing a driver
//
//  1. Implement Driver, Conn and Tx. Every method of Conn and Tx is core:
//     docs/contract.md's rule groups SCH, ROW/VAL, P, TX, SEQ, WIN, LOG, SCAN,
//     PR, CR, REG, HZ and ERR bind every driver. Each method's comment names
//     its rules.
//  2. Input is already valid. The sync package enforces group V (ids,
//     values, limits, filters, schema identifiers) before a driver is
//     called, so a driver never sees malformed input; it must still behave
//     exactly as stated on valid input, including edge values.
//  3. Return *Error values with the codes of errors.go. Wrap engine errors
//     with Wrap(CodeInternal or CodeUnavailable, err, "what failed"); never
//     put a row value, scope value or partition name in a message (V-10).
//  4. Register in init: sync.Register("name", YourDriver{}).
//  5. Optional capabilities (capabilities.go) are pairs of interfaces: a
//     Conn half and, where a push writes, a Tx half. Implement both halves
//     or neither; conformance fails a driver with one half (ERR-3).
//  6. Run the conformance suite: conformance.Run(t, harness) in a test of
//     your own package, or cmd/conformance. See docs/writing-a-driver.md.
//
// The rules that most often trip a new driver: a Tx serializes against
// every other Tx of the same partition from Begin to its end (TX-1); ids
// order bytewise (SCAN-1); the first push result written wins (PR-3); a
// window read never splits a commit (WIN-4) and checks its cursor against
// the horizon and head of its own snapshot (HZ-4, WIN-8); a rolled-back Tx
// consumes no commit number (SEQ-2).
package driver

import "context"

// Driver opens connections to one kind of engine. Implementations are
// registered by name with sync.Register and must be safe for concurrent use.
type Driver interface {
	// Open connects to the store described by dsn (its form is the
	// driver's; see its package doc). It returns CodeUnavailable when the
	// engine cannot be reached within ctx, CodeInvalidArgument for a
	// malformed DSN. The returned Conn is safe for concurrent use.
	Open(ctx context.Context, dsn string) (Conn, error)
}

// Conn is an open store: the core contract every driver implements. All
// methods are safe for concurrent use. Reads outside a Tx see only
// committed data (TX-4). Times are epoch milliseconds, sequences int64.
//
// Partition arguments are valid per V-1; an unknown partition reads as
// empty (P-2). Nothing ever crosses partitions (P-1).
type Conn interface {
	// EnsureSchema makes the store's application tables match schema
	// (SCH-3…SCH-7). schema has been compiled by sync (SCH-1, SCH-2).
	// Errors: CodeSchemaMismatch, CodeSchemaNewer,
	// CodeSchemaMigrationUnsupported; on any error nothing changes.
	// Until it succeeds, every table is unknown (CodeUnknownTable, SCH-8).
	EnsureSchema(ctx context.Context, schema Schema) error

	// Begin starts a write transaction on partition (TX-1). It blocks
	// until every other Tx of that partition has ended, or ctx ends
	// (returning ctx's error wrapped as CodeUnavailable). It never waits for
	// transactions of other partitions on engines that allow that.
	// ctx governs the whole Tx, as with database/sql's BeginTx: when it
	// ends before Commit, the Tx is rolled back and nothing of it is
	// written (TX-6). An optimistic engine may return at once and instead
	// fail Commit with CodeWriteConflict when another Tx of the partition
	// won (TX-9).
	Begin(ctx context.Context, partition string) (Tx, error)

	// MaxCommitSeq returns the highest commitSeq ever committed in the
	// partition, 0 if none (SEQ-5). It never drops, pruning included.
	MaxCommitSeq(ctx context.Context, partition string) (int64, error)
	// ReadCommitWindow returns the commits selected by q, oldest first
	// (WIN-1…WIN-7). Before anything is returned it checks q.AfterSeq
	// against the partition's horizon and head as they are in the
	// snapshot the commits are read from (one statement, one read
	// transaction, one batch; a read in several rounds checks in every
	// round): AfterSeq below the horizon → CodeCursorExpired (HZ-4),
	// above MaxCommitSeq → CodeCursorAhead (WIN-8); either way no commit
	// is returned. AfterSeq equal to the horizon or to MaxCommitSeq is
	// served, and ThroughSeq may lie beyond MaxCommitSeq (the read then
	// ends at the head). The checks hold for every filter, one with an
	// empty value list included. q.AfterSeq ≤ q.ThroughSeq (sync checks
	// it, WIN-8). Errors: CodeUnknownTable, CodeCursorExpired,
	// CodeCursorAhead.
	ReadCommitWindow(ctx context.Context, partition string, q WindowQuery) ([]Commit, error)
	// ReadCommits returns the whole commits selected by q, oldest first
	// (LOG-1…LOG-4): each with its metadata and every change it logged,
	// of every table, in their original order (Change.Table set on each;
	// an upsert with Values and RowVersion, a delete with neither, both
	// with Scopes, as WIN-6). Commits without changes and pruned commits
	// never appear. Reading stops after the commit that brings the changes
	// returned to ≥ q.LimitChanges; a commit is never split (LOG-2). The
	// cursor is checked as ReadCommitWindow checks it, against the horizon
	// and head of the snapshot the commits are read from, in every round
	// of a read made of several (LOG-3: below the horizon →
	// CodeCursorExpired, beyond the head → CodeCursorAhead, no commit
	// returned with either; ThroughSeq may lie beyond the head). The read
	// walks the log's primary key (partition, seq) from q.AfterSeq and
	// stops at the stop rule: never a scan of the log (LOG-4).
	// q.AfterSeq ≤ q.ThroughSeq and LimitChanges 1…10,000 (sync checks
	// them). Errors: CodeCursorExpired, CodeCursorAhead.
	ReadCommits(ctx context.Context, partition string, q CommitsQuery) ([]Commit, error)
	// CommitSeqBefore returns the largest retained commitSeq created
	// strictly before atMs, else 0 (HZ-3).
	CommitSeqBefore(ctx context.Context, partition string, atMs int64) (int64, error)

	// GetRow returns the current row and true, or a zero Row and false
	// when it does not exist (ROW-4). Errors: CodeUnknownTable.
	GetRow(ctx context.Context, partition, table, id string) (Row, bool, error)
	// ScanRows returns current rows selected by q, ascending bytewise by
	// id, at most q.Limit (SCAN-1…SCAN-5). Errors: CodeUnknownTable.
	ScanRows(ctx context.Context, partition string, q ScanQuery) ([]Row, error)

	// GetPushResult returns the stored push result and true, or false
	// (PR-2). A stored result that cannot be decoded → CodeIdempotencyCacheMiss (PR-5).
	GetPushResult(ctx context.Context, partition, clientID, clientCommitID string) (PushResult, bool, error)

	// HorizonSeq returns the partition's pruning horizon, 0 by default (HZ-1).
	HorizonSeq(ctx context.Context, partition string) (int64, error)
	// SetHorizonSeq raises the horizon to seq. A seq below the current
	// horizon is a no-op; a seq above MaxCommitSeq → CodeInvalidHorizon (HZ-1).
	SetHorizonSeq(ctx context.Context, partition string, seq int64) error
	// PruneCommitsThrough deletes the commits ≤ seq with their changes and
	// index entries, atomically, and returns how many commits it removed.
	// seq > horizon → CodeInvalidHorizon. Nothing else changes (HZ-2).
	PruneCommitsThrough(ctx context.Context, partition string, seq int64) (int64, error)

	// Retention (sync.Store.Prune, rule group RET, calls these). Each is
	// bounded and served by an index, so its cost follows what it reads
	// or deletes, never the size of the partition; limit is 1…10,000
	// (V-5), already checked.

	// DeletePushResultsBefore deletes at most limit push results of the
	// partition whose RecordedAtMs is strictly before beforeMs, oldest
	// first (RecordedAtMs, then client id, then client commit id,
	// bytewise), and returns how many it deleted; fewer than limit means
	// none older is left but rows a concurrent call was deleting. Nothing
	// else changes (PR-7).
	DeletePushResultsBefore(ctx context.Context, partition string, beforeMs int64, limit int) (int64, error)
	// DeleteClientRecordsBefore deletes at most limit client records of
	// the partition whose UpdatedAtMs is strictly before beforeMs, oldest
	// first (UpdatedAtMs, then client id, bytewise), and returns how many
	// it deleted; fewer than limit means none older is left but rows a
	// concurrent call was deleting. The bound is checked on the record
	// deleted, so a record a concurrent PutClientRecord refreshed is never
	// deleted. Nothing else changes (CR-4).
	DeleteClientRecordsBefore(ctx context.Context, partition string, beforeMs int64, limit int) (int64, error)
	// MinClientCursor returns the smallest Cursor among the partition's
	// client records with UpdatedAtMs ≥ updatedSinceMs and Cursor ≥
	// atLeast (≥ 0), and true; 0 and false when no record qualifies
	// (CR-5). It reads an index in cursor order and stops at the first
	// qualifying record: it never lists the partition's clients.
	MinClientCursor(ctx context.Context, partition string, updatedSinceMs, atLeast int64) (int64, bool, error)

	// GetClientRecord returns the client's record and true, or false (CR-1).
	GetClientRecord(ctx context.Context, partition, clientID string) (ClientRecord, bool, error)
	// PutClientRecord stores rec, replacing any record of rec.ClientID (CR-1).
	PutClientRecord(ctx context.Context, partition string, rec ClientRecord) error
	// AckClientCursor records a client's acknowledgement of the commits
	// through cursor (CR-6): when the partition holds a record of clientID
	// bound to actorID (ClientRecord.ActorID) and cursor ≤ the partition's
	// MaxCommitSeq, it sets the record's Cursor to max(Cursor, cursor) and
	// its UpdatedAtMs to max(UpdatedAtMs, atMs), in one atomic step against
	// every other write of the record (a PutClientRecord racing it lands
	// wholly before or wholly after it), and returns true. Nothing else of
	// the record changes (subscriptions, actor, wire version). Otherwise —
	// no record, another actor's, or cursor beyond the head — it writes
	// nothing and returns false; sync.Store.AckClientCursor tells those
	// apart. cursor ≥ 0 (sync checks it).
	AckClientCursor(ctx context.Context, partition, clientID, actorID string, cursor, atMs int64) (bool, error)
	// ListClientCursors returns one page of the partition's client
	// cursors (CR-2, CR-3): the records whose client id is bytewise
	// greater than afterClientID ("" = from the first), ascending
	// bytewise by client id, at most limit (1…10,000, V-5). Passing the
	// last client id of a page as the next afterClientID reaches every
	// record exactly once; a page shorter than limit is the last. Served
	// by an index walk that stops at the limit: a partition may hold
	// millions of clients.
	ListClientCursors(ctx context.Context, partition, afterClientID string, limit int) ([]ClientCursor, error)

	// TouchPartition registers the partition with initialEpoch and
	// EpochRequired=false, or refreshes only UpdatedAtMs of an existing
	// entry (initialEpoch is then ignored). Returns the stored entry (REG-1).
	TouchPartition(ctx context.Context, partition string, atMs int64, initialEpoch string) (PartitionEntry, error)
	// RotatePartitionLogEpoch atomically sets the entry's epoch,
	// EpochRequired=true and UpdatedAtMs, registering the partition if
	// needed, and deletes the partition's client records. Nothing else
	// changes (REG-2) — but a driver with capability leases deletes the
	// partition's leases in the same step (LEASE-5). Returns the stored entry.
	RotatePartitionLogEpoch(ctx context.Context, partition, epoch string, atMs int64) (PartitionEntry, error)
	// ListPartitionRegistry returns registry entries with partition >
	// afterPartition, ascending bytewise, at most limit (1…10,000) (REG-3).
	ListPartitionRegistry(ctx context.Context, afterPartition string, limit int) ([]PartitionEntry, error)
	// ListPartitions returns the names of registered partitions >
	// afterPartition, ascending bytewise, at most limit (REG-3).
	ListPartitions(ctx context.Context, afterPartition string, limit int) ([]string, error)

	// Close rolls back every Tx still open (nothing of it lands) and
	// releases the connection's resources. Every operation afterwards —
	// of the Conn, its capabilities and its Txs, except Tx.Rollback, then
	// a no-op — fails with CodeClosed, which is not retryable; a second
	// Close is a no-op (ERR-4).
	Close() error
}

// Tx is a write transaction on one partition (rule group TX). It is used by
// one goroutine at a time. Reads inside it see its own writes (TX-3);
// nothing of it is visible outside before Commit (TX-4). After Commit or
// Rollback every method returns CodeTxFinished, except Rollback, which is
// then a no-op (TX-5). If ctx is cancelled before Commit the Tx fails and
// nothing of it is written (TX-6); Commit's own outcome is TX-10's.
type Tx interface {
	// Partition returns the partition the Tx writes.
	Partition() string

	// GetRow, ScanRows and GetPushResult are Conn's reads, seeing the Tx's
	// own staged writes (TX-3).
	GetRow(ctx context.Context, table, id string) (Row, bool, error)
	ScanRows(ctx context.Context, q ScanQuery) ([]Row, error)
	GetPushResult(ctx context.Context, clientID, clientCommitID string) (PushResult, bool, error)

	// UpsertRow creates or fully replaces the row with row.ID, replacing
	// its scope-index entries (ROW-1, ROW-2). It replaces only on the row's
	// own primary key: a collision on a declared unique index fails with
	// CodeConstraintViolation and changes nothing, and the Tx stays usable
	// (SCH-10, TX-8). Errors: CodeUnknownTable; CodePushTooLarge when the
	// engine cannot store a row this large (PUSH-17: never a row of at
	// most 1,000,000 bytes of ordinary text), nothing staged, the Tx
	// usable.
	UpsertRow(ctx context.Context, table string, row Row) error
	// DeleteRow removes the row and its scope-index entries; deleting a
	// missing row is a no-op (ROW-3). It keeps the row id's tombstone:
	// the server version the removed row had, replacing an earlier
	// tombstone of the id, staged with the Tx like the delete (ROW-5).
	// Errors: CodeUnknownTable.
	DeleteRow(ctx context.Context, table, id string) error
	// RowTombstone returns the tombstone of the row id in the Tx's
	// partition (ROW-5): the server version the row had when DeleteRow
	// last removed it, seeing the Tx's own staged deletes (TX-3); 0 when
	// the id was never deleted. Only its value for a missing row is
	// used: while the row exists it may be any earlier tombstone. A
	// tombstone is kept as long as the partition's rows are (sync never
	// asks a driver to drop one). Errors: CodeUnknownTable.
	RowTombstone(ctx context.Context, table, id string) (int64, error)

	// AppendCommit records a commit and returns its commitSeq: the
	// partition's max + 1; two commits in one Tx get consecutive numbers
	// (SEQ-1…SEQ-3). The number is consumed only if the Tx commits (SEQ-2).
	// A driver whose engine caps one bound value splits the changes as it
	// needs (PUSH-17). Errors: CodePushTooLarge when one change is larger
	// than the engine can store, nothing staged.
	AppendCommit(ctx context.Context, c CommitInput) (int64, error)
	// PutPushResult stores r under (clientID, clientCommitID) unless a
	// result is already stored there, committed or staged in this Tx: the
	// first writer wins and a later put is ignored without error (PR-3).
	PutPushResult(ctx context.Context, clientID, clientCommitID string, r PushResult) error
	// CommitRejected discards every write staged in the Tx but the client
	// binding (BindClient, CR-7), stores r as in PutPushResult and
	// finishes the Tx, without releasing the partition in between (TX-8). It works after a constraint error inside the Tx. Its
	// outcome is reported exactly as Commit's (TX-10); on an optimistic
	// engine it fails with CodeWriteConflict when another Tx of the
	// partition committed first (TX-9), so a rejection never hides a
	// racing push's stored result.
	CommitRejected(ctx context.Context, clientID, clientCommitID string, r PushResult) error

	// BindClient binds clientID to actorID in the Tx's partition (CR-7),
	// the binding PULL-9 checks. When the partition holds no record of
	// clientID it stages one — ActorID actorID, WireVersion 0, Cursor −1,
	// UpdatedAtMs atMs, no subscriptions — that lands with Commit and with
	// CommitRejected alike (a rejected push binds its client id too); a
	// record bound to actorID is left as it is. A record bound to another
	// actor fails the Tx with CodeClientActorMismatch, at this call or at
	// the latest at Commit or CommitRejected (an engine that sends its
	// writes at Commit checks there), and nothing of the Tx is written.
	// The binding is atomic against every other Tx binding the client id:
	// of two first bindings of one client id to two actors at once,
	// exactly one lands and the other fails as above. Input is valid
	// (V-2, V-7).
	BindClient(ctx context.Context, clientID, actorID string, atMs int64) error

	// Commit makes every write of the Tx visible at once (TX-2), and says
	// truthfully whether it did (TX-10):
	//   - nil: the Tx landed.
	//   - CodeCommitOutcomeUnknown: the engine's answer was lost (ctx ended
	//     while the commit was in flight, the connection dropped) and the
	//     driver's own bounded look-up of its commit, made on a short
	//     context detached from ctx, failed too. The Tx may have landed:
	//     re-read what it wrote (a push's result) before anything else.
	//   - any other error: nothing of the Tx was written, and nothing of it
	//     ever will be. CodeWriteConflict on an optimistic engine that lost
	//     a race (TX-9); CodeUnavailable when ctx ended or the engine failed
	//     before the commit could take effect, or the look-up found it
	//     rolled back.
	// Commit honours ctx: it returns no later than ctx's deadline plus the
	// driver's documented look-up bound. The Tx is finished afterwards.
	Commit(ctx context.Context) error
	// Rollback discards every write of the Tx (TX-2); a second call is a
	// no-op (TX-5).
	Rollback(ctx context.Context) error
}

// RowKey names one row of a partition: its table and id.
type RowKey struct {
	Table string
	ID    string
}

// PushRead is the reads a push starts with (PushBeginner.BeginPush): the
// push result of its key and whether one is stored, and the current rows
// of the keys asked for — Rows[i] and Found[i] for keys[i], Rows[i] the
// zero Row when Found[i] is false — and Tombstones[i], the row id's
// tombstone (Tx.RowTombstone, ROW-5) when Found[i] is false (0 when
// Found[i] is true). When HasResult is true, Rows, Found and Tombstones
// may be nil (a replay reads no rows).
type PushRead struct {
	Result     PushResult
	HasResult  bool
	Rows       []Row
	Found      []bool
	Tombstones []int64
}

// PushBeginner is implemented by a Conn that can begin a push's Tx and make
// the reads the push starts with — its stored result, the current rows of
// its ops — in one round trip to the engine, or in fewer than one per
// row. Optional, and not a capability (no rule needs it; the suite checks
// it when present): without it sync.Store.Push calls Begin, GetPushResult,
// then GetRow once per op, with the same outcome at a higher cost — on an
// engine across a network each of those is a round trip (an HTTP request
// on D1).
//
// BeginPush returns exactly what Begin(ctx, partition) returns, and what
// GetPushResult(clientID, clientCommitID), GetRow(key.Table, key.ID) and,
// for a missing row, RowTombstone(key.Table, key.ID) for each key would
// return first thing in that Tx. Input is valid: V-1,
// V-2 and V-7, known tables, distinct keys, at most 1,000 of them. Errors:
// those of Begin, GetPushResult and GetRow (CodeIdempotencyCacheMiss for a
// result that cannot be decoded, PR-5); on an error no Tx is left open.
// A Conn that wraps another (for tracing, say) pushes row by row unless it
// forwards BeginPush too; sync.Hooks observe a Store without wrapping its
// Conn.
type PushBeginner interface {
	BeginPush(ctx context.Context, partition, clientID, clientCommitID string, keys []RowKey) (Tx, PushRead, error)
}

// GuardedBeginner is implemented by a Conn whose Txs can write on a
// condition checked as the write lands (GuardedTx), so that
// sync.Store.Push can apply a push without reading its rows first: on an
// engine across a network, one round trip fewer per push (PUSH-9).
// Optional, and not a capability (no rule needs it; the suite checks it
// when present, rule group GW): without it Push reads first, with the
// same outcome.
//
// BeginGuarded is Begin(ctx, partition) with the same errors, returning a
// GuardedTx.
type GuardedBeginner interface {
	BeginGuarded(ctx context.Context, partition string) (GuardedTx, error)
}

// GuardedTx is a Tx whose writes may carry a guard: a condition on the
// state they replace (GW-1, GW-3). A guard that does not hold fails the Tx
// — in the call that wrote it, or later in Commit — with CodeWriteConflict
// or CodeConstraintViolation, and nothing of the Tx is written, ever: its
// unguarded writes, commits and seqs included (GW-2). After a failed call
// the caller rolls the Tx back. A guarded write that collides with
// another row on a unique declared index fails the same way. Input is
// valid as for UpsertRow and PutPushResult.
type GuardedTx interface {
	Tx
	// UpsertRowGuarded is UpsertRow(table, row) on the condition that the
	// row's current server version is base (0: no row) and, when base >
	// 0, that its current scopes equal row.Scopes (GW-1). A driver may
	// check a condition that implies it (the scope columns' values equal
	// row's). Errors: those of UpsertRow, and GW-2's.
	UpsertRowGuarded(ctx context.Context, table string, row Row, base int64) error
	// PutPushResultGuarded is PutPushResult on the condition that no
	// result is stored or staged under the key (GW-3). Errors: those of
	// PutPushResult, and GW-2's.
	PutPushResultGuarded(ctx context.Context, clientID, clientCommitID string, r PushResult) error
}

// EngineVersioner is implemented by a Conn that can report the version of
// the engine it talks to (e.g. "SQLite 3.50.4"). Optional; reports use it.
type EngineVersioner interface {
	EngineVersion(ctx context.Context) (string, error)
}

// Aser is implemented by a Conn or a Tx that can hand the host the
// engine's own handle under it (the escape hatch of gocloud.dev's As):
// As sets *target when target is a pointer to a type the driver documents
// and reports whether it did; it never panics, whatever target is, and it
// returns false for every target it does not know. Optional: a Conn or Tx
// without As behaves as one whose As always returns false.
//
// On a Tx the handle is the engine transaction the Tx writes in, so a
// host writes its own tables atomically with the commit: they land with
// Commit and vanish with Rollback (TX-2), under the partition's
// serialization (TX-1). After Commit, CommitRejected or Rollback, As
// returns false, and a handle taken earlier must not be used. The host
// never ends the engine transaction through the handle. On a Conn the
// handle is the pool the driver runs on (the host's own, when it brought
// it); the Conn keeps owning it.
//
// Each driver's documentation lists its targets. As is safe to call
// concurrently with nothing else on a Tx (a Tx is used by one goroutine
// at a time); on a Conn it is safe for concurrent use.
type Aser interface {
	As(target any) bool
}

// AsOf calls x's As (Aser) with target, and returns false when x has no
// As. x is a Conn, a Tx or anything else; a nil x returns false.
func AsOf(x any, target any) bool {
	a, ok := x.(Aser)
	return ok && a.As(target)
}

// Provisioner is implemented by a Driver that can create fresh, empty,
// isolated stores for tests: the conformance CLI and benchmarks give every
// case its own store through it. Optional; a driver without it can still be
// tested with conformance.Run and a hand-written Harness.
type Provisioner interface {
	// Provision creates a new, empty store beside baseDSN ("" = the
	// driver's default place: a temporary file, a new database on the
	// default local server) and returns its DSN and a function that removes
	// it. drop is safe to call after every Conn to the store is closed.
	Provision(ctx context.Context, baseDSN string) (dsn string, drop func(context.Context) error, err error)
}

// Backuper is implemented by a Driver that can copy a whole store and put
// the copy back, for tests of a host's restore procedure (the conformance
// host's backup-restore capability, docs/syncular.md "Backup and
// restore"): every table the driver and the host's schema made, rows and
// registry included. It is test support beside Provisioner, not a
// production backup tool: an operator restores with the engine's own
// tools (pg_dump, mysqldump, the SQLite backup API, D1 Time Travel).
// Optional.
type Backuper interface {
	// Backup copies the whole store at dsn now and returns restore, which
	// replaces the store's whole content with that copy (the copy is kept:
	// restore may run again), and drop, which removes the copy. No Conn
	// to dsn may be open while Backup or restore runs (PostgreSQL copies
	// a database only while no session uses it); open a new Conn after
	// restore. Errors: CodeInvalidArgument (malformed dsn),
	// CodeUnavailable (the engine refused or could not be reached).
	Backup(ctx context.Context, dsn string) (restore, drop func(context.Context) error, err error)
}
