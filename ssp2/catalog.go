package ssp2

import "github.com/syncstore/syncstore/driver"

// Code is a §10 error code, e.g. "sync.invalid_request".
type Code string

// The §10.2 wire catalog (wire versions 1 and 2). Category, Retryable and
// RecommendedAction of each are fixed by the catalog (Lookup).
const (
	CodeOperationUnknown            Code = "operation.unknown"
	CodeOperationForbidden          Code = "operation.forbidden"
	CodeOperationInvalidRequest     Code = "operation.invalid_request"
	CodeOperationResultTooLarge     Code = "operation.result_too_large"
	CodeOperationStorageUnsupported Code = "operation.storage_unsupported"
	CodeOperationQueryFailed        Code = "operation.query_failed"
	CodeOperationExecutionFailed    Code = "operation.execution_failed"

	CodeAuthRequired            Code = "sync.auth_required"
	CodeAuthLeaseRequired       Code = "sync.auth_lease_required"
	CodeAuthLeaseRevoked        Code = "sync.auth_lease_revoked"
	CodeForbidden               Code = "sync.forbidden"
	CodeInvalidRequest          Code = "sync.invalid_request"
	CodeInvalidClientID         Code = "sync.invalid_client_id"
	CodeInvalidSubscription     Code = "sync.invalid_subscription"
	CodeEmptyCommit             Code = "sync.empty_commit"
	CodeUnknownTable            Code = "sync.unknown_table"
	CodeRowMissing              Code = "sync.row_missing"
	CodeVersionConflict         Code = "sync.version_conflict"
	CodeConstraintViolation     Code = "sync.constraint_violation"
	CodeMissingScopes           Code = "sync.missing_scopes"
	CodeCRDTMergeFailed         Code = "sync.crdt_merge_failed"
	CodeIdempotencyCacheMiss    Code = "sync.idempotency_cache_miss"
	CodeTooManyOperations       Code = "sync.too_many_operations"
	CodeNotFound                Code = "sync.not_found"
	CodeSegmentExpired          Code = "sync.segment_expired"
	CodeCursorExpired           Code = "sync.cursor_expired"
	CodeScopeRevoked            Code = "sync.scope_revoked"
	CodeRateLimited             Code = "sync.rate_limited"
	CodeSchemaMismatch          Code = "sync.schema_mismatch"
	CodeClientSchemaUnsupported Code = "sync.client_schema_unsupported"
	CodeClientWireUnsupported   Code = "sync.client_wire_unsupported"
	CodeWebSocketLimit          Code = "sync.websocket_connection_limit"

	CodeBlobNotFound     Code = "blob.not_found"
	CodeBlobForbidden    Code = "blob.forbidden"
	CodeBlobHashMismatch Code = "blob.hash_mismatch"
	CodeBlobTooLarge     Code = "blob.too_large"
)

// CatalogEntry is one row of the §10.2 table: the metadata fixed for a code.
type CatalogEntry struct {
	Code Code
	// Category is the coarse class ("invalid-request", "not-found", …).
	Category string
	// Retryable says whether the same request may succeed later unchanged.
	Retryable bool
	// RecommendedAction is the client action verb ("fixRequest", …).
	RecommendedAction string
}

var catalog = []CatalogEntry{
	{CodeOperationUnknown, "not-found", false, "regenerateClient"},
	{CodeOperationForbidden, "forbidden", false, "checkPermissions"},
	{CodeOperationInvalidRequest, "invalid-request", false, "fixRequest"},
	{CodeOperationResultTooLarge, "invalid-request", false, "fixRequest"},
	{CodeOperationStorageUnsupported, "internal", false, "inspectServer"},
	{CodeOperationQueryFailed, "internal", false, "inspectServer"},
	{CodeOperationExecutionFailed, "internal", false, "inspectServer"},
	{CodeAuthRequired, "auth-required", true, "refreshAuth"},
	{CodeAuthLeaseRequired, "auth-required", true, "refreshAuth"},
	{CodeAuthLeaseRevoked, "auth-required", true, "refreshAuth"},
	{CodeForbidden, "forbidden", false, "checkPermissions"},
	{CodeInvalidRequest, "invalid-request", false, "fixRequest"},
	{CodeInvalidClientID, "invalid-request", false, "resetClientId"},
	{CodeInvalidSubscription, "invalid-request", false, "fixRequest"},
	{CodeEmptyCommit, "invalid-request", false, "fixRequest"},
	{CodeUnknownTable, "schema-mismatch", false, "regenerateClient"},
	{CodeRowMissing, "not-found", false, "forceResync"},
	{CodeVersionConflict, "conflict", false, "resolveConflict"},
	{CodeConstraintViolation, "invalid-request", false, "fixRequest"},
	{CodeMissingScopes, "internal", false, "inspectServer"},
	{CodeCRDTMergeFailed, "internal", false, "inspectServer"},
	{CodeIdempotencyCacheMiss, "internal", true, "retryLater"},
	{CodeTooManyOperations, "invalid-request", false, "splitBatch"},
	{CodeNotFound, "not-found", false, "forceResync"},
	{CodeSegmentExpired, "not-found", true, "retryLater"},
	{CodeCursorExpired, "reset-required", false, "rebootstrap"},
	{CodeScopeRevoked, "scope-revoked", false, "checkPermissions"},
	{CodeRateLimited, "rate-limited", true, "retryLater"},
	{CodeSchemaMismatch, "schema-mismatch", false, "regenerateClient"},
	{CodeClientSchemaUnsupported, "schema-mismatch", false, "upgradeClient"},
	{CodeClientWireUnsupported, "schema-mismatch", false, "upgradeClient"},
	{CodeWebSocketLimit, "rate-limited", true, "retryLater"},
	{CodeBlobNotFound, "not-found", false, "fixRequest"},
	{CodeBlobForbidden, "forbidden", false, "checkPermissions"},
	{CodeBlobHashMismatch, "invalid-request", false, "fixRequest"},
	{CodeBlobTooLarge, "invalid-request", false, "fixRequest"},
}

