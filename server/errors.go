package server

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/syncstore/syncstore/ssp2"
	"github.com/syncstore/syncstore/sync"
)

// perr returns a protocol error: a §10.2 catalog code and a message that
// names what is wrong and never quotes a value of the request.
func perr(code ssp2.Code, format string, args ...any) *ssp2.Error {
	return &ssp2.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// errUnavailable is the answer to a storage failure the client can retry:
// the catalog has no "server unavailable" code, and sync.rate_limited
// (retryable, retryLater) says what the client should do.
func errUnavailable() *ssp2.Error {
	return perr(ssp2.CodeRateLimited, "the server cannot serve the request right now; retry later")
}

// httpStatus is the HTTP status of an error code (SPEC §1.1: HTTP-level
// errors carry an appropriate status).
func httpStatus(code ssp2.Code) int {
	switch code {
	case ssp2.CodeAuthRequired, ssp2.CodeAuthLeaseRequired, ssp2.CodeAuthLeaseRevoked:
		return http.StatusUnauthorized
	case ssp2.CodeForbidden, ssp2.CodeScopeRevoked, ssp2.CodeBlobForbidden, ssp2.CodeOperationForbidden:
		return http.StatusForbidden
	case ssp2.CodeNotFound, ssp2.CodeSegmentExpired, ssp2.CodeRowMissing, ssp2.CodeBlobNotFound, ssp2.CodeOperationUnknown:
		return http.StatusNotFound
	case ssp2.CodeVersionConflict:
		return http.StatusConflict
	case ssp2.CodeRateLimited, ssp2.CodeWebSocketLimit:
		return http.StatusTooManyRequests
	case ssp2.CodeMissingScopes, ssp2.CodeCRDTMergeFailed, ssp2.CodeIdempotencyCacheMiss,
		ssp2.CodeOperationStorageUnsupported, ssp2.CodeOperationQueryFailed, ssp2.CodeOperationExecutionFailed:
		return http.StatusInternalServerError
	case ssp2.CodeBlobTooLarge:
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

// writeError writes err as the §10.1 JSON error body with status (0: the
// code's status). A non-protocol error is answered as errUnavailable (its
// text is logged by the caller, never sent).
func writeError(w http.ResponseWriter, status int, err error) {
	var pe *ssp2.Error
	if !errors.As(err, &pe) {
		pe = errUnavailable()
	}
	if status == 0 {
		status = httpStatus(pe.Code)
	}
	body := pe.Body().AppendJSON(nil)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	if pe.Code == ssp2.CodeRateLimited || pe.Code == ssp2.CodeWebSocketLimit {
		h.Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// engineErr turns an engine error met before a response started into the
// protocol's answer: a client-id binding conflict is
// sync.invalid_client_id (SPEC §1.5), a reserved client id likewise; every
// other engine error is a server failure (nil: the caller logs it and
// answers errUnavailable).
func engineErr(err error) *ssp2.Error {
	switch sync.CodeOf(err) {
	case sync.CodeClientActorMismatch:
		return perr(ssp2.CodeInvalidClientID, "the client id is bound to another actor in this partition (§1.5)")
	case sync.CodeInvalidClientID:
		return perr(ssp2.CodeInvalidClientID, "the client id is not valid here (§1.5)")
	}
	var pe *ssp2.Error
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}
