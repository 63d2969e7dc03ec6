package driver

// ColumnType is the portable type of a column (docs/contract.md, SCH).
type ColumnType string

// The column types and the Go type a value of each has in Values:
//
//	TypeString  string   valid UTF-8, no NUL
//	TypeInteger int64
//	TypeFloat   float64  finite (NaN and ±Inf are rejected)
//	TypeBoolean bool
//	TypeJSON    JSON     a valid JSON document, kept byte-for-byte
//	TypeBytes   []byte   non-nil; []byte{} is the empty value, nil is NULL
//
// NULL is an untyped nil value, allowed only in nullable columns (V-3).
const (
	TypeString  ColumnType = "string"
	TypeInteger ColumnType = "integer"
	TypeFloat   ColumnType = "float"
	TypeBoolean ColumnType = "boolean"
	TypeJSON    ColumnType = "json"
	TypeBytes   ColumnType = "bytes"
)

// JSON is the value of a TypeJSON column: the document's text, kept
// byte-for-byte (whitespace, key order, duplicate keys, escapes; VAL-1).
type JSON string

// Values are a row's column values keyed by column name (SCH-1). Every
// column of the table is present; see ColumnType for the Go types.
type Values map[string]any

// Scopes are a row's or change's scope values keyed by scope variable.
// For a row they equal the values of the table's scope columns (V-4).
type Scopes map[string]string

// ScopeFilter selects by scope: for every key, the stored scopes must have
// the key and its value must be one of the listed values (WIN-3). A filter
// with no keys is invalid (V-6, CodeScanRequiresScope); a key with an empty
// list matches nothing.
type ScopeFilter map[string][]string

// Column is one column of a table (SCH-1).
type Column struct {
	Name     string
	Type     ColumnType
	Nullable bool
}

// Scope binds a scope variable to the column whose value it takes (SCH-1).
// Scope columns are non-nullable strings.
type Scope struct {
	Variable string
	Column   string
}

// Index is a declared secondary index, per partition (SCH-9).
type Index struct {
	Name    string
	Columns []string
	Unique  bool
}

// Table is one application table (SCH-1). PrimaryKey names a non-nullable
// string column whose value is the row id (V-4).
type Table struct {
	Name       string
	Columns    []Column
	PrimaryKey string
	Scopes     []Scope
	Indexes    []Index
}

// Schema is an application schema: a version ≥ 1 and ordered tables (SCH-1).
type Schema struct {
	Version int64
	Tables  []Table
}

// Table returns the table named name and true, or a zero Table and false.
func (s Schema) Table(name string) (Table, bool) {
	for _, t := range s.Tables {
		if t.Name == name {
			return t, true
		}
	}
	return Table{}, false
}

// Column returns the column named name and true, or a zero Column and false.
func (t Table) Column(name string) (Column, bool) {
	for _, c := range t.Columns {
		if c.Name == name {
			return c, true
		}
	}
	return Column{}, false
}

// Index returns the index named name and true, or a zero Index and false.
func (t Table) Index(name string) (Index, bool) {
	for _, ix := range t.Indexes {
		if ix.Name == name {
			return ix, true
		}
	}
	return Index{}, false
}

// Row is a current row (ROW-1).
type Row struct {
	// ID is the row id: the value of the table's primary-key column.
	ID string `json:"id"`
	// ServerVersion is stored as given (ROW-2).
	ServerVersion int64 `json:"serverVersion"`
	// Scopes equal the values of the table's scope columns (V-4).
	Scopes Scopes `json:"scopes"`
	// Values hold every column of the table, the primary key included.
	Values Values `json:"values"`
}

// Op is the kind of a change.
type Op string

// The change operations.
const (
	OpUpsert Op = "upsert"
	OpDelete Op = "delete"
)

// Change is one row change inside a commit (WIN-6).
type Change struct {
	Table string `json:"table"`
	RowID string `json:"rowId"`
	Op    Op     `json:"op"`
	// Scopes are the row's scopes: for an upsert, those of the new row; for
	// a delete, those of the deleted row. Window filters match on them.
	Scopes Scopes `json:"scopes"`
	// Values are the row's values for an upsert, nil for a delete.
	Values Values `json:"values,omitempty"`
	// RowVersion is the row's server version for an upsert, 0 for a delete.
	RowVersion int64 `json:"rowVersion,omitempty"`
}

// CommitInput is what Tx.AppendCommit records. ClientID, ClientCommitID
// and ActorID follow V-2 (the empty string is allowed for a commit made by
// the server itself); CreatedAtMs is epoch milliseconds.
type CommitInput struct {
	ClientID       string
	ClientCommitID string
	ActorID        string
	CreatedAtMs    int64
	Changes        []Change
}

// Commit is one entry of a partition's commit log as a window read returns
// it: only the changes that matched the window's table and filter (WIN-2).
type Commit struct {
	Seq            int64    `json:"seq"`
	ClientID       string   `json:"clientId"`
	ClientCommitID string   `json:"clientCommitId"`
	ActorID        string   `json:"actorId"`
	CreatedAtMs    int64    `json:"createdAtMs"`
	Changes        []Change `json:"changes"`
}

