package sync

import "github.com/syncstore/syncstore/driver"

// Error is the one error type of syncstore (ERR-1): every error a Store
// returns is an *Error or wraps one. Test codes with errors.Is against the
// sentinels below, read details with errors.As.
type Error = driver.Error

// Code is the stable identity of an error (ERR-1).
type Code = driver.Code

// Capability names an optional group of rules a driver may implement.
type Capability = driver.Capability

// The error codes of docs/contract.md, re-exported from driver.
const (
	CodeInvalidArgument            = driver.CodeInvalidArgument
	CodeInvalidValue               = driver.CodeInvalidValue
	CodeInvalidLimit               = driver.CodeInvalidLimit
	CodeScanRequiresScope          = driver.CodeScanRequiresScope
	CodeInvalidClientID            = driver.CodeInvalidClientID
	CodeSchemaInvalid              = driver.CodeSchemaInvalid
	CodeSchemaMismatch             = driver.CodeSchemaMismatch
	CodeSchemaNewer                = driver.CodeSchemaNewer
	CodeSchemaMigrationUnsupported = driver.CodeSchemaMigrationUnsupported
	CodeUnknownTable               = driver.CodeUnknownTable
	CodeConstraintViolation        = driver.CodeConstraintViolation
	CodeTxFinished                 = driver.CodeTxFinished
	CodeWriteConflict              = driver.CodeWriteConflict
	CodeIdempotencyCacheMiss       = driver.CodeIdempotencyCacheMiss
	CodeIdempotencyKeyReused       = driver.CodeIdempotencyKeyReused
	CodePushTooLarge               = driver.CodePushTooLarge
	CodeInvalidHorizon             = driver.CodeInvalidHorizon
	CodeUnavailable                = driver.CodeUnavailable
	CodeUnsupported                = driver.CodeUnsupported
	CodeDuplicateReactionKey       = driver.CodeDuplicateReactionKey
	CodeQueryInvalid               = driver.CodeQueryInvalid
	CodeQueryLimit                 = driver.CodeQueryLimit
	CodeIndexNotFound              = driver.CodeIndexNotFound
	CodeIndexValueCountMismatch    = driver.CodeIndexValueCountMismatch
	CodeCommitOutcomeUnknown       = driver.CodeCommitOutcomeUnknown
	CodeCursorExpired              = driver.CodeCursorExpired
	CodeCursorAhead                = driver.CodeCursorAhead
	CodeClientActorMismatch        = driver.CodeClientActorMismatch
	CodeClosed                     = driver.CodeClosed
	CodeInternal                   = driver.CodeInternal
)

// Sentinels for errors.Is, re-exported from driver (same values, so
// errors.Is(err, sync.ErrX) and errors.Is(err, driver.ErrX) agree).
var (
	ErrInvalidArgument            = driver.ErrInvalidArgument
	ErrInvalidValue               = driver.ErrInvalidValue
	ErrInvalidLimit               = driver.ErrInvalidLimit
	ErrScanRequiresScope          = driver.ErrScanRequiresScope
	ErrInvalidClientID            = driver.ErrInvalidClientID
	ErrSchemaInvalid              = driver.ErrSchemaInvalid
	ErrSchemaMismatch             = driver.ErrSchemaMismatch
	ErrSchemaNewer                = driver.ErrSchemaNewer
	ErrSchemaMigrationUnsupported = driver.ErrSchemaMigrationUnsupported
	ErrUnknownTable               = driver.ErrUnknownTable
	ErrConstraintViolation        = driver.ErrConstraintViolation
	ErrTxFinished                 = driver.ErrTxFinished
	ErrWriteConflict              = driver.ErrWriteConflict
	ErrIdempotencyCacheMiss       = driver.ErrIdempotencyCacheMiss
	ErrIdempotencyKeyReused       = driver.ErrIdempotencyKeyReused
	ErrPushTooLarge               = driver.ErrPushTooLarge
	ErrInvalidHorizon             = driver.ErrInvalidHorizon
	ErrUnavailable                = driver.ErrUnavailable
	ErrUnsupported                = driver.ErrUnsupported
	ErrDuplicateReactionKey       = driver.ErrDuplicateReactionKey
	ErrQueryInvalid               = driver.ErrQueryInvalid
	ErrQueryLimit                 = driver.ErrQueryLimit
	ErrIndexNotFound              = driver.ErrIndexNotFound
	ErrIndexValueCountMismatch    = driver.ErrIndexValueCountMismatch
	ErrCommitOutcomeUnknown       = driver.ErrCommitOutcomeUnknown
	ErrCursorExpired              = driver.ErrCursorExpired
	ErrCursorAhead                = driver.ErrCursorAhead
	ErrClientActorMismatch        = driver.ErrClientActorMismatch
	ErrClosed                     = driver.ErrClosed
	ErrInternal                   = driver.ErrInternal
)
