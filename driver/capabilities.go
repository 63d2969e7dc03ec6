package driver

import "context"

// Capability names an optional group of rules a driver may declare by
// implementing its interfaces. Detection is by type assertion only, never
// by driver name.
type Capability string

// The optional capabilities of docs/contract.md.
const (
	CapReactions          Capability = "reactions"
	CapAuthoritativeQuery Capability = "authoritative-query"
	CapIndexLookup        Capability = "index-lookup"
	CapBlobRefs           Capability = "blob-refs"
	CapAdmin              Capability = "admin"
	CapCommitFanout       Capability = "commit-fanout"
	CapReactionsAcross    Capability = "reactions-across"
	CapLeases             Capability = "leases"
)

// AllCapabilities lists every optional capability in a fixed order.
var AllCapabilities = []Capability{
	CapReactions, CapAuthoritativeQuery, CapIndexLookup, CapBlobRefs, CapAdmin, CapCommitFanout, CapReactionsAcross,
	CapLeases,
}

// HasTxHalf reports whether the capability has a Tx half.
func (c Capability) HasTxHalf() bool {
	switch c {
	case CapReactions, CapIndexLookup, CapBlobRefs:
		return true
	}
	return false
}

// ConnHas reports whether conn implements the Conn half of c.
func ConnHas(conn Conn, c Capability) bool {
	switch c {
	case CapReactions:
		_, ok := conn.(ReactionsConn)
		return ok
	case CapAuthoritativeQuery:
		_, ok := conn.(AuthoritativeQueryConn)
		return ok
	case CapIndexLookup:
		_, ok := conn.(IndexLookupConn)
		return ok
	case CapBlobRefs:
		_, ok := conn.(BlobRefsConn)
		return ok
	case CapAdmin:
		_, ok := conn.(AdminConn)
		return ok
	case CapCommitFanout:
		_, ok := conn.(CommitFanoutConn)
		return ok
	case CapReactionsAcross:
		_, ok := conn.(ReactionsAcrossConn)
		return ok
	case CapLeases:
		_, ok := conn.(LeasesConn)
		return ok
	}
	return false
}

// TxHas reports whether tx implements the Tx half of c. For a capability
// without a Tx half it reports false.
func TxHas(tx Tx, c Capability) bool {
	switch c {
	case CapReactions:
		_, ok := tx.(ReactionsTx)
		return ok
	case CapIndexLookup:
		_, ok := tx.(IndexLookupTx)
		return ok
	case CapBlobRefs:
		_, ok := tx.(BlobRefsTx)
		return ok
	}
	return false
}

// ConnCapabilities returns the capabilities whose Conn half conn
// implements, in AllCapabilities order. It does not check Tx halves: the
// conformance suite does (ERR-3).
func ConnCapabilities(conn Conn) []Capability {
	var out []Capability
	for _, c := range AllCapabilities {
		if ConnHas(conn, c) {
			out = append(out, c)
		}
	}
	return out
}

// ---- reactions (RX) ----

// ReactionStatus is the state of a reaction.
type ReactionStatus string

// The reaction states: pending → leased → completed | pending (retry) |
// dead-letter; dead-letter → pending (operator retry).
const (
	ReactionPending    ReactionStatus = "pending"
	ReactionLeased     ReactionStatus = "leased"
	ReactionCompleted  ReactionStatus = "completed"
	ReactionDeadLetter ReactionStatus = "dead_letter"
)

// ReactionInput is one reaction to enqueue (RX-1). Key ≤ 256 bytes and
// Type ≤ 255 bytes (V-2); MaxAttempts ≥ 1; Payload is a JSON document.
// Version (≥ 0) is the version of the payload's shape, as the host
// numbers them; SourceClientID and SourceClientCommitID name the client
// commit the reaction comes from ("" for a server-made commit, else V-2).
// All are stored and read back as given (RX-1).
type ReactionInput struct {
	Key                  string
	Type                 string
	Version              int64
	Payload              JSON
	MaxAttempts          int
	CreatedAtMs          int64
	SourceClientID       string
	SourceClientCommitID string
}

// ReactionFailure is the last failure recorded for a reaction (RX-6).
// Details is bounded JSON (≤ 8 KiB); no exception text is stored.
type ReactionFailure struct {
	Code    string
	Details JSON
	AtMs    int64
}

