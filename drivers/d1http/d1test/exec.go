package d1test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/syncstore/syncstore/internal/sqliteengine"
)

// D1's limits that the double enforces.
const (
	// MaxParams is the most bound parameters one statement may have.
	MaxParams = 100
	// MaxStatementBytes is the longest statement text accepted (100,000
	// bytes; 100,001 is refused, checked on the miniflare lane).
	MaxStatementBytes = 100_000
	// MaxBodyBytes bounds a request body: a longer one is answered 413
	// (Cloudflare's limit on a request body on the Free and Pro plans,
	// 100 MB).
	MaxBodyBytes = 100_000_000
	// MaxResultBytes bounds the JSON answer of one request (D1's maximum
	// query result size, 50 MB): a batch whose results pass it applies
	// nothing and is answered 400 (code 7500).
	MaxResultBytes = 50_000_000
)

// reservedPrefix starts the names of D1's own tables: creating a table,
// index, view or trigger so named is refused (SQLITE_AUTH), as workerd's
// authorizer does (case-sensitive: "_CF_x" is accepted; checked on the
// miniflare lane).
const reservedPrefix = "_cf_"

// statement is one {sql, params} of a request.
type statement struct {
	SQL    string          `json:"sql"`
	Params json.RawMessage `json:"params"`
}

type request struct {
	statement
	Batch []statement `json:"batch"`
}

type meta struct {
	ServedBy    string  `json:"served_by"`
	Duration    float64 `json:"duration"`
	Changes     int64   `json:"changes"`
	LastRowID   int64   `json:"last_row_id"`
	ChangedDB   bool    `json:"changed_db"`
	SizeAfter   int64   `json:"size_after"`
	RowsRead    int64   `json:"rows_read"`
	RowsWritten int64   `json:"rows_written"`
}

type result struct {
	Results any  `json:"results"`
	Success bool `json:"success"`
	Meta    meta `json:"meta"`
}

// refused reports a statement D1 refuses before running it, as its message.
func refused(st statement) string {
	if len(st.SQL) > MaxStatementBytes {
		return "D1_ERROR: statement too long: SQLITE_TOOBIG"
	}
	if createsReserved(st.SQL) {
		return "D1_ERROR: not authorized: SQLITE_AUTH"
	}
	if strings.Contains(strings.ToLower(st.SQL), "sqlite_version") {
		// D1's authorizer refuses the function (as workerd's does).
		return "D1_ERROR: not authorized to use function: sqlite_version: SQLITE_ERROR"
	}
	switch firstWord(st.SQL) {
	case "BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE":
		return "D1_ERROR: To execute a transaction, please use the state.storage.transaction() or " +
			"state.storage.transactionSync() APIs instead of the SQL BEGIN TRANSACTION or SAVEPOINT statements. " +
			"The JavaScript API is safer because it will automatically roll back on exceptions, and because it " +
			"interacts correctly with Durable Objects' automatic atomic write coalescing.: SQLITE_AUTH"
	case "":
		return "D1_ERROR: No SQL statements detected.: SQLITE_ERROR"
	}
	if string(bytes.TrimSpace(st.Params)) == "null" {
		return "D1_TYPE_ERROR: params must be an array, not null"
	}
	return ""
}

// createsReserved reports whether q is a CREATE of a table, index, view
// or trigger whose name starts with reservedPrefix (quoted or not,
// schema-qualified or not).
func createsReserved(q string) bool {
	if firstWord(q) != "CREATE" {
		return false
	}
	words := strings.Fields(strings.TrimLeft(q, " \t\r\n;"))
	i := 1
	for i < len(words) {
		switch strings.ToUpper(words[i]) {
		case "TEMP", "TEMPORARY", "UNIQUE", "VIRTUAL", "TABLE", "INDEX", "VIEW", "TRIGGER", "IF", "NOT", "EXISTS":
			i++
			continue
		}
		break
	}
	if i >= len(words) {
		return false
	}
	name := words[i]
	if j := strings.IndexAny(name, "(;"); j >= 0 {
		name = name[:j]
	}
	if j := strings.LastIndexByte(name, '.'); j >= 0 {
		name = name[j+1:]
	}
	name = strings.Trim(name, "\"`[]")
	return strings.HasPrefix(name, reservedPrefix)
}

// firstWord returns the first keyword of q, upper-cased, after blanks and comments.
func firstWord(q string) string {
	for {
		q = strings.TrimLeft(q, " \t\r\n;")
		switch {
		case strings.HasPrefix(q, "--"):
			i := strings.IndexByte(q, '\n')
			if i < 0 {
				return ""
			}
			q = q[i+1:]
		case strings.HasPrefix(q, "/*"):
			i := strings.Index(q, "*/")
			if i < 0 {
				return ""
			}
			q = q[i+2:]
		default:
			end := strings.IndexFunc(q, func(r rune) bool {
				return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
			})
			if end < 0 {
				end = len(q)
			}
			return strings.ToUpper(q[:end])
		}
	}
}

