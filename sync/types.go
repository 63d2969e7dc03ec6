package sync

import "github.com/syncstore/syncstore/driver"

// The data types a host touches, so that a host imports this package
// alone, as a database/sql host never imports database/sql/driver. Each
// is the driver package's type under the same name (an alias: values
// pass between the two freely); the driver package documents their
// fields and methods: `go doc github.com/syncstore/syncstore/driver.Row`
// (likewise Error and the codes' meanings in driver/errors.go).
type (
	// Schema, Table, Column, Scope, Index and ColumnType declare the
	// synced tables (SCH).
	Schema     = driver.Schema
	Table      = driver.Table
	Column     = driver.Column
	Scope      = driver.Scope
	Index      = driver.Index
	ColumnType = driver.ColumnType

	// Values are a row's values by column (int64 | float64 | string |
	// []byte | bool | JSON | nil); Scopes a row's scope values by
	// variable; ScopeFilter selects rows by scope (variable → values).
	Values      = driver.Values
	Scopes      = driver.Scopes
	ScopeFilter = driver.ScopeFilter
	JSON        = driver.JSON

	// Row, Op, Change, Commit and CommitInput are rows and the log.
	Row         = driver.Row
	Op          = driver.Op
	Change      = driver.Change
	Commit      = driver.Commit
	CommitInput = driver.CommitInput

	// WindowQuery, ScanQuery, IndexQuery and Query are the reads.
	WindowQuery = driver.WindowQuery
	ScanQuery   = driver.ScanQuery
	IndexQuery  = driver.IndexQuery
	Query       = driver.Query
	QueryResult = driver.QueryResult

	// PushResult, PushStatus, OpResult and OpStatus are push outcomes.
	PushResult = driver.PushResult
	PushStatus = driver.PushStatus
	OpResult   = driver.OpResult
	OpStatus   = driver.OpStatus

	// Reaction and ReactionInput are the reactions outbox (RX);
	// CommitWake a commit-fanout wake (FAN-1).
	Reaction      = driver.Reaction
	ReactionInput = driver.ReactionInput
	CommitWake    = driver.CommitWake

	// ClaimRequest, FailRequest, ReactionListQuery, ReactionPruneRequest
	// and ReactionStatus drive the reactions outbox by hand (RX).
	ClaimRequest         = driver.ClaimRequest
	DueClaimRequest      = driver.DueClaimRequest
	PartitionReaction    = driver.PartitionReaction
	FailRequest          = driver.FailRequest
	ReactionListQuery    = driver.ReactionListQuery
	ReactionPruneRequest = driver.ReactionPruneRequest
	ReactionStatus       = driver.ReactionStatus

	// Subscription, ClientRecord and ClientCursor are a client's record
	// (CR); PartitionEntry a partition in the registry (REG).
	Subscription   = driver.Subscription
	ClientRecord   = driver.ClientRecord
	ClientCursor   = driver.ClientCursor
	PartitionEntry = driver.PartitionEntry

	// ClientRecordQuery, CommitMeta and ScopeActivity are the admin
	// capability's pages; BlobRowRef a row's blob reference (blob-refs).
	ClientRecordQuery = driver.ClientRecordQuery
	CommitMeta        = driver.CommitMeta
	ScopeActivity     = driver.ScopeActivity
	BlobRowRef        = driver.BlobRowRef

	// QueryLimits bound an authoritative query (AQ-6); a query stopped at
	// a bound fails with a *QueryLimitError.
	QueryLimits     = driver.QueryLimits
	QueryLimitError = driver.QueryLimitError
)

// Capabilities (Store.Supports, Store.Capabilities).
const (
	CapReactions          = driver.CapReactions
	CapAuthoritativeQuery = driver.CapAuthoritativeQuery
	CapIndexLookup        = driver.CapIndexLookup
	CapBlobRefs           = driver.CapBlobRefs
	CapAdmin              = driver.CapAdmin
	CapCommitFanout       = driver.CapCommitFanout
	CapReactionsAcross    = driver.CapReactionsAcross
	CapLeases             = driver.CapLeases
)

// Reaction states (RX).
const (
	ReactionPending    = driver.ReactionPending
	ReactionLeased     = driver.ReactionLeased
	ReactionCompleted  = driver.ReactionCompleted
	ReactionDeadLetter = driver.ReactionDeadLetter
)

// Column types (SCH-1).
const (
	TypeString  = driver.TypeString
	TypeInteger = driver.TypeInteger
	TypeFloat   = driver.TypeFloat
	TypeBoolean = driver.TypeBoolean
	TypeJSON    = driver.TypeJSON
	TypeBytes   = driver.TypeBytes
)

// Change operations, push and op outcomes.
const (
	OpUpsert     = driver.OpUpsert
	OpDelete     = driver.OpDelete
	PushApplied  = driver.PushApplied
	PushRejected = driver.PushRejected
	OpApplied    = driver.OpApplied
	OpConflict   = driver.OpConflict
	OpError      = driver.OpError
)

// CodeOf returns err's code ("" when it has none), as driver.CodeOf.
func CodeOf(err error) Code { return driver.CodeOf(err) }