// Reaction is a stored reaction: its input as enqueued (RX-1) and its
// state. CompletedAtMs is the time of Complete while the reaction is
// completed, else 0 (RX-5, RX-7). UpdatedAtMs is the time of the last
// change of state.
type Reaction struct {
	Key                  string
	Type                 string
	Version              int64
	SourceClientID       string
	SourceClientCommitID string
	CompletedAtMs        int64
	Payload              JSON
	Status               ReactionStatus
	Attempts             int
	MaxAttempts          int
	SourceCommitSeq      int64
	CreatedAtMs          int64
	AvailableAtMs        int64
	LeaseOwner           string
	LeaseExpiresAtMs     int64
	LastFailure          *ReactionFailure
	UpdatedAtMs          int64
}

// ClaimRequest leases due reactions (RX-2) of Types, which is never empty
// (sync refuses an empty list with CodeInvalidArgument: a worker names
// what it handles). LeaseMs > 0; Limit 1…10,000.
type ClaimRequest struct {
	Owner   string
	Types   []string
	NowMs   int64
	LeaseMs int64
	Limit   int
}

// FailRequest records a failed attempt (RX-6). With Retry, the reaction
// becomes pending at RetryAtMs; without, it is dead-lettered at NowMs.
type FailRequest struct {
	NowMs     int64
	Retry     bool
	RetryAtMs int64
	Code      string
	Details   JSON
}

// ReactionListQuery filters ListReactions (RX-8). Empty slices match all.
// A page resumes after the last reaction of the previous one: AfterKey is
// its key and AfterCreatedAtMs its CreatedAtMs; the page holds the
// reactions after it in the listing order (createdAt desc, key desc), so
// every reaction is reachable page by page, however many, even when the
// last one was pruned meanwhile. AfterKey "" = from the newest.
type ReactionListQuery struct {
	Statuses         []ReactionStatus
	Types            []string
	Limit            int
	AfterCreatedAtMs int64
	AfterKey         string
}

// ReactionPruneRequest bounds PruneReactions (RX-9): completed rows with
// UpdatedAtMs < CompletedBeforeMs and dead-letter rows with UpdatedAtMs <
// DeadLetterBeforeMs, oldest first, at most Limit in all.
type ReactionPruneRequest struct {
	CompletedBeforeMs  int64
	DeadLetterBeforeMs int64
	Limit              int
}

// ReactionsConn is the Conn half of the reactions capability (RX-2…RX-10).
// Every method that takes an owner succeeds (true) only while the reaction
// is leased to that owner; otherwise it returns false and changes nothing
// (RX-5).
type ReactionsConn interface {
	ClaimReactions(ctx context.Context, partition string, req ClaimRequest) ([]Reaction, error)
	CompleteReaction(ctx context.Context, partition, key, owner string, nowMs int64) (bool, error)
	ExtendReactionLease(ctx context.Context, partition, key, owner string, nowMs, leaseMs int64) (bool, error)
	FailReaction(ctx context.Context, partition, key, owner string, req FailRequest) (bool, error)
	// RetryReaction turns a dead-letter reaction into pending with
	// attempts 0, its last failure cleared (RX-7); any other state → false.
	RetryReaction(ctx context.Context, partition, key string, nowMs int64) (bool, error)
	// GetReaction returns the reaction of partition with key, and false
	// when there is none (RX-11).
	GetReaction(ctx context.Context, partition, key string) (Reaction, bool, error)
	ListReactions(ctx context.Context, partition string, q ReactionListQuery) ([]Reaction, error)
	PruneReactions(ctx context.Context, partition string, req ReactionPruneRequest) (map[ReactionStatus]int64, error)
}

// MaxDuePartitions bounds DueClaimRequest.Partitions (RX-12).
const MaxDuePartitions = 10_000

// DueClaimRequest leases due reactions across partitions (RX-12): the
// ClaimRequest's rules (RX-2…RX-4) hold for every partition it reaches.
// Partitions nil claims from every partition of the store; a non-nil list
// (1…MaxDuePartitions partitions, each V-1, no duplicates; sync checks)
// claims from those only.
type DueClaimRequest struct {
	ClaimRequest
	Partitions []string
}

// PartitionReaction is a reaction with the partition it belongs to.
type PartitionReaction struct {
	Partition string
	Reaction
}