// WindowQuery selects commits for ReadCommitWindow (WIN-1…WIN-5, WIN-8,
// HZ-4).
type WindowQuery struct {
	Table  string
	Filter ScopeFilter
	// AfterSeq is exclusive, ThroughSeq inclusive: AfterSeq < seq ≤
	// ThroughSeq. AfterSeq is a client's cursor: it must lie in
	// [horizon, MaxCommitSeq] (else CodeCursorExpired, HZ-4, or
	// CodeCursorAhead, WIN-8) and must not exceed ThroughSeq
	// (CodeInvalidArgument, WIN-8). ThroughSeq may exceed MaxCommitSeq.
	AfterSeq   int64
	ThroughSeq int64
	// LimitChanges: 1…10,000. Reading stops after the commit that brings the
	// matched changes to at least LimitChanges; a commit is never split.
	LimitChanges int
}

// CommitsQuery selects whole commits for ReadCommits (LOG-1…LOG-3).
type CommitsQuery struct {
	// AfterSeq is exclusive, ThroughSeq inclusive: AfterSeq < seq ≤
	// ThroughSeq. AfterSeq is a cursor the store issued: it must lie in
	// [horizon, MaxCommitSeq] (else CodeCursorExpired, HZ-4, or
	// CodeCursorAhead, WIN-8) and must not exceed ThroughSeq
	// (CodeInvalidArgument, LOG-3). ThroughSeq may exceed MaxCommitSeq.
	AfterSeq   int64
	ThroughSeq int64
	// LimitChanges: 1…10,000. Reading stops after the commit that brings
	// the changes returned to at least LimitChanges; a commit is never
	// split (LOG-2).
	LimitChanges int
}

// CheckWindowCursor returns the error a window read after afterSeq fails
// with, given the partition's horizon and MaxCommitSeq (maxSeq) as the
// read's own snapshot holds them: CodeCursorExpired when afterSeq is below
// the horizon (HZ-4), CodeCursorAhead when it is beyond maxSeq (WIN-8),
// nil when the cursor is served. A driver calls it with the counters read
// in the same snapshot (statement, read transaction, batch) as the
// commits it returns, in every round of a read made of several, and
// returns no commit when it fails; it keeps the codes and wording alike
// on every engine.
func CheckWindowCursor(afterSeq, horizon, maxSeq int64) error {
	switch {
	case afterSeq < horizon:
		return Errorf(CodeCursorExpired, "window cursor %d is below the partition's horizon %d: commits after it may be pruned; bootstrap again (HZ-4)", afterSeq, horizon)
	case afterSeq > maxSeq:
		return Errorf(CodeCursorAhead, "window cursor %d is beyond the partition's head %d: this store never issued it (WIN-8)", afterSeq, maxSeq)
	}
	return nil
}

// ScanQuery selects current rows for ScanRows (SCAN-1…SCAN-4).
type ScanQuery struct {
	Table  string
	Filter ScopeFilter
	// AfterRowID is exclusive; "" starts at the first row.
	AfterRowID string
	// Limit: 1…10,000.
	Limit int
}

// PushStatus is the outcome of a push.
type PushStatus string

// The push outcomes.
const (
	PushApplied  PushStatus = "applied"
	PushRejected PushStatus = "rejected"
)

// OpStatus is the outcome of one operation of a push.
type OpStatus string

// The operation outcomes.
const (
	OpApplied  OpStatus = "applied"
	OpConflict OpStatus = "conflict"
	OpError    OpStatus = "error"
)

// OpResult is the result of one operation of a push (PR-1).
type OpResult struct {
	Status OpStatus `json:"status"`
	// Code and Message describe a conflict or an error.
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// ServerVersion and ServerRow describe the server's row in a conflict;
	// ServerRow is nil when the row does not exist.
	ServerVersion int64  `json:"serverVersion,omitempty"`
	ServerRow     Values `json:"serverRow,omitempty"`
	// Retryable and Details belong to an error. Details is a JSON document
	// or "".
	Retryable bool `json:"retryable,omitempty"`
	Details   JSON `json:"details,omitempty"`
}

// PushResult is the stored outcome of a push, keyed by (partition,
// clientID, clientCommitID) (PR-1). CommitSeq is > 0 iff Status is
// PushApplied; RecordedAtMs is epoch milliseconds.
type PushResult struct {
	Status        PushStatus `json:"status"`
	CommitSeq     int64      `json:"commitSeq"`
	RecordedAtMs  int64      `json:"recordedAtMs"`
	CacheIdentity string     `json:"-"`
	Ops           []OpResult `json:"ops"`
}

// Subscription is one of a client's subscriptions (CR-1).
type Subscription struct {
	ID     string
	Table  string
	Scopes ScopeFilter
}

// ClientRecord is what a partition keeps per client (CR-1).
type ClientRecord struct {
	ClientID      string
	ActorID       string
	WireVersion   int64
	Cursor        int64
	UpdatedAtMs   int64
	Subscriptions []Subscription
}

// ClientCursor is one entry of ListClientCursors (CR-2, CR-3).
type ClientCursor struct {
	ClientID    string
	Cursor      int64
	UpdatedAtMs int64
}

// PartitionEntry is one entry of the partition registry (REG-1…REG-3).
type PartitionEntry struct {
	Partition     string
	Epoch         string
	EpochRequired bool
	UpdatedAtMs   int64
}
