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

// pushBody is a push request on the wire. Values are plain JSON, typed
// by the schema's columns (valuesFromJSON).
type pushBody struct {
	ClientID       string `json:"clientId"`
	ClientCommitID string `json:"clientCommitId"`
	Ops            []struct {
		Table       string         `json:"table"`
		RowID       string         `json:"rowId"`
		Op          sync.Op        `json:"op"`
		Values      map[string]any `json:"values"`
		BaseVersion *int64         `json:"baseVersion"`
	} `json:"ops"`
}

// pullBody is a pull request on the wire.
type pullBody struct {
	ClientID      string `json:"clientId"`
	Subscriptions []struct {
		ID             string           `json:"id"`
		Table          string           `json:"table"`
		Scopes         sync.ScopeFilter `json:"scopes"`
		Cursor         int64            `json:"cursor"`
		BootstrapToken string           `json:"bootstrapToken"`
		LimitChanges   int              `json:"limitChanges"`
		LimitRows      int              `json:"limitRows"`
	} `json:"subscriptions"`
}

// newHandler serves push and pull for store, whose schema is schema.
func newHandler(store *sync.Store) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/{partition}/push", func(w http.ResponseWriter, r *http.Request) {
		var in pushBody
		if !decode(w, r, &in) {
			return
		}
		req := sync.PushRequest{ClientID: in.ClientID, ClientCommitID: in.ClientCommitID, ActorID: r.Header.Get("X-Actor")}
		for _, op := range in.Ops {
			vals, err := valuesFromJSON(op.Table, op.Values)
			if err != nil {
				writeErr(w, err)
				return
			}
			req.Ops = append(req.Ops, sync.PushOp{Table: op.Table, RowID: op.RowID, Op: op.Op, Values: vals, BaseVersion: op.BaseVersion})
		}
		res, err := store.Push(r.Context(), r.PathValue("partition"), req)
		reply(w, res, err)
	})
	mux.HandleFunc("POST /v1/{partition}/pull", func(w http.ResponseWriter, r *http.Request) {
		var in pullBody
		if !decode(w, r, &in) {
			return
		}
		req := sync.PullRequest{ClientID: in.ClientID, ActorID: r.Header.Get("X-Actor")}
		for _, s := range in.Subscriptions {
			// A real host checks here that the actor may read s.Scopes.
			req.Subscriptions = append(req.Subscriptions, sync.PullSubscription{ID: s.ID, Table: s.Table, Scopes: s.Scopes,
				Cursor: s.Cursor, BootstrapToken: s.BootstrapToken, LimitChanges: s.LimitChanges, LimitRows: s.LimitRows})
		}
		res, err := store.Pull(r.Context(), r.PathValue("partition"), req)
		reply(w, res, err)
	})
	return mux
}

// valuesFromJSON types a row's JSON values by its table's columns: JSON
// numbers become int64 for integer columns (exact: the body is decoded
// with UseNumber), float64 for float columns.
func valuesFromJSON(table string, in map[string]any) (sync.Values, error) {
	if in == nil {
		return nil, nil
	}
	var cols []sync.Column
	for _, t := range schema.Tables {
		if t.Name == table {
			cols = t.Columns
		}
	}
	out := make(sync.Values, len(in))
	for k, v := range in {
		out[k] = v
		n, ok := v.(json.Number)
		if !ok {
			continue
		}
		var err error
		for _, c := range cols {
			switch {
			case c.Name != k:
			case c.Type == sync.TypeInteger:
				out[k], err = n.Int64()
			default:
				out[k], err = n.Float64()
			}
		}
		if err != nil {
			return nil, typedErr(sync.CodeInvalidValue, "column %q: not a number of its type", k)
		}
	}
	return out, nil
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

// writeErr answers err as {"code","message","retryable"}: the code and
// retryability are the error's own (ERR-1), the status follows them.
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

// writeStatus answers err with status as {"code","message","retryable"};
// the message is the error's own text without its code.
func writeStatus(w http.ResponseWriter, status int, err error) {
	code, msg := sync.CodeOf(err), fmt.Sprint(err)
	var e *sync.Error
	if errors.As(err, &e) && e.Message != "" {
		msg = e.Message
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "message": msg, "retryable": code.Retryable()})
}

// typedErr is an error of the given code, as the store's own are.
func typedErr(code sync.Code, format string, args ...any) error {
	return &sync.Error{Code: code, OpIndex: -1, Message: fmt.Sprintf(format, args...)}
}