// ReactionsAcrossConn is the reactions-across capability (RX-12): one call
// claims due reactions of every partition (or of a list), so a worker's
// idle cost does not grow with the number of partitions. Only a driver
// with ReactionsConn implements it. Without it, sync.Worker claims with
// ClaimReactions once per partition of WorkerConfig.Partitions.
//
// ClaimDueReactions leases at most req.Limit due reactions chosen fairly
// between partitions: each partition's due rows are ranked in RX-2's claim
// order, and rows are taken by rank first (every partition's first due
// row, then every partition's second, …), then by due time, createdAt,
// partition and key — so with k partitions due each gets at least
// floor(Limit/k) rows, or all of its due rows. Due rows at their attempts
// cap are dead-lettered first (RX-4) and do not count against the limit;
// concurrent claims never return the same row (RX-3), though a claim
// racing another may return fewer rows than are due. The result is sorted
// by partition (bytewise), then createdAt, then key. Errors are those of
// ClaimReactions.
type ReactionsAcrossConn interface {
	ClaimDueReactions(ctx context.Context, req DueClaimRequest) ([]PartitionReaction, error)
}

// ReactionsTx is the Tx half of the reactions capability (RX-1): reactions
// land with the Tx's commit and vanish with its rollback. An existing key
// in the partition → CodeDuplicateReactionKey.
type ReactionsTx interface {
	EnqueueReactions(ctx context.Context, sourceCommitSeq int64, reactions []ReactionInput) error
}

// ---- authoritative query (AQ) ----

// Query is a host-registered SELECT (AQ-1): SQL in the portable
// SQLite-family dialect with `?`/`?N` parameters, Args bound in order, and
// Tables the declared tables it reads. Limits bounds its time on the
// engine, its result and the values it builds (AQ-6); the zero value is
// the safe default set (see QueryLimits).
type Query struct {
	SQL    string
	Args   []any
	Tables []string
	Limits QueryLimits
}

// QueryResult holds the rows of a query (values int64 | float64 | string |
// []byte | bool | nil) and the MaxCommitSeq of the same snapshot (AQ-4).
type QueryResult struct {
	Columns      []string
	Rows         [][]any
	MaxCommitSeq int64
}

// AuthoritativeQueryConn is the authoritative-query capability (AQ-1…AQ-5).
// It has no Tx half.
type AuthoritativeQueryConn interface {
	AuthoritativeQuery(ctx context.Context, partition string, q Query) (QueryResult, error)
}

// QuerySlotsConn is optional beside AuthoritativeQueryConn, for a driver
// whose authoritative queries share connections with everything else (a
// pool that pushes and pulls also use). QuerySlots returns how many
// queries the Conn can run at once while leaving connections for the rest
// (at least 1); sync.Store never runs more of them at once than that
// (AQ-7), whatever its QueryConcurrency says. sync calls it once per
// SetQueryConcurrency (and once on the first query). Without it — a driver
// whose queries have a pool or an engine of their own — sync's
// QueryConcurrency alone bounds them.
type QuerySlotsConn interface {
	QuerySlots() int
}

// ---- index lookup (IXL) ----

// IndexQuery is an exact lookup through a declared index (IXL-1). Values
// has one value per index column (nil matches NULL); Limit 1…1,000.
type IndexQuery struct {
	Table      string
	Index      string
	Values     []any
	AfterRowID string
	Limit      int
}

// IndexLookupConn is the Conn half of the index-lookup capability.
type IndexLookupConn interface {
	ScanRowsByIndex(ctx context.Context, partition string, q IndexQuery) ([]Row, error)
}

// IndexLookupTx is the Tx half: the lookup sees staged writes (IXL-3).
type IndexLookupTx interface {
	ScanRowsByIndex(ctx context.Context, q IndexQuery) ([]Row, error)
}

// ---- blob refs (BLOB) ----

// BlobRowRef is a row that references a blob (BLOB-1).
type BlobRowRef struct {
	Table  string
	RowID  string
	Scopes Scopes
}

// BlobRefsConn is the Conn half of the blob-refs capability (BLOB-1).
type BlobRefsConn interface {
	ListRowsReferencingBlob(ctx context.Context, partition, blobID string, limit int) ([]BlobRowRef, error)
	ListReferencedBlobIDs(ctx context.Context, partition, afterBlobID string, limit int) ([]string, error)
}

