// Package d1test is an in-process double of Cloudflare D1's HTTP query
// API over real SQLite (modernc.org/sqlite), for tests of code that talks
// to D1 over HTTP (drivers/d1http runs all its tests on it).
//
// It serves, under /client/v4:
//
//	POST   /accounts/{account}/d1/database                    create a database: {"name"} → result {uuid, name}
//	DELETE /accounts/{account}/d1/database/{database}         delete it
//	POST   /accounts/{account}/d1/database/{database}/query   rows as objects
//	POST   /accounts/{account}/d1/database/{database}/raw     rows as arrays, with column names
//	GET    /accounts/{account}/d1/database/{database}/time_travel/bookmark  a bookmark of now (timetravel.go)
//	POST   /accounts/{account}/d1/database/{database}/time_travel/restore   back to a bookmark
//
// with D1's shapes: a body {sql, params} or {batch: [{sql, params}, …]}
// (a batch is applied all-or-nothing); the answer {success, errors
// [{code, message}], messages, result [{results, success, meta {changes,
// last_row_id, duration, rows_read, rows_written, changed_db, size_after}}]};
// bearer-token auth (401, code 10000). Refused like D1 (HTTP 400, code
// 7500): BEGIN, COMMIT, END, ROLLBACK, SAVEPOINT, RELEASE; more than 100
// bound parameters; a statement over 100,000 bytes; "params": null; a
// table, index, view or trigger created with a name starting "_cf_"; a
// string, BLOB or row over 2,000,000 bytes (MaxValueBytes); a table of
// more than 100 columns; a LIKE or GLOB pattern over 50 bytes; a batch
// whose results pass 50 MB (MaxResultBytes); a body over 100 MB is
// answered 413 (MaxBodyBytes). Values come
// back as D1 returns them: BLOBs as arrays of byte numbers, integers and
// reals as JSON numbers as JavaScript prints them (so integers beyond 2^53
// come back rounded, and -0.0 as 0). Parameters: JSON strings bind as
// TEXT, numbers as JavaScript reads them (an integral value as INTEGER,
// others REAL), booleans as 1/0, arrays of byte numbers as BLOB.
//
// Every database runs its statements one at a time (one connection), as a
// D1 database does. Faults (429 with Retry-After, 500 with an HTML body, a
// timeout, a connection reset before or after a batch is applied) are
// injected with Server.Inject.
package d1test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	gosync "sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite" // the engine behind every database
	sqlite3 "modernc.org/sqlite/lib"
)

// Handler is the D1 double as an http.Handler. Create it with NewHandler;
// it is safe for concurrent use. Close releases its databases.
type Handler struct {
	// RequestLimit bounds the engine time of one request, as D1 does (0:
	// DefaultRequestLimit, 30 s): a statement still running then (a
	// runaway recursive query) is interrupted, its batch applies nothing,
	// and the answer is an HTTP 400 SQL error (code 7500). Set it before
	// the first request.
	RequestLimit time.Duration

	token string

	mu  gosync.Mutex
	dbs map[string]*database // account + "/" + database id → database

	faults   faultQueue
	requests atomic.Int64
	writes   atomic.Int64
	reads    atomic.Int64
}

// database is one D1 database: a private in-memory SQLite database on one
// connection, so statements run one at a time.
type database struct {
	name  string
	db    *sql.DB
	mu    gosync.Mutex
	marks bookmarks // Time Travel (timetravel.go); under mu
}

// NewHandler returns a double that accepts "Authorization: Bearer token"
// (token "" accepts any request).
func NewHandler(token string) *Handler {
	return &Handler{token: token, dbs: map[string]*database{}}
}

// Server is a Handler served by an httptest.Server on 127.0.0.1.
type Server struct {
	*Handler
	// HTTP is the underlying test server; URL is its base URL.
	HTTP *httptest.Server
	URL  string
}

// NewServer starts a double on a free 127.0.0.1 port. Close stops it.
func NewServer(token string) *Server {
	h := NewHandler(token)
	s := httptest.NewServer(h)
	return &Server{Handler: h, HTTP: s, URL: s.URL}
}

// Close stops the server and releases every database.
func (s *Server) Close() {
	s.HTTP.CloseClientConnections()
	s.HTTP.Close()
	s.Handler.Close()
}

// Close releases every database of the handler.
func (h *Handler) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, d := range h.dbs {
		_ = d.db.Close()
		delete(h.dbs, k)
	}
}