// writes reports whether st may write.
func writes(st statement) bool {
	switch firstWord(st.SQL) {
	case "SELECT", "VALUES", "EXPLAIN":
		return false
	}
	return true
}

// bindArgs converts a statement's JSON params into SQLite arguments as D1
// does (checked on the miniflare lane, workerd's D1): strings → TEXT;
// every number → REAL, as JavaScript reads it (typeof(?) is 'real' even
// for 7; an INTEGER column's affinity stores it back as an integer);
// null → NULL; arrays of byte numbers → BLOB. Booleans and objects are
// refused.
func bindArgs(raw json.RawMessage) ([]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var params []any
	if err := dec.Decode(&params); err != nil {
		return nil, fmt.Errorf("D1_TYPE_ERROR: params must be an array")
	}
	if len(params) > MaxParams {
		return nil, fmt.Errorf("D1_ERROR: too many SQL variables at offset 0: SQLITE_ERROR")
	}
	args := make([]any, len(params))
	for i, p := range params {
		switch v := p.(type) {
		case nil, string:
			args[i] = v
		case bool:
			return nil, fmt.Errorf("D1_TYPE_ERROR: Type 'boolean' not supported for value at parameter %d", i+1)
		case json.Number:
			f, err := strconv.ParseFloat(string(v), 64) // what JavaScript holds
			if err != nil || math.IsInf(f, 0) {
				return nil, fmt.Errorf("D1_TYPE_ERROR: parameter %d is not a finite number", i+1)
			}
			args[i] = f
		case []any:
			b := make([]byte, len(v))
			for j, e := range v {
				n, ok := e.(json.Number)
				x, err := strconv.Atoi(string(n))
				if !ok || err != nil || x < 0 || x > 255 {
					return nil, fmt.Errorf("D1_TYPE_ERROR: parameter %d is not an array of bytes", i+1)
				}
				b[j] = byte(x)
			}
			args[i] = b
		default:
			return nil, fmt.Errorf("D1_TYPE_ERROR: Type 'object' not supported for value at parameter %d", i+1)
		}
	}
	return args, nil
}

// jsValue encodes a SQLite value as D1 returns it in JSON.
func jsValue(v any) any {
	switch x := v.(type) {
	case int64:
		return json.Number(jsNumber(float64(x)))
	case float64:
		return json.Number(jsNumber(x))
	case []byte:
		out := make([]int, len(x))
		for i, c := range x {
			out[i] = int(c)
		}
		return out
	case bool:
		if x {
			return json.Number("1")
		}
		return json.Number("0")
	case time.Time:
		return x.Format(time.RFC3339Nano)
	}
	return v
}

// jsNumber prints f as JavaScript's JSON.stringify does (encoding/json
// follows ES6 for doubles); -0 prints as 0.
func jsNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	b, _ := json.Marshal(f)
	return string(b)
}

// serveQuery answers /query (objects) or /raw (arrays).
// DefaultRequestLimit is D1's limit on one request.
const DefaultRequestLimit = 30 * time.Second

func (h *Handler) serveQuery(w http.ResponseWriter, r *http.Request, d *database, raw bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, failure(7400, "cannot read the request body"))
		return
	}
	if len(body) > MaxBodyBytes {
		writeJSON(w, http.StatusRequestEntityTooLarge, failure(7400, "request body too large"))
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		writeJSON(w, http.StatusBadRequest, failure(7400, "malformed JSON body"))
		return
	}
	stmts := req.Batch
	if stmts == nil {
		stmts = []statement{req.statement}
	}
	write := false
	for _, st := range stmts {
		write = write || writes(st)
	}
	h.requests.Add(1)
	if write {
		h.writes.Add(1)
	} else {
		h.reads.Add(1)
	}
	f, down := h.faults.take(write)
	if down {
		reset(w)
		return
	}
	if before(w, r, f) {
		return
	}
	for _, st := range stmts {
		if msg := refused(st); msg != "" {
			writeJSON(w, http.StatusBadRequest, failure(7500, msg))
			return
		}
	}
	// A batch that reached the engine runs to its end, whatever the client
	// does — within D1's limit per request (RequestLimit): past it the
	// engine is interrupted and the batch applies nothing.
	limit := h.RequestLimit
	if limit <= 0 {
		limit = DefaultRequestLimit
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), limit)
	results, err := d.run(ctx, stmts, raw)
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("D1_ERROR: request exceeded its %s time limit", limit)
	}
	cancel()
	if after(w, r, f) {
		return
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, failure(7500, err.Error()))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "errors": []any{}, "messages": []any{}, "result": results})
}