// BlobRefsTx is the Tx half: SetBlobRefs replaces the row's set (empty
// clears); deleting the row clears it.
type BlobRefsTx interface {
	SetBlobRefs(ctx context.Context, table, rowID string, blobIDs []string) error
}

// ---- admin (ADM) ----

// CommitMeta describes one commit without its changes (ADM-1).
type CommitMeta struct {
	Seq            int64
	ClientID       string
	ClientCommitID string
	ActorID        string
	CreatedAtMs    int64
	ChangeCount    int
}

// ScopeActivity counts the changes matching a filter in a seq range (ADM-1).
type ScopeActivity struct {
	Commits int64
	Changes int64
}

// ClientRecordQuery pages ListClientRecords (ADM-2). Records are listed
// newest first: UpdatedAtMs descending, then ClientID descending
// (bytewise). (AfterUpdatedAtMs, AfterClientID) is an exclusive position
// in that order: the page holds the records that come after it, i.e.
// those with UpdatedAtMs < AfterUpdatedAtMs, or UpdatedAtMs =
// AfterUpdatedAtMs and ClientID < AfterClientID. Passing the last record
// of a page as the next position (Next) reaches every record exactly once,
// however many share one UpdatedAtMs. The zero position (AfterClientID
// "", AfterUpdatedAtMs 0) starts at the newest record; AfterClientID ""
// with any other AfterUpdatedAtMs is CodeInvalidArgument. Limit:
// 1…10,000 (V-5).
type ClientRecordQuery struct {
	AfterUpdatedAtMs int64
	AfterClientID    string
	Limit            int
}

// Next returns the query of the page after the one that ended with last.
func (q ClientRecordQuery) Next(last ClientRecord) ClientRecordQuery {
	q.AfterUpdatedAtMs, q.AfterClientID = last.UpdatedAtMs, last.ClientID
	return q
}

// AdminConn is the admin capability: read-only console views (ADM-1…ADM-3).
type AdminConn interface {
	// ListClientRecords returns one page of the partition's client
	// records, newest first, after q's position, at most q.Limit (ADM-2;
	// see ClientRecordQuery). Served by an index walk in that order that
	// stops at the limit.
	ListClientRecords(ctx context.Context, partition string, q ClientRecordQuery) ([]ClientRecord, error)
	// ListCommitMeta returns commits with seq < beforeSeq (0 = from the
	// newest), newest first.
	ListCommitMeta(ctx context.Context, partition string, beforeSeq int64, limit int) ([]CommitMeta, error)
	// ScopeActivity counts only matching changes in afterSeq < seq ≤ throughSeq.
	ScopeActivity(ctx context.Context, partition, table string, filter ScopeFilter, afterSeq, throughSeq int64) (ScopeActivity, error)
	// RowScopes returns the scopes of a current row and true, or false.
	RowScopes(ctx context.Context, partition, table, rowID string) (Scopes, bool, error)
	// ListRows returns one page of the current rows of table in the
	// partition, unfiltered by scope: the rows whose id is bytewise
	// greater than afterRowID ("" = from the first), ascending bytewise by
	// id, at most limit (1…10,000, V-5), each whole (id, server version,
	// scopes, values) as GetRow returns it (ADM-3). Passing the last id of
	// a page as the next afterRowID reaches every row exactly once; a page
	// shorter than limit is the last. Served by a walk of the table's
	// primary key (partition, id) from afterRowID that stops at the limit.
	// Errors: CodeUnknownTable.
	ListRows(ctx context.Context, partition, table, afterRowID string, limit int) ([]Row, error)
}

// ---- commit fanout (FAN) ----

// CommitWake tells another instance that a commit landed (FAN-1).
type CommitWake struct {
	Partition string
	CommitSeq int64
}

// CommitFanoutConn is the commit-fanout capability (FAN-1): after a commit
// lands, every subscriber of every Conn on the same store receives a wake,
// including after a listener reconnect (a catch-up wake, never silence).
type CommitFanoutConn interface {
	// SubscribeCommits delivers wakes on the returned channel until ctx
	// ends, then closes it.
	SubscribeCommits(ctx context.Context) (<-chan CommitWake, error)
}
