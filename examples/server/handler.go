package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/syncstore/syncstore/sync"
)

// maxBody bounds a request body (bytes): above sync.MaxPushBytes of
// values plus their JSON framing.
const maxBody = 8 << 20

// newHandler serves push and pull for store, whose schema is schema. The
// bodies are sync.PushRequest and sync.PullRequest in their JSON form
// (docs/wire.md); the actor comes from the X-Actor header, never from the
// body (ActorID is not part of the JSON form).
func newHandler(store *sync.Store) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/{partition}/push", func(w http.ResponseWriter, r *http.Request) {
		var req sync.PushRequest
		if !decode(w, r, &req) {
			return
		}
		// JSON numbers, base64 and JSON text typed by the columns.
		if err := sync.TypePushRequest(schema, &req); err != nil {
			writeErr(w, err)
			return
		}
		req.ActorID = r.Header.Get("X-Actor")
		res, err := store.Push(r.Context(), r.PathValue("partition"), req)
		reply(w, res, err)
	})
	mux.HandleFunc("POST /v1/{partition}/pull", func(w http.ResponseWriter, r *http.Request) {
		var req sync.PullRequest
		if !decode(w, r, &req) {
			return
		}
		// A real host checks here that the actor may read each
		// subscription's scopes.
		req.ActorID = r.Header.Get("X-Actor")
		res, err := store.Pull(r.Context(), r.PathValue("partition"), req)
		reply(w, res, err)
	})
	return mux
}

// decode reads one JSON request into v: unknown fields and anything after
// the object are refused (400), a body over maxBody is 413.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("data after the request object")
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeStatus(w, http.StatusRequestEntityTooLarge, typedErr(sync.CodeInvalidArgument, "the body is over %d bytes", maxBody))
		return false
	case err != nil:
		writeErr(w, typedErr(sync.CodeInvalidArgument, "the body is not a valid request: %v", err))
		return false
	}
	return true
}

func reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// writeErr answers err in the JSON form of *sync.Error
// ({"code","message","rule","retryable",…}): the code and retryability
// are the error's own (ERR-1), the status follows them.
func writeErr(w http.ResponseWriter, err error) {
	code := sync.CodeOf(err)
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || code.Retryable():
		status = http.StatusServiceUnavailable
	case code == sync.CodeIdempotencyKeyReused || code == sync.CodeClientActorMismatch:
		status = http.StatusConflict
	case code == sync.CodePushTooLarge:
		status = http.StatusRequestEntityTooLarge
	case code != "" && code != sync.CodeInternal:
		status = http.StatusBadRequest
	}
	writeStatus(w, status, err)
}

// writeStatus answers err with status; an error that is not an
// *sync.Error (a context's) is answered as one of code unavailable.
func writeStatus(w http.ResponseWriter, status int, err error) {
	var e *sync.Error
	if !errors.As(err, &e) {
		e = &sync.Error{Code: sync.CodeUnavailable, Message: err.Error(), OpIndex: -1}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(e)
}

// typedErr is an error of the given code, as the store's own are.
func typedErr(code sync.Code, format string, args ...any) error {
	return &sync.Error{Code: code, OpIndex: -1, Message: fmt.Sprintf(format, args...)}
}