// CreateDatabase creates an empty database of account and returns its id.
func (h *Handler) CreateDatabase(account, name string) (string, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	id = id[:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:]
	db, err := sql.Open("sqlite", "file:"+id+"?mode=memory&cache=private&_pragma=foreign_keys(1)")
	if err != nil {
		return "", err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := limitLength(db); err != nil {
		_ = db.Close()
		return "", err
	}
	h.mu.Lock()
	h.dbs[account+"/"+id] = &database{name: name, db: db}
	h.mu.Unlock()
	return id, nil
}

// DeleteDatabase removes a database; it reports whether it existed.
func (h *Handler) DeleteDatabase(account, id string) bool {
	h.mu.Lock()
	d, ok := h.dbs[account+"/"+id]
	delete(h.dbs, account+"/"+id)
	h.mu.Unlock()
	if ok {
		_ = d.db.Close()
	}
	return ok
}

// Stats counts the query requests the double answered (faulted ones
// included): all of them, those whose statements write, those that only read.
type Stats struct{ Requests, Writes, Reads int64 }

// Stats returns the request counters.
func (h *Handler) Stats() Stats {
	return Stats{Requests: h.requests.Load(), Writes: h.writes.Load(), Reads: h.reads.Load()}
}

// ServeHTTP routes a request (see the package doc).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.token != "" && r.Header.Get("Authorization") != "Bearer "+h.token {
		writeJSON(w, http.StatusUnauthorized, failure(10000, "Authentication error"))
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// client v4 accounts {account} d1 database [{id} [query|raw]]
	if len(parts) < 6 || parts[0] != "client" || parts[1] != "v4" || parts[2] != "accounts" || parts[4] != "d1" || parts[5] != "database" {
		writeJSON(w, http.StatusNotFound, failure(7000, "No route for that URI"))
		return
	}
	account := parts[3]
	switch {
	case len(parts) == 6 && r.Method == http.MethodPost:
		var body struct {
			Name string `json:"name"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Name == "" {
			writeJSON(w, http.StatusBadRequest, failure(7400, "a database name is required"))
			return
		}
		id, err := h.CreateDatabase(account, body.Name)
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, failure(7500, "create database: "+err.Error()))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"success": true, "errors": []any{}, "messages": []any{},
			"result": map[string]any{"uuid": id, "name": body.Name}})
	case len(parts) == 7 && r.Method == http.MethodDelete:
		if !h.DeleteDatabase(account, parts[6]) {
			writeJSON(w, http.StatusNotFound, failure(7404, "The database could not be found"))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"success": true, "errors": []any{}, "messages": []any{}, "result": nil})
	case len(parts) == 8 && r.Method == http.MethodPost && (parts[7] == "query" || parts[7] == "raw"):
		h.mu.Lock()
		d, ok := h.dbs[account+"/"+parts[6]]
		h.mu.Unlock()
		if !ok {
			writeJSON(w, http.StatusNotFound, failure(7404, "The database could not be found"))
			return
		}
		h.serveQuery(w, r, d, parts[7] == "raw")
	case len(parts) == 9 && parts[7] == "time_travel":
		h.mu.Lock()
		d, ok := h.dbs[account+"/"+parts[6]]
		h.mu.Unlock()
		if !ok {
			writeJSON(w, http.StatusNotFound, failure(7404, "The database could not be found"))
			return
		}
		h.serveTimeTravel(w, r, d, parts[8])
	default:
		writeJSON(w, http.StatusNotFound, failure(7000, "No route for that URI"))
	}
}

// apiError is one entry of "errors".
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func failure(code int, msg string) map[string]any {
	return map[string]any{"success": false, "errors": []apiError{{Code: code, Message: msg}}, "messages": []any{}, "result": []any{}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(fmt.Sprintf(`{"success":false,"errors":[{"code":7500,"message":%q}]}`, err.Error()))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// MaxValueBytes is D1's limit on one string, BLOB or table row: a longer
// one, stored or built by a statement (printf, replace, ||), fails it
// with SQLITE_TOOBIG. The double sets it as SQLITE_LIMIT_LENGTH on its
// one connection.
const MaxValueBytes = 2_000_000

// MaxColumns is D1's limit on the columns of one table (and of a
// result, an index, a SELECT list): more fail with "too many columns".
const MaxColumns = 100

// MaxLikePatternBytes is D1's limit on a LIKE or GLOB pattern: a longer
// one fails with "LIKE or GLOB pattern too complex".
const MaxLikePatternBytes = 50

// limitLength opens db's one connection and sets MaxValueBytes,
// MaxColumns and MaxLikePatternBytes on it.
func limitLength(db *sql.DB) error {
	conn, err := db.Conn(context.Background())
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, l := range [][2]int{{sqlite3.SQLITE_LIMIT_LENGTH, MaxValueBytes}, {sqlite3.SQLITE_LIMIT_COLUMN, MaxColumns},
		{sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, MaxLikePatternBytes}} {
		if _, err := sqlite.Limit(conn, l[0], l[1]); err != nil {
			return err
		}
	}
	return nil
}