// run applies stmts all-or-nothing on the database's one connection.
func (d *database) run(ctx context.Context, stmts []statement, raw bool) ([]result, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("D1_ERROR: %v", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return nil, fmt.Errorf("D1_ERROR: %v", err)
	}
	// ROLLBACK must run even when ctx ended (the request limit): the
	// database has one connection, and an open transaction would refuse
	// every later request.
	rollback := func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK") }
	out := make([]result, 0, len(stmts))
	for _, st := range stmts {
		res, err := runOne(ctx, conn, st, raw)
		if err != nil {
			rollback()
			return nil, err
		}
		out = append(out, res)
	}
	if b, err := json.Marshal(out); err == nil && len(b) > MaxResultBytes {
		rollback()
		return nil, fmt.Errorf("D1_ERROR: the query result exceeds the %d-byte limit: SQLITE_TOOBIG", MaxResultBytes)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		rollback()
		return nil, fmt.Errorf("D1_ERROR: %v", err)
	}
	return out, nil
}

func runOne(ctx context.Context, conn *sql.Conn, st statement, raw bool) (result, error) {
	args, err := bindArgs(st.Params)
	if err != nil {
		return result{}, err
	}
	var before int64
	if err := conn.QueryRowContext(ctx, "SELECT total_changes()").Scan(&before); err != nil {
		return result{}, fmt.Errorf("D1_ERROR: %v", err)
	}
	// D1 stops a statement whose plan outgrows the isolate's memory; the
	// double has no such limit, and SQLite's query flattener, copying
	// expressions while it prepares (out of reach of ctx), can grow the
	// test process by gigabytes for nested derived tables. So a statement
	// with subqueries runs without it here (sqliteengine.SetFlattener).
	if sqliteengine.NeedsNoFlattening(st.SQL) {
		if err := sqliteengine.SetFlattener(conn, false); err != nil {
			return result{}, fmt.Errorf("D1_ERROR: %v", err)
		}
		defer func() { _ = sqliteengine.SetFlattener(conn, true) }()
	}
	start := time.Now()
	rows, err := conn.QueryContext(ctx, st.SQL, args...)
	if err != nil {
		return result{}, sqliteError(err)
	}
	cols, err := rows.Columns()
	if err != nil {
		rows.Close()
		return result{}, sqliteError(err)
	}
	var arrays [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		dest := make([]any, len(cols))
		for i := range vals {
			dest[i] = &vals[i]
		}
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return result{}, sqliteError(err)
		}
		for i, v := range vals {
			vals[i] = jsValue(v)
		}
		arrays = append(arrays, vals)
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return result{}, sqliteError(err)
	}
	rows.Close()
	var after, lastID int64
	if err := conn.QueryRowContext(ctx, "SELECT total_changes(), last_insert_rowid()").Scan(&after, &lastID); err != nil {
		return result{}, fmt.Errorf("D1_ERROR: %v", err)
	}
	m := meta{ServedBy: "d1test", Duration: float64(time.Since(start).Microseconds()) / 1000, Changes: after - before,
		LastRowID: lastID, ChangedDB: after > before, RowsRead: int64(len(arrays)), RowsWritten: after - before}
	res := result{Success: true, Meta: m}
	if raw {
		if arrays == nil {
			arrays = [][]any{}
		}
		res.Results = map[string]any{"columns": cols, "rows": arrays}
	} else {
		objs := make([]map[string]any, len(arrays))
		for i, a := range arrays {
			o := make(map[string]any, len(cols))
			for j, c := range cols {
				o[c] = a[j]
			}
			objs[i] = o
		}
		res.Results = objs
	}
	return res, nil
}

// sqliteError words an engine error as D1 does: "D1_ERROR: <message>: SQLITE_…".
func sqliteError(err error) error {
	msg := err.Error()
	// modernc: "<text> (<code>)"; keep the text.
	if i := strings.LastIndex(msg, " ("); i > 0 && strings.HasSuffix(msg, ")") {
		msg = msg[:i]
	}
	kind := "SQLITE_ERROR"
	switch {
	case strings.Contains(msg, "constraint failed"):
		kind = "SQLITE_CONSTRAINT"
	case strings.Contains(msg, "string or blob too big"):
		kind = "SQLITE_TOOBIG" // SQLite's code for MaxValueBytes, as D1 names codes
	}
	return fmt.Errorf("D1_ERROR: %s: %s", msg, kind)
}