var catalogByCode = func() map[Code]CatalogEntry {
	m := make(map[Code]CatalogEntry, len(catalog))
	for _, e := range catalog {
		m[e.Code] = e
	}
	return m
}()

// Lookup returns the §10.2 catalog entry of code, and false for a code
// outside the catalog (a host code, a client-local or reserved code).
func Lookup(code Code) (CatalogEntry, bool) {
	e, ok := catalogByCode[code]
	return e, ok
}

// Catalog returns the §10.2 catalog in the SPEC's order (a copy).
func Catalog() []CatalogEntry { return append([]CatalogEntry(nil), catalog...) }

// ErrorBody is the §10.1 error shape, carried by an HTTP JSON error body
// (MarshalJSON) or an in-band ERROR frame (Frame).
type ErrorBody struct {
	Code              Code
	Category          string
	Retryable         bool
	RecommendedAction string
	// Message is human-readable, never parsed; a server keeps values of the
	// request out of it.
	Message string
	// Details is an optional JSON document (a code-specific object); ""
	// for none.
	Details driver.JSON
}

// NewErrorBody returns the body of code with the catalog's fixed
// Category, Retryable and RecommendedAction and the given message. A code
// outside the catalog (a server bug: protocol errors always carry catalog
// codes) gets category "internal", not retryable, action
// "inspectServer", so a client handles it generically.
func NewErrorBody(code Code, message string) ErrorBody {
	e, ok := Lookup(code)
	if !ok {
		e = CatalogEntry{Category: "internal", RecommendedAction: "inspectServer"}
	}
	return ErrorBody{Code: code, Category: e.Category, Retryable: e.Retryable, RecommendedAction: e.RecommendedAction, Message: message}
}

// Frame returns b as an ERROR frame (§1.6).
func (b ErrorBody) Frame() *ErrorFrame {
	return &ErrorFrame{Code: string(b.Code), Message: b.Message, Category: b.Category, Retryable: b.Retryable, RecommendedAction: b.RecommendedAction, Details: b.Details}
}

// AppendJSON appends b as a JSON object with the §10.1 fields in order
// (code, category, retryable, recommendedAction, message, details when
// set). Details is embedded as it is; it must be a JSON document.
func (b ErrorBody) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"code":`...)
	dst = appendJSString(dst, string(b.Code))
	dst = append(dst, `,"category":`...)
	dst = appendJSString(dst, b.Category)
	dst = append(dst, `,"retryable":`...)
	dst = appendBool(dst, b.Retryable)
	dst = append(dst, `,"recommendedAction":`...)
	dst = appendJSString(dst, b.RecommendedAction)
	dst = append(dst, `,"message":`...)
	dst = appendJSString(dst, b.Message)
	if b.Details != "" {
		dst = append(dst, `,"details":`...)
		dst = append(dst, b.Details...)
	}
	return append(dst, '}')
}

// MarshalJSON implements json.Marshaler (AppendJSON). It fails when
// Details is set and is not a JSON document.
func (b ErrorBody) MarshalJSON() ([]byte, error) {
	if b.Details != "" && !validJSON([]byte(b.Details)) {
		return nil, encodeErrorf("error body details are not a JSON document")
	}
	return b.AppendJSON(nil), nil
}

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}
